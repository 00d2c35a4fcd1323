import { Type } from "typebox";
import { ApiError } from "../../lib/errors.js";
import { CaseInsensitiveEnum, COMMON_ERRORS, errorResponses } from "../schemas.js";
import { principalOf } from "../plugins/auth.js";
import type { ApiApp } from "../types.js";
import { baseUrlOf, pageRequest, repositoryQuery, type FlakyTestsDependencies } from "./context.js";
import {
  presentationOf,
  presentFailingTest,
  presentQuarantinedTest,
  presentTest,
} from "./presenters/tests.js";
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
 * `[start_time, end_time)`, as whole milliseconds: a run at `t` (an integer) is in the window when
 * `ceil(start) <= t < ceil(end)`. Refuses an empty or reversed window and one longer than 7 days.
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

/** list-failing-tests, list-unhealthy-tests, list-quarantined-tests. */
export function registerListRoutes(
  app: ApiApp,
  deps: Pick<FlakyTestsDependencies, "queries" | "publicUrl">,
): void {
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
      const listed = await deps.queries.listFailing(principalOf(request), {
        ...repositoryQuery(body),
        window,
        page: pageRequest(body.page_query),
      });
      const context = presentationOf(listed.scope, baseUrlOf(deps.publicUrl, request));
      return {
        tests: listed.items.map(({ row, figures }) => presentFailingTest(row, figures, context)),
        page: listed.page,
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
      const listed = await deps.queries.listUnhealthy(principalOf(request), {
        ...repositoryQuery(body),
        status: status === "FLAKY" ? "flaky" : "broken",
        page: pageRequest(body.page_query),
      });
      const context = presentationOf(listed.scope, baseUrlOf(deps.publicUrl, request));
      return {
        tests: listed.items.map(({ row, figures }) => presentTest(row, figures, context)),
        page: listed.page,
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
      const listed = await deps.queries.listQuarantined(principalOf(request), {
        ...repositoryQuery(body),
        page: pageRequest(body.page_query),
      });
      const context = presentationOf(listed.scope, baseUrlOf(deps.publicUrl, request));
      return {
        quarantined_tests: listed.items.map(({ row, quarantinedAt }) =>
          presentQuarantinedTest(row, quarantinedAt, context),
        ),
        page: listed.page,
      };
    },
  );
}
