/**
 * The configuration a queue's runs will use, checked before any run: for repositories whose CI is
 * the built-in runner (the local git host), `.mainline.yml` (and `.trunk/trunk.yaml` where the
 * runner reads it) as `run-config.ts` resolves it, at the tree a submitted pull request's run
 * tests, or at the target branch's head for the queue page. The mistakes become a submission's
 * warnings and the queue page's "Configuration" box, each with its file and line. A host whose
 * CI learns its checks only when they report (GitHub) offers no source: nothing is checked there.
 */
import type { OwnedRepoRef } from "../organizations/repositories.js";
import type { Principal } from "../organizations/service.js";
import { requireQueue, type QueueAddress } from "./queue-service.js";
import type { MergeQueueRecord, MergeQueueRecords } from "./records.js";
import type { ConfigProblem } from "./repo-config.js";
import { resolveRunConfig } from "./run-config.js";

/** The files of one tree of a repository. */
export interface ConfigTree {
  /** The same key, the same files (a commit id, or the commits a merge is made of). */
  key: string;
  /** What the tree is, in words (`#3 merged into main`), once its files were read. */
  what: string;
  /** A file's text; undefined when the tree has no such file. */
  read(file: string): Promise<string | undefined>;
}

/** Where the check reads a repository's files: a host whose CI is the built-in runner. */
export interface RepoConfigSource {
  /**
   * What the run of a pull request submitted now tests when nothing is ahead of it: its head
   * merged onto the target branch's head, as a test branch merges it; its head when the two do
   * not merge. Undefined when the pull request or its head branch is not there.
   */
  submission(
    repo: OwnedRepoRef,
    prNumber: number,
    targetBranch: string,
  ): Promise<ConfigTree | undefined>;
  /** The head of a branch; undefined when there is no such branch. */
  branch(repo: OwnedRepoRef, branch: string): Promise<ConfigTree | undefined>;
}

/** One of a submission's warnings (Mainline's extension of submitPullRequest's answer). */
export interface ConfigWarning {
  /** `config_run_will_fail` first, then `config_<problem code>` for each mistake. */
  code: string;
  message: string;
  file?: string;
  line?: number;
  column?: number;
}

/** What the check found at a tree: no problems, or the run's failure and every mistake. */
export interface ConfigReport {
  /** What was checked, in words (`ConfigTree.what`). */
  at: string;
  problems: ConfigProblem[];
  /** How the built-in runner fails a run there (undefined without problems). */
  failure?: { reason: string; message: string };
}

export interface ConfigCheckDeps {
  queues: Pick<MergeQueueRecords, "find">;
  /** The repository host's source, when its CI is the built-in runner. */
  source(host: string): RepoConfigSource | undefined;
  logger?: { warn(fields: object, message: string): void };
}

/** How many reports are kept (by tree and override): a few hundred bytes each. */
const KEPT_REPORTS = 1000;

/** A mistake as `file:line: message` (the CLI's and the page's form). */
export function describeProblem(problem: ConfigProblem): string {
  if (problem.file === undefined) return problem.message;
  const line = problem.line === undefined ? "" : `:${String(problem.line)}`;
  return `${problem.file}${line}: ${problem.message}`;
}

export class ConfigCheckService {
  /** Reports by tree key and override: the same files and settings, the same mistakes. */
  private readonly reports = new Map<string, Promise<ConfigReport>>();

  constructor(private readonly deps: ConfigCheckDeps) {}

  /**
   * A submission's warnings: none when its run's configuration is sound or cannot be checked
   * here (another CI, a pull request or branch not there, the host failing the read: the run
   * reports those itself). Never throws: a submission is accepted whatever this finds.
   */
  async submissionWarnings(
    queue: MergeQueueRecord,
    repo: OwnedRepoRef,
    prNumber: number,
  ): Promise<ConfigWarning[]> {
    const source = this.deps.source(repo.host.toLowerCase());
    if (!source) return [];
    try {
      const tree = await source.submission(repo, prNumber, queue.targetBranch);
      if (!tree) return [];
      const report = await this.report(tree, queue.configuration.requiredStatuses);
      if (report.failure === undefined) return [];
      const count = report.problems.length;
      return [
        {
          code: "config_run_will_fail",
          message: `The built-in CI will fail the run of #${String(prNumber)} at once (${report.failure.reason}) unless its configuration is fixed: ${String(count)} mistake${count === 1 ? "" : "s"} in what it would test (${report.at}). The pull request was submitted all the same; a push that fixes the file is tested.`,
        },
        ...report.problems.map((problem) => ({ ...problem, code: `config_${problem.code}` })),
      ];
    } catch (error) {
      this.warn(error, repo, `#${String(prNumber)}`);
      return [];
    }
  }

  /**
   * The mistakes in the configuration at the head of the queue's target branch (the queue page),
   * with the queue's required statuses; undefined when it cannot be checked here.
   */
  async targetBranch(
    principal: Principal,
    address: QueueAddress,
  ): Promise<ConfigReport | undefined> {
    const source = this.deps.source(address.repo.host.toLowerCase());
    if (!source) return undefined;
    const queue = await requireQueue(this.deps.queues, principal, address);
    const repo = { organizationId: principal.organizationId, ...address.repo };
    try {
      const tree = await source.branch(repo, queue.targetBranch);
      if (!tree) return undefined;
      return await this.report(tree, queue.configuration.requiredStatuses);
    } catch (error) {
      this.warn(error, repo, queue.targetBranch);
      return undefined;
    }
  }

  private report(tree: ConfigTree, override: string[] | null): Promise<ConfigReport> {
    const key = `${tree.key}\0${JSON.stringify(override)}`;
    const kept = this.reports.get(key);
    if (kept) return kept;
    const report = (async (): Promise<ConfigReport> => {
      // A read that fails throws: that says nothing of the configuration.
      const read = async (file: string) => ({ ok: true as const, text: await tree.read(file) });
      const resolved = await resolveRunConfig(read, override, tree.key);
      const at = tree.what;
      return resolved.ok
        ? { at, problems: [] }
        : { at, problems: resolved.problems, failure: resolved.error };
    })();
    this.reports.set(key, report);
    report.catch(() => this.reports.delete(key));
    if (this.reports.size > KEPT_REPORTS) {
      const oldest = this.reports.keys().next();
      if (!oldest.done) this.reports.delete(oldest.value);
    }
    return report;
  }

  private warn(error: unknown, repo: OwnedRepoRef, what: string): void {
    this.deps.logger?.warn(
      { err: error, repo: `${repo.host}/${repo.owner}/${repo.name}` },
      `the configuration of ${what} could not be checked`,
    );
  }
}
