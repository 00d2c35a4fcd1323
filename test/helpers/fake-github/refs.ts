import type { RequestContext } from "./http.js";
import { ZERO_SHA, type Repository } from "./model.js";
import type { Actor, World } from "./world.js";

/**
 * The one way a ref moves in the fake, whoever moves it (the API, a merge, a test acting as a
 * developer): guards first (branch protection, rulesets, the workflows permission), then a
 * compare-and-swap in git, then every area is told (push webhooks, pull request synchronize, CI).
 */

export interface RefChange {
  repo: Repository;
  /** Full ref name. */
  ref: string;
  /** The new SHA; null deletes the ref. */
  next: string | null;
  actor: Actor;
  /** The request behind it (its token's permissions), when it came through the API. */
  ctx?: RequestContext;
  /** Apply branch protection and rulesets (a test's setup pushes may skip them). */
  enforce: boolean;
  /** Whether the change goes through a pull request merge (rulesets' `pull_request` bypass mode). */
  viaPullRequestMerge?: boolean;
}

export interface RefCheck extends RefChange {
  before: string | null;
  forced: boolean;
}

export type RefGuard = (check: RefCheck) => Promise<void>;

export type RefResult =
  | { ok: true; before: string | null; after: string | null; forced: boolean }
  | { ok: false; current: string | null };

export class RefService {
  private readonly guards: RefGuard[] = [];
  /** Test hooks run between the guards and the swap (a test can line two writers up here). */
  private readonly beforeSwap: ((check: RefCheck) => Promise<void>)[] = [];

  constructor(private readonly world: World) {}

  addGuard(guard: RefGuard): void {
    this.guards.push(guard);
  }

  /** Runs `hook` right before every compare-and-swap; returns a function that removes it. */
  onBeforeSwap(hook: (check: RefCheck) => Promise<void>): () => void {
    this.beforeSwap.push(hook);
    return () => {
      const i = this.beforeSwap.indexOf(hook);
      if (i >= 0) this.beforeSwap.splice(i, 1);
    };
  }

  /**
   * Moves `ref` from `expected` (undefined: whatever it is now; null: it must not exist) to
   * `next`. Guards throw GitHub's error; a lost race answers `{ ok: false }`.
   */
  async update(change: RefChange, expected?: string | null): Promise<RefResult> {
    const git = this.world.gitOf(change.repo);
    const before = await git.readRef(change.ref);
    if (expected !== undefined && expected !== before) return { ok: false, current: before };
    const forced =
      before !== null && change.next !== null && !(await git.isAncestor(before, change.next));
    if (change.enforce) {
      for (const guard of this.guards) await guard({ ...change, before, forced });
    }
    for (const hook of this.beforeSwap) await hook({ ...change, before, forced });
    const swapped = await git.casRef(change.ref, change.next ?? ZERO_SHA, before ?? ZERO_SHA);
    if (!swapped) return { ok: false, current: await git.readRef(change.ref) };
    await this.world.refUpdated({
      repo: change.repo,
      ref: change.ref,
      before,
      after: change.next,
      forced,
      actor: change.actor,
    });
    return { ok: true, before, after: change.next, forced };
  }
}
