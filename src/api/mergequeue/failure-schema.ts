/** Why a pull request failed, as `getSubmittedPullRequest(s)` answer it (a Mainline extension). */
import { Type, type Static } from "typebox";
import type { PullRequestFailure } from "../../mergequeue/failure-explanation.js";
import { isoTime } from "../../lib/clock.js";
import { VERDICT_ORDER } from "../../testhealth/failure-verdicts.js";
import { OutputEnum } from "../schemas.js";

const FailedTestSchema = Type.Object({
  id: Type.String({ description: "The test's id (test health's pages and the Flaky Tests API)." }),
  name: Type.String(),
  classname: Type.String({ description: '`""` when the report gave none.' }),
  parentName: Type.String({ description: 'The test suite\'s name; `""` when none.' }),
  file: Type.Union([Type.String(), Type.Null()]),
  summary: Type.Union([Type.String(), Type.Null()], {
    description: "The first line of its failure message; null when the report gave none.",
  }),
  verdict: OutputEnum(
    VERDICT_ORDER,
    "Whose red it is: `failing` (not known flaky or broken: most likely the pull request's), `new` (first seen since the pull request was submitted), `broken` (broken on the stable branch too), `flaky` (known flaky), `quarantined` (known flaky and quarantined).",
  ),
});

export const FailureSchema = Type.Object(
  {
    reason: Type.String({ description: "The reason code of the transition that failed it." }),
    message: Type.String({ description: "That reason in words." }),
    detail: Type.Union([Type.String(), Type.Null()]),
    at: Type.String({ format: "date-time" }),
    runId: Type.Union([Type.String(), Type.Null()], {
      description: "The run that failed it (a `testRunId`); null when no run did.",
    }),
    failedChecks: Type.Array(
      Type.Object({
        name: Type.String(),
        conclusion: Type.String(),
        url: Type.Union([Type.String(), Type.Null()]),
      }),
    ),
    failedTests: Type.Array(FailedTestSchema, {
      description:
        "The tests that failed in that run (from its uploaded JUnit), the pull request's own first; at most 50.",
    }),
    failedTestsTruncated: Type.Boolean({ description: "More tests failed than are listed." }),
    testResultsPending: Type.Boolean({
      description: "Test results of the run are still being processed: ask again for more.",
    }),
    testUploads: Type.Integer({ description: "Processed test result uploads of the run." }),
    log: Type.Union(
      [
        Type.Object({
          check: Type.String(),
          lines: Type.Array(Type.String(), { description: "The log's last lines, oldest first." }),
          truncated: Type.Boolean({ description: "Lines before these were left out." }),
        }),
        Type.Null(),
      ],
      { description: "The end of the first failing check's log, where Mainline's CI ran it." },
    ),
  },
  {
    description:
      "Mainline extension: why it failed (state `failed` or `pending_failure`); absent otherwise.",
  },
);
export type FailureBody = Static<typeof FailureSchema>;

export function presentFailure(failure: PullRequestFailure): FailureBody {
  return {
    reason: failure.reason,
    message: failure.message,
    detail: failure.detail,
    at: isoTime(failure.at),
    runId: failure.runId,
    failedChecks: failure.failedChecks,
    failedTests: failure.tests.map((test) => ({
      id: test.id,
      name: test.name,
      classname: test.classname,
      parentName: test.parent,
      file: test.file,
      summary: test.summary,
      verdict: test.verdict,
    })),
    failedTestsTruncated: failure.testsTruncated,
    testResultsPending: failure.testsPending,
    testUploads: failure.uploads,
    log: failure.log,
  };
}
