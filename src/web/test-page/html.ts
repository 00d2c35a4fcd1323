/**
 * The HTML page of a test (`html_url` of every test, docs/contract.md §3) and the pages around it
 * (sign-in form, errors). Pure functions from view data to an HTML string: no JavaScript, inline
 * CSS, and every interpolated value escaped by the `markup` template unless it is itself `SafeHtml`.
 */
import { inferTestFile } from "../../testhealth/file-inference.js";
import { MINUTE_MS } from "../../lib/time.js";

/** Markup that is already safe: produced by `markup`, never by concatenating raw input. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch] ?? ch);
}

type Interpolation =
  SafeHtml | string | number | boolean | null | undefined | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false || value === true) return "";
  if (value instanceof SafeHtml) return value.value;
  if (typeof value === "number") return escapeHtml(String(value));
  if (typeof value === "string") return escapeHtml(value);
  return value.map(render).join("");
}

/**
 * A template whose every interpolation is escaped (arrays are joined; booleans render nothing).
 * Named `markup`, not `html`, so that formatters leave the markup of templates exactly as written.
 */
export function markup(strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? "");
  });
  return new SafeHtml(out);
}

// ---- view data (the wire shapes of get-test-details and list-test-runs) ----------------------

/** The test as get-test-details presents it (the fields the page shows). */
export interface PageTest {
  id: string;
  repository: { html_url: string };
  html_url: string;
  name: string;
  variant: string;
  status: { value: string; reason: string; timestamp: string };
  codeowners: string[];
  pull_requests_impacted_last_7d: number;
  quarantined: boolean;
  file_path: string;
  parent: string;
  classname: string;
  ticket?: { html_url: string };
  most_common_failures: { summary: string; occurrence_count: number; last_occurrence: string }[];
  failure_rate_last_7d: number;
  failure_rate_last_24h: number;
}

export interface PageQuarantine {
  setting: string | null;
  override: string;
  override_actor: string | null;
  override_reason: string | null;
  override_at: string | null;
}

export interface PageHistoryEntry {
  status: string;
  reason: string;
  at: string;
  kind: string;
  actor: string | null;
}

export interface PageMonitor {
  id: string;
  classification: string | null;
  active: boolean;
  reason: string;
  changed_at: string;
}

export interface PageRun {
  at: string;
  status: string;
  attempt: string;
  commit_sha: string;
  branch: string;
  pr_number: number | null;
  duration_ms: number | null;
  failure_summary: string | null;
  failure_text: string | null;
  infrastructure_failure: boolean;
}

export interface TestPageView {
  orgSlug: string;
  /** `owner/name` */
  repositoryName: string;
  test: PageTest;
  quarantine: PageQuarantine;
  history: readonly PageHistoryEntry[];
  monitors: readonly PageMonitor[];
  /** The latest runs, newest first. */
  runs: readonly PageRun[];
  totalRuns: number;
  /** Epoch ms, for "3 h ago". */
  now: number;
}

// ---- formatting -----------------------------------------------------------------------------

export function formatPercent(fraction: number): string {
  const percent = Math.round(fraction * 1000) / 10;
  return `${Number.isInteger(percent) ? percent.toFixed(0) : percent.toFixed(1)}%`;
}

export function formatAge(thenIso: string, now: number): string {
  const ms = now - Date.parse(thenIso);
  if (!Number.isFinite(ms)) return "";
  if (ms < MINUTE_MS) return "just now";
  const minutes = Math.floor(ms / MINUTE_MS);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} days ago`;
}

function formatDuration(ms: number | null): string {
  if (ms === null) return "";
  if (ms < 1000) return `${ms} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

/** A link only for http(s) URLs; anything else is shown as text. */
function link(url: string, text: string): SafeHtml {
  return /^https?:\/\//i.test(url)
    ? markup`<a href="${url}" rel="noreferrer noopener">${text}</a>`
    : markup`${text}`;
}

