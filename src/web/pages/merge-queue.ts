/**
 * The merge queue's pages: a queue (state, actions, settings, runs in flight, queued pull requests,
 * live), a pull request (timeline, runs, checks, logs, actions) and a queue's health. Presenters
 * are folded into the views: each takes the domain's answer and the URLs and returns a `PageView`;
 * no I/O here.
 */
import type {
  BoardBisection,
  BoardEntry,
  BoardRun,
  PullRequestHistory,
  QueueBoard,
  QueueHealth,
} from "../../mergequeue/dashboard.js";
import { describeProblem, type ConfigReport } from "../../mergequeue/config-check.js";
import type { Actor } from "../../mergequeue/model.js";
import { priorityName } from "../../mergequeue/model.js";
import { describeReason } from "../../mergequeue/reasons.js";
import type { RepoRef } from "../../organizations/repositories.js";
import {
  badge,
  clockTime as at,
  formatSpan as span,
  muted,
  plural,
  queueName,
  scrollX,
} from "../format.js";
import { markup, type SafeHtml } from "../html.js";
import type { PageView } from "../layout.js";
import { dailyBars, fitDays } from "../svg/charts.js";
import { urls } from "../urls.js";
import { failureSection } from "./pull-request-failure.js";
import {
  estimateSummary,
  mergeEstimate,
  placeEstimate,
  rowWaitingText,
  runProgress,
  waitingText,
} from "./queue-estimates.js";

export interface QueuePlace {
  org: string;
  repo: RepoRef;
  branch: string;
}

/** Every URL the queue's pages link or post to. */
export interface QueueLinks {
  queue: string;
  health: string;
  events: string;
  stateAction: string;
  pullRequest(number: number): string;
  pullRequestAction(number: number, action: "restart" | "cancel" | "priority"): string;
  log(runId: string, check: string): string | undefined;
}

const name = (place: QueuePlace) => queueName(place.repo, place.branch);

const STATE_WORDS: Record<string, string> = {
  running: "running",
  paused: "paused",
  draining: "draining",
  switching_modes: "switching modes",
};

function shortSha(sha: string): string {
  return sha.slice(0, 7);
}

function hidden(csrf: string, extra: Record<string, string> = {}): SafeHtml {
  return markup`<input type="hidden" name="csrf" value="${csrf}">${Object.entries(extra).map(
    ([k, v]) => markup`<input type="hidden" name="${k}" value="${v}">`,
  )}`;
}

const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

// ---- the queue -----------------------------------------------------------------------------------

function stateForms(board: QueueBoard, links: QueueLinks, csrf: string | undefined): SafeHtml {
  if (!csrf) return markup``;
  const state = board.queue.configuration.state;
  const button = (to: string, label: string, confirm?: string) =>
    markup`<form method="post" action="${links.stateAction}"${confirm ? markup` data-confirm="${confirm}"` : ""}>${hidden(csrf, { state: to })}<button type="submit">${label}</button></form>`;
  const forms: SafeHtml[] = [];
  if (state === "running") forms.push(button("paused", "Pause"));
  if (state === "paused" || state === "draining") forms.push(button("running", "Resume"));
  if (state === "running" || state === "paused") {
    forms.push(
      button(
        "draining",
        "Drain",
        "Drain this queue? It finishes what it holds and accepts no new pull requests.",
      ),
    );
  }
  return markup`<div class="actions" aria-label="Queue actions" role="group">${forms}</div>`;
}

