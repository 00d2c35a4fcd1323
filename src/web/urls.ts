/**
 * The dashboard's URL scheme: every page under its organization, view state (filters, sort, page,
 * range, view) in the query string so that a view can be bookmarked and shared. Pages link to each
 * other only through these functions.
 */
import type { RepoRef } from "../organizations/repositories.js";
import { pathWithQuery, segment } from "./html.js";

/** GitHub is the default host: its repositories are named without `host` in links. */
export const DEFAULT_HOST = "github.com";

/** `repo=owner/name`, and `host=` unless it is the default: how pages name a repository. */
export function repoQuery(repo: RepoRef): { repo: string; host: string | undefined } {
  return {
    repo: `${repo.owner}/${repo.name}`,
    host: repo.host.toLowerCase() === DEFAULT_HOST ? undefined : repo.host,
  };
}

/** What the repository page's tests table shows. */
export interface TestTableView {
  status?: string | undefined;
  owner?: string | undefined;
  q?: string | undefined;
  sort?: string | undefined;
  page?: number | undefined;
}

const org = (slug: string) => `/${segment(slug)}`;

export const urls = {
  /** The dashboard: the organization's home when signed in, else the sign-in form. */
  root: () => "/",
  signIn: (next?: string) => pathWithQuery("/sign-in", { next }),
  signOut: () => "/sign-out",
  /** The organization's home. */
  home: (slug: string) => org(slug),
  /** Tests: the repositories with their test health. */
  tests: (slug: string) => `${org(slug)}/flaky-tests`,
  /** A repository's test health: figures, trends, the tests table. */
  repository: (slug: string, repo: RepoRef, view: TestTableView = {}) =>
    pathWithQuery(`${org(slug)}/flaky-tests/repo`, { ...repoQuery(repo), ...view }),
  /** A test (every test's `html_url`); `note`: what a form just saved. */
  test: (slug: string, testId: string, repo: RepoRef, note?: string) =>
    pathWithQuery(`${org(slug)}/flaky-tests/test/${segment(testId)}`, {
      ...repoQuery(repo),
      note,
    }),
  /** A form of the test page: its quarantine override, its ticket, creating its ticket. */
  testForm: (
    slug: string,
    testId: string,
    repo: RepoRef,
    form: "quarantine" | "ticket" | "create-ticket",
  ) => pathWithQuery(`${org(slug)}/flaky-tests/test/${segment(testId)}/${form}`, repoQuery(repo)),
  /** Uploads: of one repository, or the repositories to choose from. */
  uploads: (slug: string, repo?: RepoRef, page?: number) =>
    pathWithQuery(`${org(slug)}/flaky-tests/uploads`, { ...(repo ? repoQuery(repo) : {}), page }),
  /** Merge queues: every queue with its state. */
  queues: (slug: string) => `${org(slug)}/merge-queue`,
  /** A queue: `view` is `graph` (default) or `list`. */
  queue: (slug: string, repo: RepoRef, branch: string, view?: "graph" | "list") =>
    pathWithQuery(`${org(slug)}/merge-queue/queue`, { ...repoQuery(repo), branch, view }),
  /** A pull request in a queue. */
  pullRequest: (slug: string, repo: RepoRef, branch: string, number: number) =>
    pathWithQuery(`${org(slug)}/merge-queue/pr/${number}`, { ...repoQuery(repo), branch }),
  /** A queue's health over a range (`7d`, `30d`, `90d`). */
  queueHealth: (slug: string, repo: RepoRef, branch: string, range?: string) =>
    pathWithQuery(`${org(slug)}/merge-queue/health`, { ...repoQuery(repo), branch, range }),
  /** Webhooks: the endpoints and the form to add one (which it posts to); `note`: what was done. */
  webhooks: (slug: string, note?: string) => pathWithQuery(`${org(slug)}/webhooks`, { note }),
  /** A webhook endpoint: its settings, actions and recent deliveries. */
  webhook: (slug: string, endpointId: string, note?: string) =>
    pathWithQuery(`${org(slug)}/webhooks/${segment(endpointId)}`, { note }),
  /** A webhook endpoint's forms. */
  webhookForm: (
    slug: string,
    endpointId: string,
    form: "test" | "enable" | "disable" | "delete" | "resend",
  ) => `${org(slug)}/webhooks/${segment(endpointId)}/${form}`,
  /** Ticket connections: the list and the form to add one; `note`: what was done. */
  tickets: (slug: string, note?: string) => pathWithQuery(`${org(slug)}/tickets`, { note }),
  /** A ticket connection's forms. */
  ticketForm: (slug: string, connectionId: string, form: "delete") =>
    `${org(slug)}/tickets/${segment(connectionId)}/${form}`,
};