function time(iso: string, now: number): SafeHtml {
  const shown = iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
  return markup`<time datetime="${iso}" title="${iso}">${shown}</time> <span class="muted">(${formatAge(iso, now)})</span>`;
}

const BADGES = new Set([
  "healthy",
  "flaky",
  "broken",
  "quarantined",
  "passed",
  "failed",
  "skipped",
]);

function badge(kind: string, text: string): SafeHtml {
  return markup`<span class="badge ${BADGES.has(kind) ? kind : "other"}">${text}</span>`;
}

const none = (text: string) => markup`<span class="muted">${text}</span>`;

const STYLE = `
:root{color-scheme:light dark;--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#fff;--soft:#f6f8fa}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--bg:#0d1117;--soft:#151b23}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
header,main,footer{max-width:1100px;margin:0 auto;padding:12px 20px}
header{border-bottom:1px solid var(--line);color:var(--muted)}
h1{font-size:22px;margin:8px 0;word-break:break-word}
h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
a{color:#0969da}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dt{color:var(--muted)}dd{margin:0;word-break:break-word}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--soft);font-weight:600}
td.num,th.num{text-align:right}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
pre{white-space:pre-wrap;word-break:break-word;background:var(--soft);padding:8px;margin:4px 0;max-height:320px;overflow:auto}
.muted{color:var(--muted)}
.badge{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;font-weight:600;border:1px solid var(--line)}
.healthy,.passed{background:#dafbe1;color:#116329}.flaky{background:#fff8c5;color:#7d4e00}
.broken,.failed{background:#ffebe9;color:#a40e26}.quarantined{background:#ddf4ff;color:#0550ae}
.skipped,.other{background:var(--soft);color:var(--muted)}
.figures{display:flex;gap:24px;flex-wrap:wrap}.figures div{min-width:140px}
.figures strong{display:block;font-size:20px}
form.login{max-width:420px;display:grid;gap:8px;margin-top:16px}
form.login input{padding:6px 8px;font:inherit;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
form.login button{padding:6px 12px;font:inherit;border-radius:6px;border:1px solid var(--line);background:var(--soft);color:var(--fg);cursor:pointer}
.error{color:#a40e26}
`;

function layout(title: string, header: SafeHtml, body: SafeHtml): string {
  return markup`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<style>${new SafeHtml(STYLE)}</style>
</head>
<body>
<header>${header}</header>
<main>
${body}
</main>
<footer class="muted">Mainline · test health</footer>
</body>
</html>
`.value;
}

// ---- the test page ----------------------------------------------------------------------------

function overview(view: TestPageView): SafeHtml {
  const { test } = view;
  const inferred = test.file_path ? undefined : inferTestFile(test.classname, test.name);
  const file = test.file_path
    ? markup`<code>${test.file_path}</code>`
    : inferred
      ? markup`<code>${inferred}</code> ${none("(from the class name; the report names no file)")}`
      : none("not in the report");
  const owners = test.codeowners.length > 0 ? test.codeowners.join(", ") : none("unknown");
  const ticket = test.ticket
    ? link(test.ticket.html_url, test.ticket.html_url)
    : none("none linked");
  return markup`<dl>
  <dt>Suite</dt><dd>${test.parent || none("none")}</dd>
  <dt>Class</dt><dd>${test.classname || none("none")}</dd>
  <dt>File</dt><dd>${file}</dd>
  <dt>Variant</dt><dd>${test.variant || none("none")}</dd>
  <dt>Code owners</dt><dd>${owners}</dd>
  <dt>Ticket</dt><dd>${ticket}</dd>
  <dt>Test id</dt><dd><code>${test.id}</code></dd>
</dl>`;
}

function statusSection(view: TestPageView): SafeHtml {
  const { status } = view.test;
  return markup`<h2>Status</h2>
<dl>
  <dt>Status</dt><dd>${badge(status.value, status.value)}</dd>
  <dt>Reason</dt><dd>${status.reason || none("none")}</dd>
  <dt>Since</dt><dd>${time(status.timestamp, view.now)}</dd>
</dl>`;
}