function settingsSummary(board: QueueBoard): SafeHtml {
  const c = board.queue.configuration;
  const required =
    c.requiredStatuses === null
      ? "from branch protection or the repository's config"
      : c.requiredStatuses.length === 0
        ? "none"
        : c.requiredStatuses.join(", ");
  const rows: [string, string][] = [
    ["Mode", c.pendingMode ? `${c.mode}, switching to ${c.pendingMode}` : c.mode],
    ["Concurrency", `${c.concurrency} run${c.concurrency === 1 ? "" : "s"} at once`],
    [
      "Batching",
      c.batch
        ? `on: up to ${plural(c.batchingMinSize, "pull request")} a batch, waits up to ${c.batchingMaxWaitTimeMinutes} min for one to fill`
        : "off",
    ],
    ["Bisection", `${c.bisectionConcurrency} at once`],
    ["Merge method", c.mergeMethod.replace("_", " ")],
    ["Required statuses", required],
    ["Testing timeout", c.testingTimeoutMinutes === 0 ? "none" : `${c.testingTimeoutMinutes} min`],
    ["Optimistic merge", c.canOptimisticallyMerge ? "on" : "off"],
  ];
  return markup`<details class="settings"><summary>Settings</summary><dl>${rows.map(
    ([k, v]) => markup`<dt>${k}</dt><dd>${v}</dd>`,
  )}</dl></details>`;
}

function runCard(run: BoardRun, place: QueuePlace, links: QueueLinks, now: number): SafeHtml {
  const pr = (n: number, cls: string) =>
    markup`<li class="chip ${cls}"><a href="${links.pullRequest(n)}">#${n}</a></li>`;
  const what =
    run.kind === "bisection"
      ? `prefix of failed batch run ${run.localizes ?? "?"}: ${plural(run.unit.length, "suspect")}`
      : run.unit.length > 1
        ? `batch of ${run.unit.length}`
        : "one pull request";
  const overrun = run.overrunMs === null ? "" : markup` data-overrun="${run.overrunMs}"`;
  return markup`<li class="run" id="run-${run.id}" data-run="${run.id}"${overrun}><p><strong>Run ${run.id}</strong> · ${what}${run.attempt > 1 ? ` · attempt ${run.attempt}` : ""} · ${runProgress(run, now)}</p>
<ol class="lane" aria-label="Run ${run.id}: base, then pull requests in merge order"><li class="chip base">${place.branch} @ <code>${shortSha(run.baseSha)}</code></li>${run.ahead.map((n) => pr(n, "ahead"))}${run.unit.map((n) => pr(n, "unit"))}</ol></li>`;
}

function queueRow(entry: BoardEntry, links: QueueLinks, now: number): SafeHtml {
  const waiting = rowWaitingText(entry, now);
  const eta = mergeEstimate(entry, now);
  return markup`<tr data-pr="${entry.number}"><td class="num">${entry.position ?? "—"}</td><td><a href="${links.pullRequest(entry.number)}">#${entry.number}</a> ${entry.title}</td><td>${entry.author}</td><td>${badge(entry.state, entry.state.replace("_", " "))}${waiting ? markup` <span class="muted">${waiting}</span>` : ""}</td><td>${eta}</td></tr>
`;
}

/** While the queue's git host does not answer: since when, why, and when the queue tries again. */
function hostLine(board: QueueBoard, now: number): SafeHtml {
  const trouble = board.hostTrouble;
  if (!trouble) return markup``;
  if (trouble.state === "rate_limited") {
    return markup`<p class="notice host-trouble" data-host-state="${trouble.state}"><strong>The git host's rate limit holds the queue</strong> since ${at(trouble.since, now)}: ${trouble.message} <span class="muted">Every request waits until ${at(trouble.retryAt, now)}, as the host asks; meanwhile the queue changes nothing.</span></p>`;
  }
  return markup`<p class="notice host-trouble" data-host-state="${trouble.state}"><strong>The queue cannot reach its git host</strong> since ${at(trouble.since, now)}: ${trouble.message} <span class="muted">It tries again at ${at(trouble.retryAt, now)}; meanwhile it changes nothing, and impacted targets are kept for then.</span></p>`;
}

/** With batching on: the batch size in use and why (it follows the queue's failure rate). */
function batchSizeLine(board: QueueBoard): SafeHtml {
  if (!board.queue.configuration.batch) return markup``;
  const { size, ceiling, reason } = board.batchSize;
  return markup`<p class="batch-size">Batch size in use: <strong>${size}</strong> of at most ${ceiling} <span class="muted">· ${reason}</span></p>`;
}

