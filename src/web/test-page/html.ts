/**
 * The HTML page of a test (`html_url` of every test): pure functions from the page's view data
 * (built by the API layer's presenters) to a `PageView` in the dashboard's layout. No JavaScript;
 * every value escaped by `markup`.
 */
import type { Principal } from "../../organizations/service.js";
import { inferTestFile } from "../../testhealth/file-inference.js";
import { badge, formatDuration, formatPercent, muted, scrollX, timeAgo } from "../format.js";
import { markup, type SafeHtml } from "../html.js";
import type { PageView } from "../layout.js";
import { repositoryName } from "../../organizations/repositories.js";
import { dailyBars, fitDays } from "../svg/charts.js";
import { urls } from "../urls.js";

/** A link only for http(s) URLs; anything else is shown as text. */
function link(url: string, text: string): SafeHtml {
  return /^https?:\/\//i.test(url)
    ? markup`<a href="${url}" rel="noreferrer noopener">${text}</a>`
    : markup`${text}`;
}

const none = muted;
const time = timeAgo;

/** The page's view of a test of the caller's organization; undefined when there is none. */
export type TestPageLoader = (
  principal: Principal,
  query: { testId: string; repo: { owner: string; name: string; host?: string | undefined } },
  baseUrl: string,
) => Promise<TestPageView | undefined>;

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
  ticket?: {
    html_url: string;
    key?: string;
    state?: { name: string; open: boolean; checked_at: string } | null;
  };
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
  /** The test's repository. */
  repository: { host: string; owner: string; name: string };
  test: PageTest;
  quarantine: PageQuarantine;
  history: readonly PageHistoryEntry[];
  monitors: readonly PageMonitor[];
  /** The latest runs, newest first. */
  runs: readonly PageRun[];
  /**
   * A broken test: the commit of the first failure of the failing streak its stable-branch runs
   * end with, and the commit of the pass before it when the runs read reach back that far.
   */
  brokeAt?: { commit_sha: string; at: string; last_passed_sha: string | null };
  totalRuns: number;
  /** Counted passes and failures per UTC day, last 30 days, oldest first. */
  daily?: readonly { day: number; passed: number; failed: number }[];
  /** When the test was first seen (epoch ms): its chart begins then, within the 30 days. */
  firstSeenAt?: number;
  /**
   * The repository's ticket connection (its name for the "Create ticket in …" button, and what it
   * last failed with), when its settings name one.
   */
  ticketConnection?: { name: string; lastError: string | null } | undefined;
  /** Epoch ms, for "3 h ago". */
  now: number;
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
  const ticket = test.ticket ? ticketLink(test.ticket) : none("none linked");
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

/** `ENG-42 · In Progress` for a created ticket (its state as last read), else the link itself. */
function ticketLink(ticket: NonNullable<PageTest["ticket"]>): SafeHtml {
  if (ticket.key === undefined) return link(ticket.html_url, ticket.html_url);
  const state = ticket.state
    ? markup` · <span class="ticket-state">${ticket.state.name}</span>`
    : markup` <span class="muted">(state not read yet)</span>`;
  return markup`${link(ticket.html_url, ticket.key)}${state}`;
}

function statusSection(view: TestPageView): SafeHtml {
  const { status } = view.test;
  return markup`<h2>Status</h2>
<dl>
  <dt>Status</dt><dd>${badge(status.value, status.value)}</dd>
  <dt>Reason</dt><dd>${status.reason || none("none")}</dd>
  <dt>Since</dt><dd>${time(status.timestamp, view.now)}</dd>
  ${brokeAtRow(view)}
</dl>`;
}

/** Which commit broke a broken test, as far as its latest runs tell. */
function brokeAtRow(view: TestPageView): SafeHtml {
  const broke = view.brokeAt;
  if (!broke) return markup``;
  const sha = (commit: string) => markup`<code title="${commit}">${commit.slice(0, 7)}</code>`;
  const before = broke.last_passed_sha
    ? markup`; it passed at ${sha(broke.last_passed_sha)} before`
    : markup` <span class="muted">(or earlier: no passing run among the latest runs)</span>`;
  return markup`<dt>Broke at</dt><dd>${sha(broke.commit_sha)}, ${time(broke.at, view.now)}: its first failure in a row${before}</dd>`;
}

