/**
 * The organization's home: its repositories with their flaky, broken and quarantined tests and a
 * 30-day trend, and its merge queues' state. `presentHome` turns the services' answers into the
 * view model; `renderHome` turns that into the page. Also the Tests and Merge queues indexes,
 * which show one of its sections each.
 */
import type { QueueOverview } from "../../mergequeue/records.js";
import type { PrState } from "../../mergequeue/model.js";
import { repositoryName } from "../../organizations/repositories.js";
import type { OrganizationHealth } from "../../testhealth/overview.js";
import { badge, muted, plural, queueName, scrollX } from "../format.js";
import { markup, type SafeHtml } from "../html.js";
import type { PageView } from "../layout.js";
import { dailyLevels, fitDays, sparkline } from "../svg/charts.js";
import { urls } from "../urls.js";

export interface QueueRow {
  /** `acme/calc · main` (`queueName`) */
  name: string;
  href: string;
  state: string;
  stateLabel: string;
  /** Waiting: not ready or pending. */
  queued: number;
  /** Being tested, or passed and about to merge. */
  testing: number;
}

export interface RepositoryRow {
  /** `acme/calc` on the local git host, else with the host: `github.com/acme/app`. */
  name: string;
  href: string;
  tests: number;
  flaky: number;
  broken: number;
  quarantined: number;
  /** `on`, `manual only` (auto-quarantine off), `off`. */
  quarantining: string;
  /** Flaky tests at the end of each day since its first upload, of the last 30 days. */
  flakyTrend: number[];
  queues: QueueRow[];
}

export interface HomeView {
  org: string;
  repositories: RepositoryRow[];
  queues: QueueRow[];
  totals: { tests: number; flaky: number; broken: number; quarantined: number };
  /** From the first repository's first upload (within the last `window` days) to today. */
  trend: { days: number[]; flaky: number[]; broken: number[]; window: number };
}

const QUEUED: readonly PrState[] = ["not_ready", "pending"];
const TESTING: readonly PrState[] = ["testing", "tests_passed", "pending_failure"];
const STATE_LABELS: Record<string, string> = {
  running: "running",
  paused: "paused",
  draining: "draining",
  switching_modes: "switching modes",
};

function queueRow(org: string, queue: QueueOverview): QueueRow {
  const sum = (states: readonly PrState[]) =>
    states.reduce((total, state) => total + (queue.active[state] ?? 0), 0);
  return {
    name: queueName(queue.repo, queue.targetBranch),
    href: urls.queue(org, queue.repo, queue.targetBranch),
    state: queue.state,
    stateLabel: STATE_LABELS[queue.state] ?? queue.state,
    queued: sum(QUEUED),
    testing: sum(TESTING),
  };
}

const hasStatus = (d: { flaky: number; broken: number }) => d.flaky > 0 || d.broken > 0;

export function presentHome(
  org: string,
  health: OrganizationHealth,
  queues: readonly QueueOverview[],
): HomeView {
  const queueRows = queues.map((q) => ({ queue: q, row: queueRow(org, q) }));
  const repositories = health.repositories.map((r): RepositoryRow => {
    const { repository, quarantine } = r;
    return {
      name: repositoryName(repository),
      href: urls.repository(org, repository),
      tests: r.tests,
      flaky: r.flaky,
      broken: r.broken,
      quarantined: r.quarantined,
      quarantining: !quarantine.quarantiningEnabled
        ? "off"
        : quarantine.autoQuarantine
          ? "on"
          : "manual only",
      flakyTrend: fitDays(r.daily, repository.createdAt, hasStatus).map((d) => d.flaky),
      queues: queueRows
        .filter((q) => q.queue.repo.repositoryId === repository.id)
        .map((q) => q.row),
    };
  });
  const sum = (pick: (r: RepositoryRow) => number) =>
    repositories.reduce((total, r) => total + pick(r), 0);
  const since = Math.min(...health.repositories.map((r) => r.repository.createdAt));
  const trend = fitDays(health.daily, since, hasStatus);
  return {
    org,
    repositories,
    queues: queueRows.map((q) => q.row),
    totals: {
      tests: sum((r) => r.tests),
      flaky: sum((r) => r.flaky),
      broken: sum((r) => r.broken),
      quarantined: sum((r) => r.quarantined),
    },
    trend: {
      days: trend.map((d) => d.day),
      flaky: trend.map((d) => d.flaky),
      broken: trend.map((d) => d.broken),
      window: health.daily.length,
    },
  };
}

function count(n: number, kind: "flaky" | "broken" | "quarantined"): SafeHtml {
  return n === 0 ? markup`<span class="muted">0</span>` : markup`${badge(kind, String(n))}`;
}

function queueState(row: QueueRow): SafeHtml {
  return badge(row.state, row.stateLabel);
}