/** Pull requests as links, "#3, #4"; `none` when there are none. */
function prLinks(numbers: readonly number[], links: QueueLinks, none: string): SafeHtml {
  if (numbers.length === 0) return muted(none);
  return markup`${numbers.map((n, i) => markup`${i > 0 ? ", " : ""}<a href="${links.pullRequest(n)}">#${n}</a>`)}`;
}

/** A failed batch being localized: what is cleared, the suspects, the prefixes, the presumption. */
function localizationCard(l: BoardBisection, links: QueueLinks): SafeHtml {
  const prefixes =
    l.prefixes.length === 0
      ? muted("none yet: waiting for a bisection slot")
      : markup`<ul class="prefixes">${l.prefixes.map(
          (p) =>
            markup`<li>${prLinks(p.prNumbers, links, "—")} <span class="muted">in <a href="#run-${p.runId}">run ${p.runId}</a></span></li>`,
        )}</ul>`;
  const rows: [string, SafeHtml][] = [
    ["Cleared", prLinks(l.cleared, links, "none yet")],
    ["Suspects", prLinks(l.suspects, links, "none")],
    ["Prefixes being tested", prefixes],
  ];
  if (l.presumedCulprit !== null) {
    rows.push([
      "Presumed culprit",
      markup`${prLinks([l.presumedCulprit], links, "")} <span class="muted">· the queue goes on behind it; nothing merges on the presumption</span>`,
    ]);
  }
  return markup`<li class="localization" data-localization="${l.id}"><p>${capitalized(l.summary)}.</p>
<dl>${rows.map(([k, v]) => markup`<dt>${k}</dt><dd>${v}</dd>`)}</dl></li>`;
}

/** The part of the queue page that live updates replace: state, runs, bisections, the queue. */
export function queueLive(board: QueueBoard, place: QueuePlace, links: QueueLinks, now: number) {
  const c = board.queue.configuration;
  const testing = board.entries.filter((e) => e.state === "testing").length;
  const waiting = board.entries.filter((e) => e.state !== "testing").length;
  const runs =
    board.runs.length === 0
      ? markup`<p class="muted">Nothing is being tested.</p>`
      : markup`<ol class="runs">${board.runs.map((r) => runCard(r, place, links, now))}</ol>`;
  const bisections =
    board.bisections.length === 0
      ? ""
      : markup`<h3 id="localizations">Failed batches being localized</h3>
<ul class="localizations" aria-labelledby="localizations">${board.bisections.map((b) => localizationCard(b, links))}</ul>`;
  const estimate = estimateSummary(board);
  const table =
    board.entries.length === 0
      ? markup`<p class="muted">The queue is empty.</p>`
      : scrollX(
          "The queue",
          markup`<table class="queue">
<caption class="visually-hidden">Pull requests in the queue, in merge order</caption>
<thead><tr><th scope="col" class="num">Position</th><th scope="col">Pull request</th><th scope="col">Author</th><th scope="col">State</th><th scope="col">Estimated merge</th></tr></thead>
<tbody>
${board.entries.map((e) => queueRow(e, links, now))}</tbody>
</table>`,
        );
  const concluded =
    board.concluded.length === 0
      ? markup`<p class="muted">None yet.</p>`
      : scrollX(
          "Recently concluded",
          markup`<table class="concluded">
<caption class="visually-hidden">Pull requests that left the queue last, newest first</caption>
<thead><tr><th scope="col">Pull request</th><th scope="col">Outcome</th><th scope="col">When</th><th scope="col">In queue</th></tr></thead>
<tbody>
${board.concluded.map(
  (c) =>
    markup`<tr data-pr="${c.number}"><td><a href="${links.pullRequest(c.number)}">#${c.number}</a> ${c.title}</td><td>${badge(c.state, c.state)} <span class="muted">${describeReason(c.reason)}</span></td><td>${at(c.at, now)}</td><td>${span(c.tookMs)}</td></tr>
`,
)}</tbody>
</table>`,
        );
  return markup`<p class="queue-state">State: ${badge(c.state, STATE_WORDS[c.state] ?? c.state)} <span class="muted">· ${plural(testing, "pull request")} testing, ${waiting} waiting · ${estimate}</span></p>
${hostLine(board, now)}
${batchSizeLine(board)}
<h2 id="graph">Being tested</h2>
${runs}${bisections}
<h2 id="queued">Queue</h2>
${table}
<h2 id="concluded">Recently concluded</h2>
${concluded}`;
}