const SETTING_WORDS: Record<string, string> = {
  ALWAYS_QUARANTINE: "by its override (always quarantine)",
  AUTO_QUARANTINE: "automatically, as a flaky test",
};

/** The page's forms (a session's page: none for scripts reading with a token). */
export interface TestPageForms {
  csrf: string | undefined;
  overrideAction: string;
  ticketAction: string;
  /** Creates the test's ticket through the repository's ticket connection. */
  createTicketAction: string;
  /** What the last form did. */
  note?: string | undefined;
  /** Why the last form could not do it (a provider's refusal, a ticket already open). */
  problem?: string | undefined;
}

const OVERRIDE_CHOICES = [
  { value: "UNSPECIFIED", label: "The repository's rule (quarantined while flaky)" },
  { value: "ALWAYS_QUARANTINE", label: "Always quarantine" },
  { value: "NEVER_QUARANTINE", label: "Never quarantine" },
] as const;

function overrideForm(view: TestPageView, forms: TestPageForms | undefined): SafeHtml | string {
  if (!forms?.csrf) return "";
  const current = view.quarantine.override;
  return markup`<form class="inline-form" method="post" action="${forms.overrideAction}" aria-label="Quarantine override">
<input type="hidden" name="csrf" value="${forms.csrf}">
<label>Override <select name="override">${OVERRIDE_CHOICES.map(
    (c) =>
      markup`<option value="${c.value}"${c.value === current ? markup` selected` : ""}>${c.label}</option>`,
  )}</select></label>
<label>Reason <input type="text" name="reason" maxlength="500" placeholder="why (optional)"></label>
<button type="submit">Save override</button>
</form>`;
}

/**
 * "Create ticket in <connection>": while the repository has a connection and the test has no
 * ticket, or one that is closed.
 */
function createTicketForm(view: TestPageView, forms: TestPageForms | undefined): SafeHtml | string {
  const connection = view.ticketConnection;
  if (!forms?.csrf) return "";
  if (!connection) {
    return view.test.ticket
      ? ""
      : markup`<p class="muted small">No ticket connection for this repository: <a href="${urls.tickets(view.orgSlug)}">ticket connections</a>.</p>`;
  }
  const ticket = view.test.ticket;
  if (ticket && ticket.state?.open !== false) return "";
  const failing = connection.lastError
    ? markup`<p class="muted small">Its last call failed: ${connection.lastError}</p>`
    : "";
  return markup`<form class="inline-form" method="post" action="${forms.createTicketAction}" aria-label="Create ticket">
<input type="hidden" name="csrf" value="${forms.csrf}">
<button type="submit">Create ticket in ${connection.name}</button>
</form>
${failing}`;
}

function ticketForm(view: TestPageView, forms: TestPageForms | undefined): SafeHtml | string {
  if (!forms?.csrf) return "";
  return markup`<form class="inline-form" method="post" action="${forms.ticketAction}" aria-label="Ticket">
<input type="hidden" name="csrf" value="${forms.csrf}">
<label>Ticket <input type="text" name="ticket" maxlength="500" value="${view.test.ticket?.html_url ?? ""}" placeholder="URL or id; empty to unlink"></label>
<button type="submit">Save ticket</button>
</form>`;
}

