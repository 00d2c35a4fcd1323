import { Type, type Static } from "typebox";
import { isoTime } from "../../../lib/clock.js";
import type { UploadRecord } from "../../../testhealth/records.js";
import { DateTime } from "../schemas.js";

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const UploadSchema = Type.Object({
  id: Type.String({ format: "uuid" }),
  state: Type.String({
    enum: ["pending", "processing", "processed", "failed"],
    description:
      "`pending`: stored, waiting; `processing`; `processed` (its runs count); `failed` (see `reason`).",
  }),
  reason: Type.Union([Type.String(), Type.Null()], {
    description: "Why the upload failed, one sentence; null otherwise.",
  }),
  created_at: DateTime("When the upload URL was requested."),
  received_at: Type.Union([DateTime("When the bundle was stored."), Type.Null()]),
  processed_at: Type.Union([DateTime("When processing ended."), Type.Null()]),
  bundle_bytes: Type.Union([Type.Integer(), Type.Null()]),
  client_version: NullableString,
  commit_sha: NullableString,
  branch: NullableString,
  pr_number: Type.Union([Type.Integer(), Type.Null()]),
  job_name: NullableString,
  job_url: NullableString,
  variant: NullableString,
  uploaded_at: Type.Union([
    DateTime("The upload's time (runs without a usable timestamp get it)."),
    Type.Null(),
  ]),
  files_total: Type.Integer(),
  files_failed: Type.Integer(),
  file_errors: Type.Array(Type.Object({ file: Type.String(), reason: Type.String() })),
  tests_passed: Type.Integer(),
  tests_failed: Type.Integer(),
  tests_skipped: Type.Integer(),
  infrastructure_failure: Type.Boolean({
    description: "At least 80% of at least 10 runs failed: excluded from detection and rates.",
  }),
  duplicate_of: Type.Union([Type.String(), Type.Null()], {
    description: "The earlier upload of the same bundle; this one counted nothing.",
  }),
});

export function presentUpload(upload: UploadRecord): Static<typeof UploadSchema> {
  const time = (at: number | null) => (at === null ? null : isoTime(at));
  return {
    id: upload.id,
    state: upload.state === "awaiting_bundle" ? "pending" : upload.state,
    reason: upload.reason,
    created_at: isoTime(upload.createdAt),
    received_at: time(upload.receivedAt),
    processed_at: time(upload.processedAt),
    bundle_bytes: upload.bundleBytes,
    client_version: upload.clientVersion,
    commit_sha: upload.commitSha,
    branch: upload.branch,
    pr_number: upload.prNumber,
    job_name: upload.jobName,
    job_url: upload.jobUrl,
    variant: upload.variant,
    uploaded_at: time(upload.uploadedAt),
    files_total: upload.filesTotal,
    files_failed: upload.filesFailed,
    file_errors: upload.fileErrors,
    tests_passed: upload.testsPassed,
    tests_failed: upload.testsFailed,
    tests_skipped: upload.testsSkipped,
    infrastructure_failure: upload.infrastructureFailure,
    duplicate_of: upload.duplicateOf,
  };
}