const SETTING_WORDS: Record<string, string> = {
  ALWAYS_QUARANTINE: "by its override (always quarantine)",
  AUTO_QUARANTINE: "automatically, as a flaky test",
};

function quarantineSection(view: TestPageView): SafeHtml {
  const q = view.quarantine;
  const state = q.setting
    ? markup`${badge("quarantined", "quarantined")} ${SETTING_WORDS[q.setting] ?? q.setting}`
    : markup`not quarantined`;
  const override =
    q.override === "UNSPECIFIED"
      ? markup`none <span class="muted">(the repository's rule applies)</span>`
      : markup`<code>${q.override}</code>`;
  const reason = q.override_reason ? markup` — ${q.override_reason}` : "";
  const who =
    q.override_at !== null
      ? markup`
  <dt>Last set by</dt><dd>${q.override_actor ?? "unknown"}, ${time(q.override_at, view.now)}${reason}</dd>`
      : "";
  return markup`<h2>Quarantine</h2>
<dl>
  <dt>State</dt><dd>${state}</dd>
  <dt>Override</dt><dd>${override}</dd>${who}
</dl>`;
}

function figuresSection(view: TestPageView): SafeHtml {
  const { test } = view;
  return markup`<h2>Last 7 days</h2>
<div class="figures">
  <div><strong>${formatPercent(test.failure_rate_last_24h)}</strong><span class="muted">failure rate, 24 h</span></div>
  <div><strong>${formatPercent(test.failure_rate_last_7d)}</strong><span class="muted">failure rate, 7 days</span></div>
  <div><strong>${test.pull_requests_impacted_last_7d}</strong><span class="muted">PRs impacted, 7 days</span></div>
</div>`;
}

function failuresSection(view: TestPageView): SafeHtml {
  const failures = view.test.most_common_failures;
  if (failures.length === 0) {
    return markup`<h2>Most common failures</h2><p class="muted">No failures in the last 7 days.</p>`;
  }
  const rows = failures.map(
    (f) =>
      markup`<tr><td><code>${f.summary}</code></td><td class="num">${f.occurrence_count}</td><td>${time(f.last_occurrence, view.now)}</td></tr>
`,
  );
  return markup`<h2>Most common failures</h2>
<table>
<thead><tr><th>Failure</th><th class="num">Count</th><th>Last</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`;
}

function monitorsSection(view: TestPageView): SafeHtml {
  if (view.monitors.length === 0) {
    return markup`<h2>Monitors</h2><p class="muted">No monitor has looked at this test yet.</p>`;
  }
  const rows = view.monitors.map((m) => {
    const flags = m.classification ?? none("no longer configured");
    const state = m.active ? badge(m.classification ?? "other", "active") : "inactive";
    // An inactive monitor's reason is the evidence of when it last changed, not of today.
    const reason = m.active
      ? markup`${m.reason}`
      : markup`<span class="muted">Past evidence, not current:</span> <s class="muted">${m.reason}</s>`;
    return markup`<tr><td><code>${m.id}</code></td><td>${flags}</td><td>${state}</td><td>${reason}</td><td>${time(m.changed_at, view.now)}</td></tr>
`;
  });
  return markup`<h2>Monitors</h2>
<table>
<thead><tr><th>Monitor</th><th>Flags</th><th>State</th><th>Reason</th><th>Since</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`;
}

function runRow(run: PageRun, now: number): SafeHtml {
  const attempt = run.attempt !== "final" ? markup` ${none(`(${run.attempt} attempt)`)}` : "";
  const excluded = run.infrastructure_failure
    ? markup` <span class="muted" title="excluded by infrastructure-failure protection">(excluded)</span>`
    : "";
  const failure = run.failure_text
    ? markup`<details><summary>${run.failure_summary ?? "failure"}</summary><pre>${run.failure_text}</pre></details>`
    : (run.failure_summary ?? "");
  const pr = run.pr_number !== null ? `#${run.pr_number}` : "";
  return markup`<tr><td>${time(run.at, now)}</td><td>${badge(run.status, run.status)}${attempt}${excluded}</td><td>${run.branch}</td><td><code title="${run.commit_sha}">${run.commit_sha.slice(0, 7)}</code></td><td>${pr}</td><td class="num">${formatDuration(run.duration_ms)}</td><td>${failure}</td></tr>
`;
}

