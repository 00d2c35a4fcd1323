/**
 * Uploads: a repository's recent uploads, newest first, with their state, what they held (files,
 * tests passed, failed, skipped), their errors and when they came; paged. Without a repository: the
 * repositories to choose from.
 */
import type { RepoRef } from "../../organizations/repositories.js";
import type { RepositoryUploads } from "../../testhealth/repository-health.js";
import type { UploadRecord } from "../../testhealth/records.js";
import { badge, muted, plural, timeAgo } from "../format.js";
import { markup, type SafeHtml } from "../html.js";
import type { PageView } from "../layout.js";
import { urls } from "../urls.js";
import { repositoryName } from "../../organizations/repositories.js";

export interface UploadRow {
  id: string;
  state: string;
  stateLabel: string;
  at: string;
  commit: string | null;
  branch: string | null;
  prNumber: number | null;
  job: { name: string; url: string | null } | null;
  files: number;
  passed: number;
  failed: number;
  skipped: number;
  infrastructureFailure: boolean;
  problems: string[];
}

export interface UploadsView {
  org: string;
  repo: RepoRef;
  name: string;
  total: number;
  page: number;
  pages: number;
  rows: UploadRow[];
  now: number;
}

const STATE_BADGES: Record<string, string> = {
  processed: "passed",
  failed: "failed",
  processing: "testing",
  pending: "other",
};

/**
 * The upload's errors, each once. When no report file could be read, the reason repeats a file's
 * error (the only one, or the first: `None of the 3 JUnit reports could be read; the first,
 * a.xml: …`), so the file errors stand for it.
 */
function problemsOf(upload: UploadRecord): string[] {
  const fileProblems = upload.fileErrors.map((e) => `${e.file}: ${e.reason}`);
  const reason = upload.reason;
  const repeated = reason !== null && fileProblems.some((problem) => reason.includes(problem));
  const problems = [
    ...(reason && !repeated ? [reason] : []),
    ...fileProblems,
    ...(upload.duplicateOf
      ? [`the same bundle as upload ${upload.duplicateOf}, counted once`]
      : []),
  ];
  return [...new Set(problems)];
}

function uploadRow(upload: UploadRecord): UploadRow {
  const problems = problemsOf(upload);
  return {
    id: upload.id,
    state: STATE_BADGES[upload.state] ?? "other",
    stateLabel: upload.state,
    at: new Date(upload.receivedAt ?? upload.createdAt).toISOString(),
    commit: upload.commitSha,
    branch: upload.branch,
    prNumber: upload.prNumber,
    job:
      upload.jobName || upload.jobUrl
        ? { name: upload.jobName ?? "job", url: upload.jobUrl }
        : null,
    files: upload.filesTotal,
    passed: upload.testsPassed,
    failed: upload.testsFailed,
    skipped: upload.testsSkipped,
    infrastructureFailure: upload.infrastructureFailure,
    problems,
  };
}

export function presentUploads(org: string, found: RepositoryUploads, now: number): UploadsView {
  return {
    org,
    repo: found.repository,
    name: repositoryName(found.repository),
    total: found.total,
    page: found.page,
    pages: found.pages,
    rows: found.uploads.map(uploadRow),
    now,
  };
}

function job(row: UploadRow): SafeHtml | string {
  if (!row.job) return muted("none");
  return row.job.url && /^https?:\/\//i.test(row.job.url)
    ? markup`<a href="${row.job.url}" rel="noreferrer noopener">${row.job.name}</a>`
    : row.job.name;
}

function pager(view: UploadsView): SafeHtml {
  const shown = `Page ${view.page} of ${view.pages} · ${plural(view.total, "upload")}`;
  if (view.pages <= 1) return markup`<p class="muted pager">${shown}</p>`;
  const link = (page: number, label: string, rel: string) =>
    markup`<a rel="${rel}" href="${urls.uploads(view.org, view.repo, page > 1 ? page : undefined)}">${label}</a>`;
  return markup`<nav class="pager" aria-label="Pages of uploads">${view.page > 1 ? link(view.page - 1, "← Newer", "prev") : muted("← Newer")} <span>${shown}</span> ${view.page < view.pages ? link(view.page + 1, "Older →", "next") : muted("Older →")}</nav>`;
}

export function renderUploads(view: UploadsView): PageView {
  const rows = view.rows.map(
    (r) => markup`<tr>
<td>${timeAgo(r.at, view.now)}</td>
<td>${badge(r.state, r.stateLabel)}${r.infrastructureFailure ? markup` <span class="muted small">(infrastructure failure: not counted)</span>` : ""}</td>
<td>${r.commit ? markup`<code title="${r.commit}">${r.commit.slice(0, 7)}</code>` : muted("—")}${r.branch ? markup` <span class="muted">on</span> ${r.branch}` : ""}${r.prNumber !== null ? ` · PR #${r.prNumber}` : ""}</td>
<td>${job(r)}</td>
<td class="num">${r.files}</td>
<td class="num">${r.passed}</td>
<td class="num">${r.failed === 0 ? muted("0") : badge("failed", String(r.failed))}</td>
<td class="num">${r.skipped}</td>
<td>${r.problems.length === 0 ? muted("none") : markup`<ul class="plain">${r.problems.map((p) => markup`<li>${p}</li>`)}</ul>`}</td>
</tr>
`,
  );
  const table =
    view.rows.length === 0
      ? markup`<p class="muted">No upload yet.</p>`
      : markup`<table>
<caption class="visually-hidden">Uploads of ${view.name}, newest first</caption>
<thead><tr><th scope="col">Received</th><th scope="col">State</th><th scope="col">Commit</th><th scope="col">Job</th><th scope="col" class="num">Files</th><th scope="col" class="num">Passed</th><th scope="col" class="num">Failed</th><th scope="col" class="num">Skipped</th><th scope="col">Errors</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`;
  return {
    title: `Uploads · ${view.name}`,
    section: "uploads",
    breadcrumbs: [
      { label: "Uploads", href: urls.uploads(view.org) },
      { label: view.name, href: urls.repository(view.org, view.repo) },
      { label: "Uploads" },
    ],
    main: markup`<h1>Uploads <span class="muted">${view.name}</span></h1>
<p class="muted">Test results sent by CI, newest first. <a href="${urls.repository(view.org, view.repo)}">Test health of this repository</a></p>
${table}
${pager(view)}`,
  };
}

/** Uploads without a repository: the repositories to choose from. */
export function renderUploadsIndex(
  org: string,
  repositories: readonly { repo: RepoRef; tests: number }[],
): PageView {
  const list =
    repositories.length === 0
      ? markup`<p class="muted">No repository has sent test results yet.</p>`
      : markup`<ul>${repositories.map(
          (r) =>
            markup`<li><a href="${urls.uploads(org, r.repo)}">${repositoryName(r.repo)}</a> <span class="muted">${plural(r.tests, "test")}</span></li>`,
        )}</ul>`;
  return {
    title: `${org} · Uploads`,
    section: "uploads",
    breadcrumbs: [{ label: "Uploads" }],
    main: markup`<h1>Uploads</h1>
<p>Choose a repository to see its uploads.</p>
${list}`,
  };
}
