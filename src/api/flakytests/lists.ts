import { Type, type Static } from "typebox";
import type { Services } from "../../app.js";
import { TestListStore } from "../../db/stores/test-lists.js";
import type { TestCaseRow, TestFigures } from "../../db/stores/test-views.js";
import { isoTime } from "../../lib/clock.js";
import { ApiError } from "../../lib/errors.js";
import type { PageQueryScope } from "../../lib/page-tokens.js";
import type { HealthStatus } from "../../testhealth/monitors.js";
import { quarantineSetting, type QuarantineOverride } from "../../testhealth/quarantine.js";
import {
  presentFailingTest,
  presentTest,
  type PresentationContext,
} from "../../testhealth/test-presenter.js";
import { CaseInsensitiveEnum, COMMON_ERRORS, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { flakyTestsContext, type FlakyTestsRequestContext } from "./context.js";
import { DateTime, OrgRepoFields, PageQuerySchema, PageSchema } from "./schemas.js";
import { FailingTestSchema, QuarantinedTestSchema, UnhealthyTestSchema } from "./test-schemas.js";
import { HOUR_MS as HOUR } from "../../lib/time.js";

const MAX_WINDOW_MS = 7 * 24 * HOUR;
const UNHEALTHY_STATUSES = ["FLAKY", "BROKEN"] as const;

const ListFailingBody = Type.Object({
  ...OrgRepoFields,
  start_time: DateTime("Inclusive; at most 7 days before `end_time`."),
  end_time: DateTime("Exclusive; later than `start_time`, at most 7 days after it."),
  page_query: PageQuerySchema,
});

const ListUnhealthyBody = Type.Object({
  ...OrgRepoFields,
  page_query: PageQuerySchema,
  status: CaseInsensitiveEnum(UNHEALTHY_STATUSES, "Which unhealthy tests to list."),
});

const ListQuarantinedBody = Type.Object({ ...OrgRepoFields, page_query: PageQuerySchema });

type QuarantinedTest = Static<typeof QuarantinedTestSchema>;

/**
 * An RFC 3339 time as epoch milliseconds, keeping digits beyond the millisecond (Date.parse drops
 * them) so that the window's bounds are exact for runs stored in whole milliseconds.
 */
function parseTime(text: string): number {
  const ms = Date.parse(text);
  const extra = /\.\d{3}(\d+)/.exec(text)?.[1];
  return extra === undefined ? ms : ms + Number(`0.${extra}`);
}

/**
 * `[start_time, end_time)`, as whole milliseconds: a run at `t` (an integer) is in the window
 * when `ceil(start) <= t < ceil(end)`. Refuses an empty or reversed window and one longer than
 * 7 days (docs/contract.md §3).
 */
function failingWindow(body: { start_time: string; end_time: string }): {
  start: number;
  end: number;
} {
  const start = parseTime(body.start_time);
  const end = parseTime(body.end_time);
  // The schema checked the format; a leap second (":60") is the one form left that has no time.
  if (Number.isNaN(start)) throw ApiError.invalid("start_time", "is not a time this service reads");
  if (Number.isNaN(end)) throw ApiError.invalid("end_time", "is not a time this service reads");
  if (start >= end) {
    throw new ApiError("invalid_request", "start_time must be earlier than end_time.", [
      { path: "start_time", message: "must be earlier than end_time" },
    ]);
  }
  if (end - start > MAX_WINDOW_MS) {
    throw new ApiError("invalid_request", "end_time must be at most 7 days after start_time.", [
      { path: "end_time", message: "must be at most 7 days after start_time" },
    ]);
  }
  return { start: Math.ceil(start), end: Math.ceil(end) };
}

function scopeOf(
  endpoint: string,
  context: FlakyTestsRequestContext,
  filters: string,
): PageQueryScope {
  return {
    endpoint,
    organizationId: context.principal.organizationId,
    repositoryId: context.repository.id,
    filters,
  };
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

function noFigures(prsImpacted7d: number): TestFigures {
  return {
    failureRate7d: 0,
    failureRate24h: 0,
    runs7d: 0,
    runs24h: 0,
    prsImpacted7d,
    mostCommonFailures: [],
  };
}

function presentQuarantinedTest(
  row: TestCaseRow,
  quarantinedAt: number,
  context: PresentationContext,
): QuarantinedTest {
  const setting = quarantineSetting(
    context.quarantine,
    row.quarantineOverride as QuarantineOverride,
    row.status as HealthStatus,
  );
  return {
    name: row.name,
    parent: row.parent,
    file: row.file,
    classname: row.classname,
    codeowners: row.file && context.codeowners ? context.codeowners.ownersOf(row.file) : [],
    quarantined_at: isoTime(quarantinedAt),
    status_last_updated_at: isoTime(row.statusChangedAt),
    test_case_id: row.id,
    variant: row.variant,
    quarantine_setting: setting ?? "AUTO_QUARANTINE",
    status: row.status.toUpperCase(),
  };
}

/** list-failing-tests, list-unhealthy-tests, list-quarantined-tests (api.md, docs/contract.md §3). */
export function registerListRoutes(app: ApiApp, services: Services): void {
  const lists = new TestListStore(services.database.db, services.database.dialect);
  const views = services.stores.testViews;

  app.post(
    "/v1/flaky-tests/list-failing-tests",
    {
      schema: {
        tags: ["Flaky tests"],
        summary: "Tests that failed within a time range",
        description:
          "Distinct tests with at least one failed run (every failed attempt, infrastructure-failure uploads included) at a time in `[start_time, end_time)`; the window is at most 7 days. Most failures in the window first, ties by test id. Rates and PRs impacted are those of the 7 days (24 hours) before now.",
        body: ListFailingBody,
        response: {
          200: Type.Object({ tests: Type.Array(FailingTestSchema), page: PageSchema }),
          ...errorResponses(...COMMON_ERRORS, 403, 404),
        },
      },
    },
    async (request) => {
      const { body } = request;
      const window = failingWindow(body);
      const context = await flakyTestsContext(services, request, body);
      const scope = scopeOf(
        "list-failing-tests",
        context,
        `start=${window.start};end=${window.end}`,
      );
      const { page_size: size, page_token: token } = body.page_query;
      const offset = await services.pager.offset(scope, token);
      const page = await lists.failing(context.repository.id, window, offset, size);
      const keys = page.rows.map((r) => r.key);
      const [rows, figures] = await Promise.all([
        views.rowsByKey(keys),
        views.figures(keys, services.clock.now()),
      ]);
      return {
        tests: inOrder(page.rows, rows).map(({ entry, row }) =>
          presentFailingTest(row, figures.get(entry.key) ?? noFigures(0), context.presentation),
        ),
        page: await services.pager.page(scope, offset, size, page.total),
      };
    },
  );

  app.post(
    "/v1/flaky-tests/list-unhealthy-tests",
    {
      schema: {
        tags: ["Flaky tests"],
        summary: "Flaky or broken tests",
        description:
          "Tests whose current status is `status` (any letter case). Most `pull_requests_impacted_last_7d` first, ties by test id.",
        body: ListUnhealthyBody,
        response: {
          200: Type.Object({ tests: Type.Array(UnhealthyTestSchema), page: PageSchema }),
          ...errorResponses(...COMMON_ERRORS, 403, 404),
        },
      },
    },
    async (request) => {
      const { body } = request;
      const status = body.status.toUpperCase() as (typeof UNHEALTHY_STATUSES)[number];
      const context = await flakyTestsContext(services, request, body);
      const scope = scopeOf("list-unhealthy-tests", context, `status=${status}`);
      const { page_size: size, page_token: token } = body.page_query;
      const offset = await services.pager.offset(scope, token);
      const page = await lists.unhealthy(
        context.repository.id,
        status === "FLAKY" ? "flaky" : "broken",
        services.clock.now(),
        offset,
        size,
      );
      const rows = await views.rowsByKey(page.rows.map((r) => r.key));
      return {
        tests: inOrder(page.rows, rows).map(({ entry, row }) =>
          presentTest(row, noFigures(entry.prsImpacted7d), context.presentation),
        ),
        page: await services.pager.page(scope, offset, size, page.total),
      };
    },
  );

  app.post(
    "/v1/flaky-tests/list-quarantined-tests",
    {
      schema: {
        tags: ["Flaky tests"],
        summary: "Quarantined tests",
        description:
          "Tests that are quarantined: by an `ALWAYS_QUARANTINE` override, or automatically while flaky (when the repository quarantines automatically). None when quarantining is off. Most recently quarantined first, ties by test id.",
        body: ListQuarantinedBody,
        response: {
          200: Type.Object({
            quarantined_tests: Type.Array(QuarantinedTestSchema),
            page: PageSchema,
          }),
          ...errorResponses(...COMMON_ERRORS, 403, 404),
        },
      },
    },
    async (request) => {
      const { body } = request;
      const context = await flakyTestsContext(services, request, body);
      const scope = scopeOf("list-quarantined-tests", context, "");
      const { page_size: size, page_token: token } = body.page_query;
      const offset = await services.pager.offset(scope, token);
      const page = await lists.quarantined(
        context.repository.id,
        context.settings.quarantine,
        offset,
        size,
      );
      const rows = await views.rowsByKey(page.rows.map((r) => r.key));
      return {
        quarantined_tests: inOrder(page.rows, rows).map(({ entry, row }) =>
          presentQuarantinedTest(row, entry.quarantinedAt, context.presentation),
        ),
        page: await services.pager.page(scope, offset, size, page.total),
      };
    },
  );
}