function dailySection(view: TestPageView): SafeHtml | string {
  if (!view.daily || view.daily.length === 0) return "";
  const daily = fitDays(view.daily, view.firstSeenAt ?? 0, (d) => d.passed + d.failed > 0);
  return markup`<h2>By day</h2>
${dailyBars({
  id: "test-daily",
  title: "Passed and failed runs per day",
  description: "Counted runs of this test each day (UTC); infrastructure failures are not counted.",
  days: daily.map((d) => d.day),
  window: view.daily.length,
  series: [
    { label: "Passed", values: daily.map((d) => d.passed), className: "series-other" },
    { label: "Failed", values: daily.map((d) => d.failed), className: "series-broken" },
  ],
})}`;
}

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
${scrollX(
  "Most common failures",
  markup`<table>
<thead><tr><th>Failure</th><th class="num">Count</th><th>Last</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`,
)}`;
}

function monitorsSection(view: TestPageView): SafeHtml {
  if (view.monitors.length === 0) {
    return markup`<h2>Monitors</h2><p class="muted">No monitor has looked at this test yet.</p>`;
  }
  const rows = view.monitors.map((m) => {
    const flags = m.classification ?? none("no longer configured");
    const state = m.active ? badge(m.classification ?? "other", "active") : "inactive";
    // An inactive monitor's reason is what it saw when it last changed (its window then), not
    // today's runs: said so in words, and no figure is struck through to contradict the runs.
    const reason = m.active
      ? markup`${m.reason}`
      : markup`<span class="muted">Not triggered now. When it last changed, it saw:</span> ${m.reason}`;
    return markup`<tr><td><code>${m.id}</code></td><td>${flags}</td><td>${state}</td><td>${reason}</td><td>${time(m.changed_at, view.now)}</td></tr>
`;
  });
  return markup`<h2>Monitors</h2>
${scrollX(
  "Monitors",
  markup`<table>
<thead><tr><th>Monitor</th><th>Flags</th><th>State</th><th>Reason</th><th>Since</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`,
)}`;
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
${scrollX(
  "Runs",
  markup`<table>
<thead><tr><th>Time</th><th>Result</th><th>Branch</th><th>Commit</th><th>PR</th><th class="num">Duration</th><th>Failure</th></tr></thead>
<tbody>
${view.runs.map((run) => runRow(run, view.now))}</tbody>
</table>`,
)}`;
}

function historySection(view: TestPageView): SafeHtml {
  if (view.history.length === 0) {
    return markup`<h2>Timeline</h2><p class="muted">No changes recorded yet.</p>`;
  }
  const rows = view.history.map(
    (h) =>
      markup`<tr><td>${time(h.at, view.now)}</td><td>${h.kind}</td><td>${badge(h.status, h.status)}</td><td>${h.reason}</td><td>${h.actor ?? none("monitors")}</td></tr>
`,
  );
  return markup`<h2>Timeline <span class="muted">(status changes by the monitors, overrides, tickets)</span></h2>
${scrollX(
  "Timeline",
  markup`<table>
<thead><tr><th>Time</th><th>Change</th><th>Status</th><th>Reason</th><th>By</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`,
)}`;
}

export function renderTestPage(view: TestPageView, forms?: TestPageForms): PageView {
  const { test } = view;
  const name = repositoryName(view.repository);
  const quarantined = test.quarantined ? markup` ${badge("quarantined", "quarantined")}` : "";
  const body = markup`<h1>${test.name}</h1>
<p>${badge(test.status.value, test.status.value)}${quarantined} <span class="muted">in</span> ${link(test.repository.html_url, name)}</p>
${forms?.note ? markup`<p class="notice" role="status">${forms.note}</p>` : ""}
${forms?.problem ? markup`<p class="notice problem" role="alert">${forms.problem}</p>` : ""}
${overview(view)}
${createTicketForm(view, forms)}
${ticketForm(view, forms)}
${statusSection(view)}
${quarantineSection(view)}
${overrideForm(view, forms)}
${figuresSection(view)}
${dailySection(view)}
${failuresSection(view)}
${monitorsSection(view)}
${runsSection(view)}
${historySection(view)}`;
  return {
    title: `${test.name} · ${name} · flaky tests`,
    section: "tests",
    breadcrumbs: [
      { label: "Tests", href: urls.tests(view.orgSlug) },
      { label: name, href: urls.repository(view.orgSlug, view.repository) },
      { label: test.name },
    ],
    main: body,
  };
}
