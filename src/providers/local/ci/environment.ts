/**
 * The environment a check's command sees. Pure.
 *
 * The runner's own environment is passed on (PATH, HOME, locale, proxies…) except what the
 * server keeps for itself: `MAINLINE_*` (bootstrap token, data directory) and `DATABASE_URL`,
 * because a check runs the code of the pull requests under test. Added on top:
 *
 * | variable | value |
 * | --- | --- |
 * | `CI` | `true` |
 * | `MAINLINE` | `true` |
 * | `MAINLINE_QUEUE_ID` | the merge queue's id |
 * | `MAINLINE_RUN_ID` | the test run's id |
 * | `MAINLINE_TARGET_BRANCH` | the branch the pull requests merge into, e.g. `main` |
 * | `MAINLINE_TEST_BRANCH` | the branch under test, e.g. `mainline-merge/main/{runId}` |
 * | `MAINLINE_COMMIT` | the commit under test (full sha; the checkout is detached at it) |
 * | `MAINLINE_PR_NUMBERS` | the pull requests in the run, in merge order, comma-separated |
 * | `MAINLINE_CHECK` | the check's `name` |
 */
import type { CiRunRequest } from "../../../mergequeue/providers.js";

const SERVER_ONLY = /^(MAINLINE_|DATABASE_URL$)/;

export function checkEnvironment(
  parent: NodeJS.ProcessEnv,
  request: CiRunRequest,
  check: string,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(parent)) {
    if (!SERVER_ONLY.test(key)) env[key] = value;
  }
  return {
    ...env,
    CI: "true",
    MAINLINE: "true",
    MAINLINE_QUEUE_ID: request.queueId,
    MAINLINE_RUN_ID: request.runId,
    MAINLINE_TARGET_BRANCH: request.targetBranch,
    MAINLINE_TEST_BRANCH: request.testBranch,
    MAINLINE_COMMIT: request.sha,
    MAINLINE_PR_NUMBERS: request.prNumbers.join(","),
    MAINLINE_CHECK: check,
  };
}
