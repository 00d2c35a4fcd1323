import { isoTime } from "../../../lib/clock.js";
import type { RunRecord } from "../../../testhealth/records.js";
import type { PresentedRun } from "../test-detail-schemas.js";

/** A run of a test as list-test-runs (and the test's page) shows it. */
export function presentRun(run: RunRecord): PresentedRun {
  return {
    at: isoTime(run.at),
    status: run.status,
    attempt: run.attempt,
    commit_sha: run.commitSha,
    branch: run.branch,
    pr_number: run.prNumber,
    duration_ms: run.durationMs,
    upload_id: run.uploadId,
    failure_summary: run.failureSummary,
    failure_text: run.failureText,
    infrastructure_failure: run.excluded,
  };
}
