/** The built-in CI runner's runs and logs, per merge queue. */
import { Type, type Static } from "typebox";
import type { CiRunRecord } from "../../mergequeue/ci-run-records.js";
import type { CiRunService } from "../../ci/service.js";
import { QueueAddressFields } from "../mergequeue/schemas.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const NullableTime = Type.Union([Type.String({ format: "date-time" }), Type.Null()]);

const CiRun = Type.Object({
  runId: Type.String(),
  status: Type.String({
    description: "`queued`, `running`, `passed`, `failed`, `cancelled` or `error`.",
  }),
  sha: Type.String({ description: "The tested commit." }),
  testBranch: Type.String(),
  prNumbers: Type.Array(Type.Integer()),
  checks: Type.Array(
    Type.Object({
      name: Type.String(),
      status: Type.String({
        description:
          "`queued`, `running`, or how it ended: `success`, `failure`, `timed_out`, `cancelled`.",
      }),
      exitCode: Type.Union([Type.Integer(), Type.Null()]),
      startedAt: NullableTime,
      finishedAt: NullableTime,
    }),
  ),
  error: Type.Union([Type.Object({ reason: Type.String(), message: Type.String() }), Type.Null()]),
  flakyOnly: Type.Boolean(),
  createdAt: Type.String({ format: "date-time" }),
  finishedAt: NullableTime,
});

/** A run of the built-in CI runner as the API answers it. */
export type CiRunView = Static<typeof CiRun>;

function present(run: CiRunRecord): CiRunView {
  return {
    runId: run.runId,
    status: run.status,
    sha: run.request.sha,
    testBranch: run.request.testBranch,
    prNumbers: run.request.prNumbers,
    checks: run.checks.map((c) => ({
      name: c.name,
      status: c.status,
      exitCode: c.exitCode,
      startedAt: iso(c.startedAt),
      finishedAt: iso(c.finishedAt),
    })),
    error: run.error,
    flakyOnly: run.flakyOnly,
    createdAt: new Date(run.createdAt).toISOString(),
    finishedAt: iso(run.finishedAt),
  };
}

export function registerCiRoutes(app: ApiApp, runs: CiRunService): void {
  app.post(
    "/v1/local/listCiRuns",
    {
      schema: {
        tags: ["Built-in CI"],
        summary: "List a merge queue's runs of the built-in CI runner",
        description: "Newest first, with every check's status.",
        body: Type.Object({
          ...QueueAddressFields,
          take: Type.Optional(
            Type.Integer({ minimum: 1, maximum: 100, description: "Default 20." }),
          ),
        }),
        response: {
          200: Type.Object({ runs: Type.Array(CiRun) }),
          ...errorResponses(...COMMON_ERRORS, 404),
        },
      },
    },
    async (request) => {
      const { repo, targetBranch, take } = request.body;
      const found = await runs.list(principalOf(request), { repo, targetBranch }, take ?? 20);
      return { runs: found.map(present) };
    },
  );

  app.post(
    "/v1/local/getCiLog",
    {
      schema: {
        tags: ["Built-in CI"],
        summary: "Read the log of one check of a built-in CI run",
        description:
          "Everything the check wrote to standard output and standard error, and how it ended.",
        body: Type.Object({
          ...QueueAddressFields,
          runId: Type.String({ minLength: 1, maxLength: 200 }),
          check: Type.String({ minLength: 1, maxLength: 255 }),
        }),
        response: {
          200: Type.Object({ log: Type.String() }),
          ...errorResponses(...COMMON_ERRORS, 404),
        },
      },
    },
    async (request) => {
      const { repo, targetBranch, runId, check } = request.body;
      return { log: await runs.log(principalOf(request), { repo, targetBranch }, runId, check) };
    },
  );
}
