/**
 * The environment a check's command sees. Pure. The runner's own, less what the server keeps for
 * itself (`MAINLINE_*`, `DATABASE_URL`: a check runs the code under test), plus `CI`, `MAINLINE`
 * and the run's `MAINLINE_*` variables. A variable added here goes into the table of docs/api.md,
 * "What a check sees".
 */
import type { CiRunRequest } from "../../../mergequeue/providers.js";

const SERVER_ONLY = /^(MAINLINE_|DATABASE_URL$)/;

/** What a localization run's checks are told of the batch run's failures. */
export interface FailFirstEnvironment {
  /** The failed-tests file (absent when it could not be written). */
  file: string | undefined;
  /** The checks that failed in the batch run. */
  checks: string[];
}

export function checkEnvironment(
  parent: NodeJS.ProcessEnv,
  request: CiRunRequest,
  check: string,
  failFirst?: FailFirstEnvironment,
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
    ...(failFirst?.file === undefined ? {} : { MAINLINE_FAILED_TESTS_FILE: failFirst.file }),
    ...(failFirst === undefined ? {} : { MAINLINE_FAIL_FIRST_CHECKS: failFirst.checks.join(",") }),
  };
}
