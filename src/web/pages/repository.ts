/**
 * A repository's test health: key figures, 30 days of daily trends, and the tests table with its
 * filters (status, code owner, text), sort and pages. `presentRepository` turns the service's
 * answer into the view model; `renderRepository` turns that into the page. The filter form is a
 * plain GET form: the view lives in the address.
 */
import type { RepoRef } from "../../organizations/repositories.js";
import {
  TABLE_SORTS,
  TABLE_STATUSES,
  type RepositoryPage,
  type TableSort,
  type TableStatus,
} from "../../testhealth/repository-health.js";
import { badge, formatPercent, muted, plural, scrollX, timeAgo } from "../format.js";
import { markup, type SafeHtml } from "../html.js";
import type { PageView } from "../layout.js";
import { dailyBars, dailyLevels, fitDays } from "../svg/charts.js";
import { urls, type TestTableView } from "../urls.js";
import { repositoryName } from "../../organizations/repositories.js";

export interface TestTableRow {
  name: string;
  href: string;
  detail: string;
  status: string;
  quarantined: boolean;
  owners: string[];
  failureRate: string;
  runs: number;
  prsImpacted: number;
  lastFailure: string | null;
}

export interface RepositoryView {
  org: string;
  repo: RepoRef;
  name: string;
  figures: { tests: number; flaky: number; broken: number; quarantined: number; prs: number };
  /** From the repository's first upload (within the last `window` days) to today. */
  days: number[];
  window: number;
  failures: number[];
  flaky: number[];
  broken: number[];
  quarantined: number[];
  owners: string[];
  query: TestTableView & { sort: TableSort; page: number };
  total: number;
  pages: number;
  rows: TestTableRow[];
  uploadsHref: string;
  now: number;
}

const STATUS_LABELS: Record<TableStatus, string> = {
  flaky: "Flaky",
  broken: "Broken",
  quarantined: "Quarantined",
  healthy: "Healthy",
};
const SORT_LABELS: Record<TableSort, string> = {
  failure_rate: "Failure rate, 7 days",
  prs_impacted: "PRs impacted, 7 days",
  last_failure: "Last failure",
};

export function presentRepository(org: string, page: RepositoryPage, now: number): RepositoryView {
  const { health, table } = page;
  const repo = health.repository;
  const daily = fitDays(
    page.daily,
    repo.createdAt,
    (d) => d.failures > 0 || d.flaky > 0 || d.broken > 0,
  );
  return {
    org,
    repo,
    name: repositoryName(repo),
    figures: {
      tests: health.tests,
      flaky: health.flaky,
      broken: health.broken,
      quarantined: health.quarantined,
      prs: page.prsImpactedByFlaky7d,
    },
    days: daily.map((d) => d.day),
    window: page.daily.length,
    failures: daily.map((d) => d.failures),
    flaky: daily.map((d) => d.flaky),
    broken: daily.map((d) => d.broken),
    quarantined: daily.map((d) => d.quarantined),
    owners: page.owners,
    query: {
      status: table.query.status,
      owner: table.query.owner?.trim() || undefined,
      q: table.query.q?.trim() || undefined,
      sort: table.query.sort,
      page: table.query.page,
    },
    total: table.total,
    pages: table.pages,
    rows: table.rows.map((t) => ({
      name: t.row.name,
      href: urls.test(org, t.row.id, repo),
      detail: [t.row.parent, t.row.classname, t.row.variant].filter(Boolean).join(" · "),
      status: t.row.status,
      quarantined: t.quarantined,
      owners: t.codeowners,
      failureRate: t.ranIn7d ? formatPercent(t.failureRate7d) : "",
      runs: t.runs7d,
      prsImpacted: t.prsImpacted7d,
      lastFailure:
        t.row.lastFailureAt === null ? null : new Date(t.row.lastFailureAt).toISOString(),
    })),
    uploadsHref: urls.uploads(org, repo),
    now,
  };
}

/** The address of this view with some of it changed (a filter resets the page). */
function viewHref(view: RepositoryView, change: TestTableView): string {
  const { query } = view;
  return urls.repository(view.org, view.repo, {
    status: query.status,
    owner: query.owner,
    q: query.q,
    sort: query.sort === "failure_rate" ? undefined : query.sort,
    ...change,
    page: change.page !== undefined && change.page > 1 ? change.page : undefined,
  });
}

function option(value: string, label: string, selected: boolean): SafeHtml {
  return markup`<option value="${value}"${selected ? markup` selected` : ""}>${label}</option>`;
}

function filters(view: RepositoryView): SafeHtml {
  const { query } = view;
  const owners =
    query.owner !== undefined && !view.owners.includes(query.owner)
      ? [query.owner, ...view.owners]
      : view.owners;
  return markup`<form class="filters" method="get" action="${urls.repository(view.org, view.repo)}" role="search" aria-label="Filter tests">
<input type="hidden" name="repo" value="${`${view.repo.owner}/${view.repo.name}`}">
${view.repo.host.toLowerCase() === "github.com" ? "" : markup`<input type="hidden" name="host" value="${view.repo.host}">`}
<label>Status <select name="status">${option("", "All", query.status === undefined)}${TABLE_STATUSES.map((s) => option(s, STATUS_LABELS[s], query.status === s))}</select></label>
<label>Owner <select name="owner">${option("", "Anyone", query.owner === undefined)}${owners.map((o) => option(o, o, query.owner === o))}</select></label>
<label>Text <input type="search" name="q" value="${query.q ?? ""}" maxlength="200" placeholder="name, class, file"></label>
<label>Sort by <select name="sort">${TABLE_SORTS.map((s) => option(s, SORT_LABELS[s], query.sort === s))}</select></label>
<button type="submit">Apply</button>
</form>`;
}

