/**
 * Working trees for the built-in runner's runs, pooled per repository because a fresh checkout of a
 * large repository costs seconds: a finished run's checkout is brought to the next tested commit
 * (tracked files forced, everything else removed). A checkout serves one repository, one run at a
 * time; one that cannot be brought to the commit is replaced by a fresh one.
 */
import { randomUUID } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { type OwnedRepoRef } from "../../../organizations/repositories.js";

/** A working tree of one commit, held by one run until released. */
export interface Workspace {
  dir: string;
  /** Hands the working tree back (reused or removed); the run's checks have all ended. */
  release(): Promise<void>;
}

export interface Workspaces {
  acquire(repo: OwnedRepoRef, sha: string): Promise<Workspace>;
}

export type CheckoutFunction = (repo: OwnedRepoRef, sha: string, dir: string) => Promise<void>;

/** A new working tree of `sha` in a directory of its own under `root`; nothing left if it fails. */
async function freshCheckout(
  root: string,
  checkout: CheckoutFunction,
  repo: OwnedRepoRef,
  sha: string,
): Promise<string> {
  const dir = path.join(root, randomUUID());
  await mkdir(root, { recursive: true });
  try {
    await checkout(repo, sha, dir);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return dir;
}

/** A checkout per run, removed afterwards. */
export class FreshCheckouts implements Workspaces {
  constructor(
    private readonly root: string,
    private readonly checkout: CheckoutFunction,
  ) {}

  async acquire(repo: OwnedRepoRef, sha: string): Promise<Workspace> {
    const dir = await freshCheckout(this.root, this.checkout, repo, sha);
    return { dir, release: () => rm(dir, { recursive: true, force: true }) };
  }
}

export interface CheckoutPoolOptions {
  /** The pool's own directory (created as needed, removed by `close`). */
  root: string;
  /** Makes a fresh working tree of `sha` at `dir`, which does not exist. */
  checkout: CheckoutFunction;
  /** Brings an existing working tree at `dir` to exactly `sha`; throws when it cannot. */
  refresh: CheckoutFunction;
  /** Idle checkouts kept per repository (default 4); more are removed when released. */
  maxIdlePerRepository?: number;
}

const repositoryKey = (repo: OwnedRepoRef) =>
  `${repo.organizationId}/${repo.host}/${repo.owner}/${repo.name}`.toLowerCase();

export class CheckoutPool implements Workspaces {
  private readonly idle = new Map<string, string[]>();
  private readonly maxIdle: number;
  private closed = false;

  constructor(private readonly options: CheckoutPoolOptions) {
    this.maxIdle = options.maxIdlePerRepository ?? 4;
  }

  async acquire(repo: OwnedRepoRef, sha: string): Promise<Workspace> {
    const key = repositoryKey(repo);
    const idle = this.idle.get(key) ?? [];
    for (let dir = idle.pop(); dir !== undefined; dir = idle.pop()) {
      try {
        await this.options.refresh(repo, sha, dir);
        return this.lease(key, dir);
      } catch {
        await rm(dir, { recursive: true, force: true });
      }
    }
    return this.lease(
      key,
      await freshCheckout(this.options.root, this.options.checkout, repo, sha),
    );
  }

  /** Removes every idle checkout and the pool's directory; checkouts released later go too. */
  async close(): Promise<void> {
    this.closed = true;
    this.idle.clear();
    await rm(this.options.root, { recursive: true, force: true });
  }

  private lease(key: string, dir: string): Workspace {
    let released = false;
    return {
      dir,
      release: async () => {
        if (released) return;
        released = true;
        const idle = this.idle.get(key) ?? [];
        if (this.closed || idle.length >= this.maxIdle) {
          await rm(dir, { recursive: true, force: true });
          return;
        }
        idle.push(dir);
        this.idle.set(key, idle);
      },
    };
  }
}