function runsSection(view: TestPageView): SafeHtml {
  const heading =
    view.totalRuns > view.runs.length
      ? markup`<h2>Latest runs <span class="muted">(${view.runs.length} of ${view.totalRuns})</span></h2>`
      : markup`<h2>Runs <span class="muted">(${view.runs.length})</span></h2>`;
  if (view.runs.length === 0) return markup`${heading}<p class="muted">No runs recorded.</p>`;
  return markup`${heading}
<table>
<thead><tr><th>Time</th><th>Result</th><th>Branch</th><th>Commit</th><th>PR</th><th class="num">Duration</th><th>Failure</th></tr></thead>
<tbody>
${view.runs.map((run) => runRow(run, view.now))}</tbody>
</table>`;
}

function historySection(view: TestPageView): SafeHtml {
  if (view.history.length === 0) {
    return markup`<h2>History</h2><p class="muted">No changes recorded yet.</p>`;
  }
  const rows = view.history.map(
    (h) =>
      markup`<tr><td>${time(h.at, view.now)}</td><td>${h.kind}</td><td>${badge(h.status, h.status)}</td><td>${h.reason}</td><td>${h.actor ?? none("monitors")}</td></tr>
`,
  );
  return markup`<h2>History</h2>
<table>
<thead><tr><th>Time</th><th>Change</th><th>Status</th><th>Reason</th><th>By</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`;
}

export function renderTestPage(view: TestPageView): string {
  const { test } = view;
  const header = markup`<span>${view.orgSlug}</span> / ${link(test.repository.html_url, view.repositoryName)} / flaky tests`;
  const quarantined = test.quarantined ? markup` ${badge("quarantined", "quarantined")}` : "";
  const body = markup`<h1>${test.name}</h1>
<p>${badge(test.status.value, test.status.value)}${quarantined}</p>
${overview(view)}
${statusSection(view)}
${quarantineSection(view)}
${figuresSection(view)}
${failuresSection(view)}
${monitorsSection(view)}
${runsSection(view)}
${historySection(view)}`;
  return layout(`${test.name} · ${view.repositoryName} · flaky tests`, header, body);
}

// ---- sign-in and error pages ------------------------------------------------------------------

export interface LoginPageOptions {
  /** Where the form posts: the page's own path and query. */
  action: string;
  orgSlug: string;
  /** The anti-forgery token the form sends back (the same value as its cookie). */
  csrfToken: string;
  /** Shown above the form, e.g. why the last token was refused. */
  problem?: string | undefined;
  title?: string | undefined;
}

export function renderLoginPage(options: LoginPageOptions): string {
  const title = options.title ?? "Sign in to see this test";
  const problem = options.problem
    ? markup`<p class="error" role="alert">${options.problem}</p>`
    : "";
  const body = markup`<h1>${title}</h1>
<p>Test results are private. Enter an API token of the organization <strong>${options.orgSlug}</strong>
(<code>mainline org create ${options.orgSlug}</code> prints one). It is kept in an HttpOnly cookie
for this organization's test pages.</p>
${problem}
<form class="login" method="post" action="${options.action}">
  <input type="hidden" name="csrf" value="${options.csrfToken}">
  <label for="token">API token</label>
  <input id="token" name="token" type="password" autocomplete="off" required>
  <button type="submit">Sign in</button>
</form>`;
  return layout(title, markup`Mainline`, body);
}

export function renderMessagePage(title: string, message: string): string {
  return layout(title, markup`Mainline`, markup`<h1>${title}</h1><p>${message}</p>`);
}