/**
 * How often the live region is fetched again while nothing changes, when it shows times relative
 * to now (a run's elapsed time and overrun, estimates): they move on without a transition.
 */
export const TICK_MS = 30_000;

/** Whether the live region shows times that move on by themselves (runs, waits, estimates). */
function ticking(board: QueueBoard): boolean {
  return (
    board.runs.length > 0 ||
    board.entries.some(
      (e) => e.estimatedMergeAt !== null || e.expectedStartAt !== null || e.waiting !== null,
    )
  );
}

/**
 * The mistakes in the configuration at the head of the target branch (repositories whose CI is
 * the built-in runner): every run fails at once on them unless its pull requests fix them.
 */
function configurationBox(place: QueuePlace, config: ConfigReport | undefined): SafeHtml {
  if (!config?.failure || config.problems.length === 0) return markup``;
  return markup`<section class="notice config-problems" aria-labelledby="configuration">
<h2 id="configuration">Configuration</h2>
<p>The built-in CI fails a run at once (${config.failure.reason}) while these mistakes are in what it tests: ${place.branch}'s configuration, unless a pull request fixes it.</p>
<ul>${config.problems.map((problem) => markup`<li><code>${describeProblem(problem)}</code></li>`)}</ul>
</section>`;
}

export function renderQueue(
  board: QueueBoard,
  place: QueuePlace,
  links: QueueLinks,
  csrf: string | undefined,
  now: number,
  /** What the configuration check found at the target branch's head, when it ran. */
  config?: ConfigReport,
): PageView {
  const title = name(place);
  return {
    title: `${title} · Merge queue`,
    section: "queues",
    breadcrumbs: [{ label: "Merge queues", href: urls.queues(place.org) }, { label: title }],
    main: markup`<h1>${title} <span class="muted">merge queue</span></h1>
${stateForms(board, links, csrf)}
${configurationBox(place, config)}
<p><a href="${links.health}">Health of this queue</a></p>
${settingsSummary(board)}
<p class="live-status muted" data-live-status aria-live="polite"></p>
<section id="queue-live" aria-label="The queue now" data-live-events="${links.events}" data-version="${board.version}"${ticking(board) ? markup` data-refresh-ms="${TICK_MS}"` : ""}>
${queueLive(board, place, links, now)}
</section>`,
    islands: ["live-queue"],
  };
}

// ---- a pull request --------------------------------------------------------------------------------

/** The place line's wait: " · waiting for a free slot (…); expected to start in 4 min". */
function placeWait(entry: BoardEntry, now: number): SafeHtml {
  const words = waitingText(entry, now);
  return words === undefined ? markup`` : markup` · ${words}`;
}

function actorText(actor: Actor): string {
  if (actor.kind === "user") return actor.name;
  return actor.kind === "queue" ? "the queue" : "the git host";
}

function prForms(
  history: PullRequestHistory,
  links: QueueLinks,
  csrf: string | undefined,
): SafeHtml {
  if (!csrf || history.entry.concludedAt !== null) return markup``;
  const n = history.entry.prNumber;
  const current = priorityName(history.entry.priorityValue);
  const options = ["urgent", "high", "medium", "low"].map(
    (p) => markup`<option value="${p}"${p === current ? markup` selected` : ""}>${p}</option>`,
  );
  return markup`<div class="actions" role="group" aria-label="Pull request actions">
<form method="post" action="${links.pullRequestAction(n, "restart")}">${hidden(csrf)}<button type="submit">Restart tests</button></form>
<form method="post" action="${links.pullRequestAction(n, "cancel")}" data-confirm="Take #${n} out of the queue?">${hidden(csrf)}<button type="submit">Cancel</button></form>
<form method="post" action="${links.pullRequestAction(n, "priority")}">${hidden(csrf)}<label for="priority">Priority</label> <select id="priority" name="priority">${options}</select> <button type="submit">Change priority</button></form>
</div>`;
}

