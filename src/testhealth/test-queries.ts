/**
 * The read side of test health: the Flaky Tests lists, a test's details and runs, the uploads
 * of a repository. What the HTTP routes, the test page (and a dashboard) call; each answer is
 * domain records plus the page it is, for a presenter to shape.
 */
import type { Clock } from "../lib/clock.js";
import { ApiError } from "../lib/errors.js";
import type { PageInfo, PageQueryScope } from "../lib/page-tokens.js";
import type { RepoRef, Repository } from "../organizations/repositories.js";
import type { Principal } from "../organizations/service.js";
import type { Pager } from "./pager.js";
import type {
  LinkedTicketRecords,
  TestDetailRecords,
  TestListRecords,
  TestSettingsRecords,
  TestViewRecords,
  UploadRecords,
} from "./ports.js";
import type {
  HistoryRecord,
  LinkedTicketState,
  RunRecord,
  StoredTestSettings,
  TestCaseRow,
  TestFigures,
  UploadRecord,
} from "./records.js";
import type { RepositoryAccess } from "./repository-access.js";

/** A test's status history shows at most this many entries, newest first. */
export const HISTORY_LIMIT = 100;

/** The figures of a test that has none (no counted run in the windows). */
export function noFigures(prsImpacted7d = 0): TestFigures {
  return {
    failureRate7d: 0,
    failureRate24h: 0,
    runs7d: 0,
    runs24h: 0,
    prsImpacted7d,
    mostCommonFailures: [],
  };
}

/** Which repository a request is about, as clients name it (docs/contract.md §2). */
export interface RepositoryQuery {
  orgUrlSlug: string;
  repo: RepoRef;
}

/** `page_query`: a page size and the token of the page asked for (none or "": the first). */
export interface PageRequest {
  size: number;
  token: string | undefined;
}

/** The repository a request is about and its test-health settings. */
export interface RepositoryScope {
  principal: Principal;
  repository: Repository;
  settings: StoredTestSettings;
}

export interface Paged<T> {
  scope: RepositoryScope;
  items: T[];
  page: PageInfo;
}

export interface TestWithFigures {
  row: TestCaseRow;
  figures: TestFigures;
}

export interface QuarantinedTest {
  row: TestCaseRow;
  /** `override_at` for an ALWAYS_QUARANTINE override, else when the status last changed. */
  quarantinedAt: number;
}

/** Everything get-test-details answers (also what the test's page shows). */
export interface TestDetails extends TestWithFigures {
  history: HistoryRecord[];
  /** The linked ticket's key and state, when it was created through a ticket connection. */
  ticket: LinkedTicketState | undefined;
}

export interface TestPageData {
  scope: RepositoryScope;
  details: TestDetails;
  runs: { total: number; runs: RunRecord[] };
}

export interface TestQueryDependencies {
  access: Pick<RepositoryAccess, "find">;
  settings: Pick<TestSettingsRecords, "get">;
  views: Pick<TestViewRecords, "rowsByKey" | "findById" | "figures">;
  lists: TestListRecords;
  details: Pick<TestDetailRecords, "runsPage" | "statusHistory" | "findTestByRepositoryName">;
  uploads: Pick<UploadRecords, "find" | "list">;
  tickets: LinkedTicketRecords;
  pager: Pick<Pager, "offset" | "page">;
  clock: Clock;
}

/** Rows of the page's keys, in the page's order (a test deleted meanwhile is left out). */
function inOrder<T extends { key: number }>(
  entries: readonly T[],
  rows: Map<number, TestCaseRow>,
): { entry: T; row: TestCaseRow }[] {
  return entries.flatMap((entry) => {
    const row = rows.get(entry.key);
    return row ? [{ entry, row }] : [];
  });
}

export class TestQueryService {
  constructor(private readonly deps: TestQueryDependencies) {}

  /** 403 for another organization's slug, 404 for an unknown repository; its settings. */
  async scope(principal: Principal, query: RepositoryQuery): Promise<RepositoryScope> {
    const repository = await this.deps.access.find(principal, query.orgUrlSlug, query.repo);
    const settings = await this.deps.settings.get(repository.id);
    return { principal, repository, settings };
  }

  /** The test with this id in the scope's repository; 404 when there is none. */
  async test(scope: RepositoryScope, testId: string): Promise<TestCaseRow> {
    const row = await this.deps.views.findById(scope.repository.id, testId.toLowerCase());
    if (!row) throw new ApiError("not_found", `No test ${testId} in this repository.`);
    return row;
  }

  /** Tests with a failed run in `[start, end)` (whole milliseconds), most failures first. */
  async listFailing(
    principal: Principal,
    query: RepositoryQuery & { window: { start: number; end: number }; page: PageRequest },
  ): Promise<Paged<TestWithFigures>> {
    const { window } = query;
    return this.paged(
      principal,
      query,
      "list-failing-tests",
      `start=${window.start};end=${window.end}`,
      async (scope, offset, size) => {
        const page = await this.deps.lists.failing(scope.repository.id, window, offset, size);
        const keys = page.rows.map((r) => r.key);
        const [rows, figures] = await Promise.all([
          this.deps.views.rowsByKey(keys),
          this.deps.views.figures(keys, this.deps.clock.now()),
        ]);
        const items = inOrder(page.rows, rows).map(({ entry, row }) => ({
          row,
          figures: figures.get(entry.key) ?? noFigures(),
        }));
        return { total: page.total, items };
      },
    );
  }