/** Quick links to the status filters, with the current one marked. */
function statusTabs(view: RepositoryView): SafeHtml {
  const tabs: { status: TableStatus | undefined; label: string; count: number | undefined }[] = [
    { status: undefined, label: "All", count: view.figures.tests },
    { status: "flaky", label: "Flaky", count: view.figures.flaky },
    { status: "broken", label: "Broken", count: view.figures.broken },
    { status: "quarantined", label: "Quarantined", count: view.figures.quarantined },
    { status: "healthy", label: "Healthy", count: undefined },
  ];
  return markup`<nav class="tabs" aria-label="Tests by status"><ul>${tabs.map(
    (t) =>
      markup`<li><a href="${viewHref(view, { status: t.status, page: 1 })}"${view.query.status === t.status ? markup` aria-current="page"` : ""}>${t.label}${t.count === undefined ? "" : markup` <span class="count">${t.count}</span>`}</a></li>`,
  )}</ul></nav>`;
}

function pager(view: RepositoryView): SafeHtml {
  const { page } = view.query;
  const shown = `Page ${page} of ${view.pages} · ${plural(view.total, "test")}`;
  if (view.pages <= 1) return markup`<p class="muted pager">${shown}</p>`;
  const previous =
    page > 1
      ? markup`<a rel="prev" href="${viewHref(view, { page: page - 1 })}">← Previous</a>`
      : markup`<span class="muted">← Previous</span>`;
  const next =
    page < view.pages
      ? markup`<a rel="next" href="${viewHref(view, { page: page + 1 })}">Next →</a>`
      : markup`<span class="muted">Next →</span>`;
  return markup`<nav class="pager" aria-label="Pages of tests">${previous} <span>${shown}</span> ${next}</nav>`;
}

function testsTable(view: RepositoryView): SafeHtml {
  if (view.rows.length === 0) {
    return markup`<p class="muted">No test matches these filters.</p>`;
  }
  const sortedBy = (sort: TableSort) =>
    view.query.sort === sort ? markup` aria-sort="descending"` : "";
  const rows = view.rows.map(
    (r) => markup`<tr>
<th scope="row"><a href="${r.href}">${r.name}</a>${r.detail ? markup`<br><span class="muted small">${r.detail}</span>` : ""}</th>
<td>${badge(r.status, r.status)}${r.quarantined ? markup` ${badge("quarantined", "quarantined")}` : ""}</td>
<td>${r.owners.length === 0 ? muted("none") : r.owners.join(", ")}</td>
<td class="num">${r.failureRate === "" ? muted("no runs") : r.runs === 0 ? r.failureRate : markup`${r.failureRate} <span class="muted small">of ${r.runs}</span>`}</td>
<td class="num">${r.prsImpacted}</td>
<td>${r.lastFailure === null ? muted("never") : timeAgo(r.lastFailure, view.now)}</td>
</tr>
`,
  );
  return scrollX(
    "Tests",
    markup`<table class="tests">
<caption class="visually-hidden">Tests of ${view.name}</caption>
<thead><tr><th scope="col">Test</th><th scope="col">Status</th><th scope="col">Owners</th><th scope="col" class="num"${sortedBy("failure_rate")}>Failure rate, 7 days</th><th scope="col" class="num"${sortedBy("prs_impacted")}>PRs impacted, 7 days</th><th scope="col"${sortedBy("last_failure")}>Last failure</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`,
  );
}

export function renderRepository(view: RepositoryView): PageView {
  const f = view.figures;
  const main = markup`<h1>${view.name}</h1>
<p class="muted">Test health over the last 30 days. <a href="${view.uploadsHref}">Uploads of this repository</a></p>
<ul class="figures" aria-label="Now">
<li><strong>${f.flaky}</strong> <span class="muted">flaky</span></li>
<li><strong>${f.broken}</strong> <span class="muted">broken</span></li>
<li><strong>${f.quarantined}</strong> <span class="muted">quarantined</span></li>
<li><strong>${f.prs}</strong> <span class="muted">PRs impacted by flaky tests, 7 days</span></li>
<li><strong>${f.tests}</strong> <span class="muted">${f.tests === 1 ? "test" : "tests"}</span></li>
</ul>
<div class="charts">
${dailyBars({
  id: "failures",
  title: "Test failures per day",
  description:
    "Failed runs of the repository's tests each day (UTC), infrastructure failures excluded.",
  days: view.days,
  window: view.window,
  series: [{ label: "Failures", values: view.failures, className: "series-broken" }],
})}
${dailyLevels({
  id: "statuses",
  title: "Flaky, broken and quarantined tests",
  description: "Tests that were flaky, broken or quarantined at the end of each day (UTC).",
  days: view.days,
  window: view.window,
  series: [
    { label: "Flaky", values: view.flaky, className: "series-flaky" },
    { label: "Broken", values: view.broken, className: "series-broken" },
    { label: "Quarantined", values: view.quarantined, className: "series-other" },
  ],
})}
</div>
<h2 id="tests">Tests</h2>
${statusTabs(view)}
${filters(view)}
${testsTable(view)}
${pager(view)}`;
  return {
    title: `${view.name} · Tests`,
    section: "tests",
    breadcrumbs: [{ label: "Tests", href: urls.tests(view.org) }, { label: view.name }],
    main,
  };
}
