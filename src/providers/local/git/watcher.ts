/**
 * Notices pushes to local repositories by polling their branches (plain git runs no hooks of
 * ours): each poll reports what appeared, moved or disappeared since the last; the first sight of
 * a repository only records it. Mainline's own test branches (`mainline-merge/...`) are ignored.
 */
import { BackgroundLoop } from "../../../lib/background-loop.js";
import { TEST_BRANCH_PREFIX } from "./layout.js";
import type { LocalRepositories } from "./repositories.js";
import { type OwnedRepoRef } from "../../../organizations/repositories.js";

export interface RefChange {
  repo: OwnedRepoRef;
  branch: string;
  /** null: the branch appeared. */
  before: string | null;
  /** null: the branch was deleted. */
  after: string | null;
}

export interface RefWatcherLogger {
  error(message: string, error?: unknown): void;
}

export interface LocalRefWatcherOptions {
  repositories: Pick<LocalRepositories, "branches">;
  /** The repositories to watch, asked at every poll (they come and go). */
  watched: () => OwnedRepoRef[] | Promise<OwnedRepoRef[]>;
  listener: (change: RefChange) => void | Promise<void>;
  logger: RefWatcherLogger;
  intervalMs?: number;
}

const repositoryKey = (repo: OwnedRepoRef) =>
  `${repo.organizationId}/${repo.owner}/${repo.name}`.toLowerCase();

export class LocalRefWatcher {
  /** Branch heads at the last successful poll, by repository. */
  private readonly known = new Map<string, Map<string, string>>();
  /** Polls one after another, the next an interval after the previous one ended. */
  private readonly loop: BackgroundLoop;

  constructor(private readonly options: LocalRefWatcherOptions) {
    this.loop = new BackgroundLoop({
      intervalMs: options.intervalMs ?? 1000,
      firstPassAfterInterval: true,
      pass: () => this.poll(),
      onError: (error) => {
        this.options.logger.error("ref watcher: poll failed", error);
      },
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops polling; resolves once a poll in flight has finished, leaving no timer behind. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** Polls now (after an API action, or in tests), after any poll already in flight. */
  pollNow(): Promise<void> {
    return this.loop.runNow();
  }

  private async poll(): Promise<void> {
    let watched: OwnedRepoRef[];
    try {
      watched = await this.options.watched();
    } catch (error) {
      this.options.logger.error("ref watcher: listing the repositories to watch failed", error);
      return;
    }
    const keys = new Set(watched.map(repositoryKey));
    for (const key of this.known.keys()) {
      if (!keys.has(key)) this.known.delete(key);
    }
    for (const repo of watched) await this.pollRepository(repo);
  }

  private async pollRepository(repo: OwnedRepoRef): Promise<void> {
    const key = repositoryKey(repo);
    let branches: Map<string, string>;
    try {
      branches = await this.options.repositories.branches(repo);
    } catch (error) {
      this.options.logger.error(`ref watcher: reading the branches of ${key} failed`, error);
      return;
    }
    for (const name of branches.keys()) {
      if (name.startsWith(TEST_BRANCH_PREFIX)) branches.delete(name);
    }
    const previous = this.known.get(key);
    this.known.set(key, branches);
    if (!previous) return;
    for (const change of changes(repo, previous, branches)) {
      try {
        await this.options.listener(change);
      } catch (error) {
        this.options.logger.error(`ref watcher: handling ${change.branch} of ${key} failed`, error);
      }
    }
  }
}

function changes(
  repo: OwnedRepoRef,
  before: Map<string, string>,
  after: Map<string, string>,
): RefChange[] {
  const found: RefChange[] = [];
  for (const [branch, sha] of after) {
    const old = before.get(branch) ?? null;
    if (old !== sha) found.push({ repo, branch, before: old, after: sha });
  }
  for (const [branch, sha] of before) {
    if (!after.has(branch)) found.push({ repo, branch, before: sha, after: null });
  }
  return found;
}