export function renderPullRequest(
  history: PullRequestHistory,
  place: QueuePlace,
  links: QueueLinks,
  csrf: string | undefined,
  now: number,
): PageView {
  const { entry } = history;
  const queueTitle = name(place);
  const timeline = [...history.transitions].reverse().map(
    (t) =>
      markup`<tr><td>${at(t.at, now)}</td><td>${t.from ? markup`${t.from.replace("_", " ")} → ` : ""}${badge(t.to, t.to.replace("_", " "))}</td><td>${describeReason(t.reason)}${t.detail ? markup`<br><span class="detail">${t.detail}</span>` : ""}</td><td>${actorText(t.actor)}</td><td>${t.runId ? markup`<a href="#run-${t.runId}">${t.runId}</a>` : ""}</td></tr>
`,
  );
  const runs = history.runs.map((run) => {
    const checks =
      run.checks.length === 0
        ? markup`<p class="muted">No check reported${run.status === "running" ? " yet" : ""}.</p>`
        : markup`<ul class="checks">${run.checks.map((c) => {
            const log = links.log(run.id, c.name);
            const href = c.url ?? log;
            return markup`<li>${badge(c.conclusion === "success" ? "passed" : c.conclusion === null ? "running" : "failed", c.conclusion ?? "running")} ${c.name}${href ? markup` · <a href="${href}">log</a>` : ""}</li>`;
          })}</ul>`;
    const numbers = run.prs.map((p) => `#${p.number}`).join(", ");
    return markup`<section class="run" id="run-${run.id}" aria-labelledby="run-${run.id}-h"><h3 id="run-${run.id}-h">Run ${run.id} ${badge(run.status, run.status)}</h3>
<p class="muted">${run.kind === "bisection" ? "Localization run (a prefix of a failed batch)" : "Run"} on <code>${shortSha(run.baseSha)}</code> with ${numbers}; started ${at(run.startedAt, now)}${run.finishedAt !== null ? `, took ${span(run.finishedAt - run.startedAt)}` : ""}.</p>
${checks}</section>`;
  });
  return {
    title: `#${entry.prNumber} · ${queueTitle}`,
    section: "queues",
    breadcrumbs: [
      { label: "Merge queues", href: urls.queues(place.org) },
      { label: queueTitle, href: links.queue },
      { label: `#${entry.prNumber}` },
    ],
    main: markup`<h1>#${entry.prNumber} ${entry.prTitle}</h1>
<p>${badge(entry.state, entry.state.replace("_", " "))} <span class="muted">by ${entry.prAuthor} · priority ${priorityName(entry.priorityValue)} (${entry.priorityValue}) · submitted ${at(entry.submittedAt, now)} · head <code>${shortSha(entry.prSha)}</code></span></p>
${
  history.place
    ? markup`<p class="place">${
        history.place.entry.position === null
          ? "Not ready yet: it has no place in the queue."
          : markup`Position <strong>${history.place.entry.position}</strong> of ${history.place.ready} in <a href="${links.queue}">the queue</a>`
      }${placeEstimate(history.place.entry, now)}${placeWait(history.place.entry, now)}</p>`
    : ""
}
${history.failure ? failureSection(history.failure, { test: (id) => urls.test(place.org, id, place.repo), log: (run, check) => links.log(run, check) }) : ""}
${prForms(history, links, csrf)}
<h2>Timeline</h2>
${scrollX(
  "Timeline",
  markup`<table>
<caption class="visually-hidden">Every state change of #${entry.prNumber}, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">State</th><th scope="col">Reason</th><th scope="col">By</th><th scope="col">Run</th></tr></thead>
<tbody>
${timeline}</tbody>
</table>`,
)}
<h2>Runs</h2>
${runs.length === 0 ? markup`<p class="muted">No run yet.</p>` : runs}`,
  };
}

// ---- health ---------------------------------------------------------------------------------------

