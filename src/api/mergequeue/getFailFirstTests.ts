import { Type } from "typebox";
import { ApiError } from "../../lib/errors.js";
import type { FailFirstService, RunQuestion } from "../../mergequeue/fail-first.js";
import { failedTestsFileText } from "../../testhealth/failed-tests-file.js";
import { principalOf } from "../plugins/auth.js";
import { BranchName, COMMON_ERRORS, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { QueueAddressFields } from "./schemas.js";

export const GetFailFirstTestsBody = Type.Object({
  ...QueueAddressFields,
  runId: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description:
        "The test run, as its checks see it (`MAINLINE_RUN_ID`). Either this or `testBranch`.",
    }),
  ),
  testBranch: Type.Optional(
    BranchName(
      "The test branch a CI job runs on (a slot's branch serves one run after another: the newest run on it is meant). Either this or `runId`.",
    ),
  ),
  sha: Type.Optional(
    Type.String({
      pattern: "^[0-9a-fA-F]{40}([0-9a-fA-F]{24})?$",
      description:
        "With `testBranch`: the commit the job tests (full sha); the run on that branch that tested it.",
    }),
  ),
});

const FailedTestSchema = Type.Object({
  id: Type.String({ description: "The test's id (as test health's pages and lists use it)." }),
  name: Type.String(),
  classname: Type.String({ description: '`""` when the report gave none.' }),
  parentName: Type.String({ description: 'The test suite\'s name; `""` when none.' }),
  file: Type.Union([Type.String(), Type.Null()], {
    description: "Relative to the repository's root; null when the report gave none.",
  }),
});

export const GetFailFirstTestsResponse = Type.Object({
  runId: Type.String({ description: "The run asked about." }),
  fromRunId: Type.Union([Type.String(), Type.Null()], {
    description:
      "The failed batch run whose failures this localization run runs first; null: the run is no localization run, and runs nothing first.",
  }),
  checks: Type.Array(Type.String(), { description: "The checks that failed in `fromRunId`." }),
  tests: Type.Array(FailedTestSchema, {
    description: "The tests whose final attempt failed there, as test health stored them.",
  }),
  complete: Type.Boolean({
    description:
      "False while uploads since `fromRunId` started are still being processed: the list may grow; ask again.",
  }),
  truncated: Type.Boolean({ description: "More than 1000 tests failed; the first are listed." }),
  failedTestsFile: Type.String({
    description:
      "`tests` as the lines of the failed-tests file (`MAINLINE_FAILED_TESTS_FILE`, docs/fail-first.md).",
  }),
});

/** Which run the body names: exactly one of `runId` and `testBranch`; `sha` only with the latter. */
function runQuestion(body: {
  runId?: string | undefined;
  testBranch?: string | undefined;
  sha?: string | undefined;
}): RunQuestion {
  const { runId, testBranch, sha } = body;
  if (runId !== undefined && testBranch !== undefined) {
    throw ApiError.invalid("runId", "and testBranch name the run twice: send one of them");
  }
  if (runId !== undefined) {
    if (sha !== undefined) throw ApiError.invalid("sha", "goes with testBranch, not runId");
    return { runId };
  }
  if (testBranch === undefined) {
    throw ApiError.invalid("runId", "or testBranch is required: which run is asking");
  }
  return { testBranch, sha: sha?.toLowerCase() };
}

export function registerGetFailFirstTests(app: ApiApp, failFirst: FailFirstService): void {
  app.post(
    "/v1/getFailFirstTests",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "The failed tests a localization run runs first (Mainline)",
        description:
          "For a run that tests a prefix of a failed batch: the checks and tests that failed in the batch run, from the JUnit reports test health has of the commit it tested. Any other run answers `fromRunId: null` and no tests. 404 for a queue or run this organization does not have.",
        body: GetFailFirstTestsBody,
        response: { 200: GetFailFirstTestsResponse, ...errorResponses(...COMMON_ERRORS, 404) },
      },
    },
    async (request) => {
      const { repo, targetBranch } = request.body;
      const found = await failFirst.tests(
        principalOf(request),
        { repo, targetBranch },
        runQuestion(request.body),
      );
      return {
        runId: found.runId,
        fromRunId: found.fromRunId,
        checks: found.checks,
        tests: found.tests.map((t) => ({
          id: t.id,
          name: t.name,
          classname: t.classname,
          parentName: t.parent,
          file: t.file,
        })),
        complete: found.complete,
        truncated: found.truncated,
        failedTestsFile: failedTestsFileText(found.tests),
      };
    },
  );
}
