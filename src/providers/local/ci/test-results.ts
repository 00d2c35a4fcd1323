/**
 * What the built-in runner does with a check's JUnit reports (`junit_paths`): they go to test
 * health for the repository, like any upload, and the failures are compared with what test health
 * knows, so that the queue can retry a run whose only failures are known flaky or quarantined tests
 * instead of failing the pull request.
 */
import path from "node:path";
import type { CiRunRequest } from "../../../mergequeue/providers.js";
import type { Repository } from "../../../organizations/repositories.js";
import type { Clock } from "../../../lib/clock.js";
import { failedTestIdentifiers, readReports } from "../../../testhealth/reports.js";
import { writeBundle } from "../../../testhealth/bundle/writer.js";
import type { QuarantineSettings } from "../../../testhealth/quarantine.js";
import { QUEUE_RUNNER_CLIENT } from "../../../testhealth/runs.js";
import type { UploadService } from "../../../testhealth/upload-service.js";
import { VERSION } from "../../../version.js";

/** More failing tests than this are not "a few flaky ones": the run fails as it is. */
const MAX_FAILED_TESTS_CHECKED = 500;

export interface CiTestResultsDeps {
  /** The repository the run tested (any organization: a local repository has one). */
  repository(request: CiRunRequest): Promise<Repository | undefined>;
  organizationSlug(organizationId: string): Promise<string | undefined>;
  uploads: Pick<UploadService, "submitBundle">;
  testCases: {
    /** The ones of `ids` that test health knows as flaky or quarantined. */
    flakyOrQuarantined(
      repositoryId: string,
      ids: readonly string[],
      settings: QuarantineSettings,
    ): Promise<Set<string>>;
  };
  settings: { get(repositoryId: string): Promise<{ quarantine: QuarantineSettings }> };
  clock: Clock;
}

export interface CheckReports {
  request: CiRunRequest;
  check: string;
  /** Absolute paths of the JUnit files the check produced. */
  files: string[];
  /** The checkout they were found in (their paths are recorded relative to it). */
  root?: string;
}

export class CiTestResults {
  constructor(private readonly deps: CiTestResultsDeps) {}

  /** Uploads the reports and answers whether every failing test is known flaky or quarantined. */
  async report(input: CheckReports): Promise<{ flakyOnly: boolean }> {
    const { request, check, files } = input;
    const repository = await this.deps.repository(request);
    if (!repository || files.length === 0) return { flakyOnly: false };
    const org = await this.deps.organizationSlug(repository.organizationId);
    if (org === undefined) return { flakyOnly: false };
    const summary = await readReports(files);

    const bundle = writeBundle({
      meta: {
        orgSlug: org,
        repo: { host: repository.host, owner: repository.owner, name: repository.name },
        commitSha: request.sha,
        branch: request.testBranch,
        cliVersion: `${QUEUE_RUNNER_CLIENT}${VERSION}`,
        uploadTimeEpochSeconds: Math.floor(this.deps.clock.now() / 1000),
        testCommand: check,
        // The run's pull request (Trunk's `PR_NUMBER` for CIs it does not know): the test page
        // shows it beside the run, and counts it among the pull requests a test impacted.
        ...(request.decidesPrNumber === undefined
          ? {}
          : { envs: { PR_NUMBER: String(request.decidesPrNumber) } }),
        ...(input.root === undefined ? {} : { repoRoot: input.root }),
      },
      junitFiles: files.map((file) => ({
        originalPath: input.root === undefined ? file : path.relative(input.root, file),
        diskPath: file,
      })),
    });
    await this.deps.uploads.submitBundle(repository, `${QUEUE_RUNNER_CLIENT}${VERSION}`, bundle);

    const failed = summary.failed;
    if (summary.unreadable.length > 0 || failed.length === 0) return { flakyOnly: false };
    if (failed.length > MAX_FAILED_TESTS_CHECKED) return { flakyOnly: false };
    const ids = failedTestIdentifiers(failed, {
      org,
      repo: { host: repository.host, owner: repository.owner, name: repository.name },
      variant: "",
      repoRoot: input.root ?? null,
    }).map((t) => t.id);
    const settings = await this.deps.settings.get(repository.id);
    const known = await this.deps.testCases.flakyOrQuarantined(
      repository.id,
      ids,
      settings.quarantine,
    );
    return { flakyOnly: ids.every((id) => known.has(id)) };
  }
}