/** The repositories table (home and the Tests index). */
export function repositoriesTable(view: HomeView): SafeHtml {
  if (view.repositories.length === 0) {
    return markup`<p class="muted">No repository has test results yet.</p>`;
  }
  const rows = view.repositories.map(
    (r, i) => markup`<tr>
<th scope="row"><a href="${r.href}">${r.name}</a></th>
<td class="num">${count(r.flaky, "flaky")}</td>
<td class="num">${count(r.broken, "broken")}</td>
<td class="num">${count(r.quarantined, "quarantined")}</td>
<td class="num">${r.tests}</td>
<td>${sparkline({ id: `trend-${i}`, title: `Flaky tests of ${r.name} per day, ${plural(r.flakyTrend.length, "day")} to today`, values: r.flakyTrend, className: "series-flaky" })}</td>
<td>${r.quarantining}</td>
<td>${r.queues.length === 0 ? muted("none") : r.queues.map((q) => markup`<a href="${q.href}">${q.name.split(" · ")[1] ?? q.name}</a> ${queueState(q)} `)}</td>
</tr>
`,
  );
  return scrollX(
    "Repositories",
    markup`<table>
<caption class="visually-hidden">Repositories and their tests</caption>
<thead><tr><th scope="col">Repository</th><th scope="col" class="num">Flaky</th><th scope="col" class="num">Broken</th><th scope="col" class="num">Quarantined</th><th scope="col" class="num">Tests</th><th scope="col">Flaky, by day</th><th scope="col">Quarantining</th><th scope="col">Merge queues</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`,
  );
}

/** The merge queues table (home and the Merge queues index). */
export function queuesTable(view: HomeView): SafeHtml {
  if (view.queues.length === 0) {
    return markup`<p class="muted">No merge queue yet.</p>`;
  }
  const rows = view.queues.map(
    (
      q,
    ) => markup`<tr><th scope="row"><a href="${q.href}">${q.name}</a></th><td>${queueState(q)}</td><td class="num">${q.queued}</td><td class="num">${q.testing}</td></tr>
`,
  );
  return scrollX(
    "Merge queues",
    markup`<table>
<caption class="visually-hidden">Merge queues and their pull requests</caption>
<thead><tr><th scope="col">Queue</th><th scope="col">State</th><th scope="col" class="num">Queued</th><th scope="col" class="num">Testing</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`,
  );
}

/** What to do when there is nothing yet: upload results, create a queue. */
export function gettingStarted(org: string, base: string): SafeHtml {
  return markup`<section class="notice" aria-labelledby="start">
<h2 id="start">Get started</h2>
<p><strong>Upload test results</strong> from CI (JUnit XML) with the uploader this server hands out:</p>
<pre><code>export MAINLINE_URL=${base}
export MAINLINE_TOKEN=mlt_…   # mainline token create --org ${org}
npx mainline upload --junit "reports/**/*.xml"
# or, with nothing but node: fetch $MAINLINE_URL/uploader/mainline-upload.mjs, then
node mainline-upload.mjs upload --junit "reports/**/*.xml"</code></pre>
<p><strong>Create a merge queue</strong> for a repository's target branch:</p>
<pre><code>npx mainline queue create --repo github.com/${org}/app --branch main</code></pre>
<p>The API reference is at <a href="/docs">/docs</a>.</p>
</section>`;
}

export function renderHome(view: HomeView, base: string): PageView {
  const empty = view.repositories.length === 0 && view.queues.length === 0;
  const t = view.totals;
  const body = empty
    ? gettingStarted(view.org, base)
    : markup`<ul class="figures" aria-label="Now">
<li><strong>${t.flaky}</strong> <span class="muted">flaky</span></li>
<li><strong>${t.broken}</strong> <span class="muted">broken</span></li>
<li><strong>${t.quarantined}</strong> <span class="muted">quarantined</span></li>
<li><strong>${t.tests}</strong> <span class="muted">${plural(t.tests, "test").replace(/^\d+ /, "")} in ${plural(view.repositories.length, "repository", "repositories")}</span></li>
<li><strong>${view.queues.length}</strong> <span class="muted">merge ${view.queues.length === 1 ? "queue" : "queues"}</span></li>
</ul>
${dailyLevels({
  id: "trend",
  title: "Flaky and broken tests",
  description: "Tests of all repositories that were flaky or broken at the end of each day (UTC).",
  days: view.trend.days,
  window: view.trend.window,
  series: [
    { label: "Flaky", values: view.trend.flaky, className: "series-flaky" },
    { label: "Broken", values: view.trend.broken, className: "series-broken" },
  ],
})}
<h2>Repositories</h2>
${repositoriesTable(view)}
<h2>Merge queues</h2>
${queuesTable(view)}`;
  return {
    title: `${view.org} · Overview`,
    section: "home",
    breadcrumbs: [{ label: "Overview" }],
    main: markup`<h1>Overview</h1>
${body}`,
  };
}