export function renderQueueHealth(
  health: QueueHealth,
  place: QueuePlace,
  links: QueueLinks,
  rangeLinks: { range: string; href: string; current: boolean }[],
  now: number,
): PageView {
  const queueTitle = name(place);
  const ms = (v: number | null) => (v === null ? "—" : span(v));
  const reasons =
    health.byReason.length === 0
      ? markup`<p class="muted">Nothing concluded in this range.</p>`
      : scrollX(
          "Outcomes by reason",
          markup`<table><caption class="visually-hidden">Conclusions by reason</caption><thead><tr><th scope="col">Outcome</th><th scope="col">Reason</th><th scope="col" class="num">Pull requests</th></tr></thead><tbody>${health.byReason.map(
            (r) =>
              markup`<tr><td>${badge(r.state, r.state)}</td><td>${describeReason(r.reason)}</td><td class="num">${r.count}</td></tr>`,
          )}</tbody></table>`,
        );
  const attention =
    health.needsAttention.length === 0
      ? markup`<p class="muted">No pull request failed in this range.</p>`
      : scrollX(
          "Needs attention",
          markup`<table><caption class="visually-hidden">Pull requests that failed, newest first</caption><thead><tr><th scope="col">Pull request</th><th scope="col">Author</th><th scope="col">Why</th><th scope="col">When</th></tr></thead><tbody>${health.needsAttention.map(
            (f) =>
              markup`<tr><td><a href="${links.pullRequest(f.number)}">#${f.number}</a> ${f.title}</td><td>${f.author}</td><td>${describeReason(f.reason)}${f.detail ? markup` <span class="detail">${f.detail}</span>` : ""}${f.runId ? markup` (<a href="${links.pullRequest(f.number)}#run-${f.runId}">run ${f.runId}</a>)` : ""}</td><td>${at(f.at, now)}</td></tr>`,
          )}</tbody></table>`,
        );
  const daily = fitDays(
    health.daily,
    health.queue.createdAt,
    (d) => d.merged + d.failed + d.runs > 0,
  );
  const days = daily.map((d) => d.day);
  return {
    title: `Health · ${queueTitle}`,
    section: "queues",
    breadcrumbs: [
      { label: "Merge queues", href: urls.queues(place.org) },
      { label: queueTitle, href: links.queue },
      { label: "Health" },
    ],
    main: markup`<h1>Health <span class="muted">${queueTitle}</span></h1>
<nav class="ranges" aria-label="Range"><ul>${rangeLinks.map(
      (r) =>
        markup`<li><a href="${r.href}"${r.current ? markup` aria-current="page"` : ""}>${r.range}</a></li>`,
    )}</ul></nav>
<ul class="figures" aria-label="Last ${health.days} days">
<li><strong>${health.merged}</strong> <span class="muted">merged</span></li>
<li><strong>${health.failed}</strong> <span class="muted">failed</span></li>
<li><strong>${health.cancelled}</strong> <span class="muted">cancelled</span></li>
<li><strong>${ms(health.timeInQueue.p50)}</strong> <span class="muted">in queue, p50</span></li>
<li><strong>${ms(health.timeInQueue.p95)}</strong> <span class="muted">p95</span></li>
<li><strong>${ms(health.timeInQueue.p99)}</strong> <span class="muted">p99</span></li>
<li><strong>${health.runsPerMerged === null ? "—" : health.runsPerMerged.toFixed(1)}</strong> <span class="muted">CI runs per merged PR (${plural(health.runs, "run")})</span></li>
</ul>
${dailyBars({
  id: "outcomes",
  title: "Merged and failed pull requests per day",
  description: "Pull requests the queue merged and failed each day (UTC).",
  days,
  window: health.days,
  series: [
    { label: "Merged", values: daily.map((d) => d.merged), className: "series-other" },
    { label: "Failed", values: daily.map((d) => d.failed), className: "series-broken" },
  ],
})}
${dailyBars({
  id: "runs",
  title: "CI runs per day",
  description: "Test runs the queue started each day (UTC).",
  days,
  window: health.days,
  series: [{ label: "Runs", values: daily.map((d) => d.runs), className: "series-other" }],
})}
<h2>Outcomes by reason</h2>
${reasons}
<h2>Needs attention</h2>
${attention}`,
  };
}
