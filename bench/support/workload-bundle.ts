/** A generated workload's upload as the uploader sends it (bench:ingest, bench:webhooks-outbox). */
import { writeBundleBuffer } from "../../src/testhealth/bundle/index.js";
import type { GeneratedUpload } from "../../src/testhealth/workload.js";

/** The bundle of `upload` with its rendered JUnit `junit`, for `repo` of organization `org`. */
export function workloadBundle(
  org: string,
  repo: { host: string; owner: string; name: string },
  upload: GeneratedUpload,
  junit: Buffer,
): Promise<Buffer> {
  const envs: Record<string, string> = { JOB_NAME: upload.job };
  if (upload.prNumber !== null) envs.TRUNK_PR_NUMBER = String(upload.prNumber);
  return writeBundleBuffer({
    meta: {
      orgSlug: org,
      repo,
      commitSha: upload.commit,
      cliVersion: "0.7.8",
      uploadTimeEpochSeconds: Math.floor(upload.at / 1000),
      branch: upload.branch,
      envs,
    },
    junitFiles: [{ originalPath: "reports/junit.xml", data: junit }],
  });
}