  /** Flaky (or broken) tests, most PRs impacted in 7 days first. */
  async listUnhealthy(
    principal: Principal,
    query: RepositoryQuery & { status: "flaky" | "broken"; page: PageRequest },
  ): Promise<Paged<TestWithFigures>> {
    return this.paged(
      principal,
      query,
      "list-unhealthy-tests",
      `status=${query.status.toUpperCase()}`,
      async (scope, offset, size) => {
        const page = await this.deps.lists.unhealthy(
          scope.repository.id,
          query.status,
          this.deps.clock.now(),
          offset,
          size,
        );
        const rows = await this.deps.views.rowsByKey(page.rows.map((r) => r.key));
        const items = inOrder(page.rows, rows).map(({ entry, row }) => ({
          row,
          figures: noFigures(entry.prsImpacted7d),
        }));
        return { total: page.total, items };
      },
    );
  }

  /** Quarantined tests (none when quarantining is off), most recently quarantined first. */
  async listQuarantined(
    principal: Principal,
    query: RepositoryQuery & { page: PageRequest },
  ): Promise<Paged<QuarantinedTest>> {
    return this.paged(
      principal,
      query,
      "list-quarantined-tests",
      "",
      async (scope, offset, size) => {
        const page = await this.deps.lists.quarantined(
          scope.repository.id,
          scope.settings.quarantine,
          offset,
          size,
        );
        const rows = await this.deps.views.rowsByKey(page.rows.map((r) => r.key));
        const items = inOrder(page.rows, rows).map(({ entry, row }) => ({
          row,
          quarantinedAt: entry.quarantinedAt,
        }));
        return { total: page.total, items };
      },
    );
  }

  /** A test, its figures and its status history (newest first, at most `HISTORY_LIMIT`). */
  async testDetails(
    principal: Principal,
    query: RepositoryQuery & { testId: string },
  ): Promise<{ scope: RepositoryScope; details: TestDetails }> {
    const scope = await this.scope(principal, query);
    const row = await this.test(scope, query.testId);
    return { scope, details: await this.loadDetails(row) };
  }

  /** A test's runs, newest first; a page token is bound to the test. */
  async testRuns(
    principal: Principal,
    query: RepositoryQuery & { testId: string; page: PageRequest },
  ): Promise<Paged<RunRecord>> {
    const scope = await this.scope(principal, query);
    const row = await this.test(scope, query.testId);
    const pageScope = this.pageScope("list-test-runs", scope, `test_id=${row.id}`);
    const offset = await this.deps.pager.offset(pageScope, query.page.token);
    const page = await this.deps.details.runsPage(row.key, offset, query.page.size);
    return {
      scope,
      items: page.runs,
      page: await this.deps.pager.page(pageScope, offset, query.page.size, page.total),
    };
  }

  /**
   * What a test's HTML page shows: the test found by its id in a repository of the caller's
   * organization named `owner/name` (on `host` when given), with its latest runs; undefined when
   * there is no such test.
   */
  async testPage(
    principal: Principal,
    query: { testId: string; repo: { owner: string; name: string; host?: string | undefined } },
    runs: number,
  ): Promise<TestPageData | undefined> {
    const found = await this.deps.details.findTestByRepositoryName(
      principal.organizationId,
      query.testId.toLowerCase(),
      query.repo,
    );
    if (!found) return undefined;
    const { repository, test } = found;
    const settings = await this.deps.settings.get(repository.id);
    const [details, latest] = await Promise.all([
      this.loadDetails(test),
      this.deps.details.runsPage(test.key, 0, runs),
    ]);
    return { scope: { principal, repository, settings }, details, runs: latest };
  }

  /** Uploads of a repository with their state, newest first. */
  async listUploads(
    principal: Principal,
    query: RepositoryQuery & { page: PageRequest },
  ): Promise<Paged<UploadRecord>> {
    return this.paged(principal, query, "list-uploads", "", (scope, offset, size) =>
      this.deps.uploads
        .list(scope.repository.id, offset, size)
        .then((page) => ({ total: page.total, items: page.uploads })),
    );
  }

  /** One upload of the repository; 404 when it is another repository's or unknown. */
  async getUpload(
    principal: Principal,
    query: RepositoryQuery & { uploadId: string },
  ): Promise<UploadRecord> {
    const repository = await this.deps.access.find(principal, query.orgUrlSlug, query.repo);
    const upload = await this.deps.uploads.find(query.uploadId, principal.organizationId);
    if (!upload || upload.repositoryId !== repository.id) {
      throw new ApiError("not_found", `No upload ${query.uploadId} in this repository.`);
    }
    return upload;
  }

  private async loadDetails(row: TestCaseRow): Promise<TestDetails> {
    const [figures, history, ticket] = await Promise.all([
      this.deps.views.figures([row.key], this.deps.clock.now()),
      this.deps.details.statusHistory(row.key, HISTORY_LIMIT),
      row.ticket === null ? undefined : this.deps.tickets.createdTicket(row.key),
    ]);
    return { row, figures: figures.get(row.key) ?? noFigures(), history, ticket };
  }

  private pageScope(endpoint: string, scope: RepositoryScope, filters: string): PageQueryScope {
    return {
      endpoint,
      organizationId: scope.principal.organizationId,
      repositoryId: scope.repository.id,
      filters,
    };
  }

  /** One page of a list: the token read against the list and its filters, the next one signed. */
  private async paged<T>(
    principal: Principal,
    query: RepositoryQuery & { page: PageRequest },
    endpoint: string,
    filters: string,
    load: (
      scope: RepositoryScope,
      offset: number,
      size: number,
    ) => Promise<{ total: number; items: T[] }>,
  ): Promise<Paged<T>> {
    const scope = await this.scope(principal, query);
    const pageScope = this.pageScope(endpoint, scope, filters);
    const { size, token } = query.page;
    const offset = await this.deps.pager.offset(pageScope, token);
    const { total, items } = await load(scope, offset, size);
    return { scope, items, page: await this.deps.pager.page(pageScope, offset, size, total) };
  }
}
