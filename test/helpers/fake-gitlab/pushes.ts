import type { RefUpdate } from "./git.js";
import type { MergeRequests } from "./merge-requests.js";
import { ZERO_SHA, type Project, type User } from "./model.js";
import * as payloads from "./payloads.js";
import type { Pipelines } from "./pipelines.js";
import type { Webhooks } from "./webhooks.js";
import type { World } from "./world.js";

/**
 * What GitLab does after a push (its `PostReceive` worker), for a `git push`, a test's
 * `commit()`, and its own merges alike: a Push Hook per branch (none when the push moved more than
 * `push_event_hooks_limit` = 3 refs), the merge requests refreshed (new heads, moved targets,
 * heads merged by the push), and a branch pipeline for each of the first four branches pushed.
 * After a `git push` this runs asynchronously, as in GitLab; `settle()` waits for it.
 */

const PUSH_EVENT_HOOKS_LIMIT = 3;
const PIPELINES_PER_PUSH = 4;

export class Pushes {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly world: World,
    private readonly webhooks: Webhooks,
    private readonly mrs: MergeRequests,
    private readonly pipelines: Pipelines,
  ) {}

  /** Processes a push later (after `pushProcessingDelayMs`), under the project's lock. */
  schedule(project: Project, user: User, updates: RefUpdate[]): void {
    const delay = this.world.options.pushProcessingDelayMs;
    const promise = new Promise<void>((resolve) => setTimeout(resolve, delay))
      .then(() => this.world.withLock(project, () => this.process(project, user, updates)))
      .catch((error: unknown) => {
        console.error("fake GitLab: push processing failed", error);
      });
    this.pending.add(promise);
    void promise.finally(() => this.pending.delete(promise));
  }

  /** The side effects of a push (callers hold the project's lock). */
  async process(project: Project, user: User, updates: RefUpdate[]): Promise<void> {
    const branches = updates.filter((u) => u.ref.startsWith("refs/heads/"));
    if (updates.length <= PUSH_EVENT_HOOKS_LIMIT) {
      for (const update of branches) await this.emitPush(project, user, update);
    }
    for (const update of branches) await this.refreshOnPush(project, user, update);
    let started = 0;
    for (const update of branches) {
      if (update.after === ZERO_SHA || started >= PIPELINES_PER_PUSH) continue;
      started++;
      await this.pipelines.create(project, {
        source: "push",
        ref: update.ref.slice("refs/heads/".length),
        sha: update.after,
        beforeSha: update.before,
        mr: null,
        user,
      });
    }
  }

  /** What a processed push of `update` does to the project's open merge requests. */
  private async refreshOnPush(project: Project, user: User, update: RefUpdate): Promise<void> {
    const branch = update.ref.slice("refs/heads/".length);
    const repo = this.world.repo(project);
    for (const mr of project.mergeRequests.values()) {
      if (mr.state !== "opened") continue;
      if (mr.targetBranch === branch && update.after !== ZERO_SHA) this.mrs.markUnchecked(mr);
      if (mr.sourceBranch !== branch) continue;
      mr.sourceMissing = update.after === ZERO_SHA;
      if (mr.sourceMissing || mr.sha === update.after) continue;
      const oldrev = mr.sha;
      const count = (
        await repo.pushedCommits({ ref: update.ref, before: oldrev, after: update.after })
      ).total;
      mr.sha = update.after;
      mr.updatedAt = Date.now();
      await repo.updateRef(`refs/merge-requests/${mr.iid}/head`, update.after, null);
      this.mrs.markUnchecked(mr);
      const target = await repo.branchHead(mr.targetBranch);
      if (target !== null) await this.mrs.refreshDiffRefs(mr, target);
      this.mrs.systemNote(mr, user, `added ${count} commit${count === 1 ? "" : "s"}`);
      this.webhooks.emit(
        project,
        "Merge Request Hook",
        payloads.mergeRequest(this.world, mr, user, "update", await this.mrs.lastCommit(mr), {
          oldrev,
        }),
      );
      await this.pipelines.create(project, {
        source: "merge_request_event",
        ref: `refs/merge-requests/${mr.iid}/head`,
        sha: update.after,
        beforeSha: oldrev,
        mr,
        user,
      });
    }
    if (update.after !== ZERO_SHA) await this.markMergedByPush(project, user, update);
  }

  /** Open merge requests whose head the push brought into their target become merged. */
  private async markMergedByPush(project: Project, user: User, update: RefUpdate): Promise<void> {
    const branch = update.ref.slice("refs/heads/".length);
    const repo = this.world.repo(project);
    for (const mr of project.mergeRequests.values()) {
      if (mr.state !== "opened" || mr.targetBranch !== branch) continue;
      if (!(await repo.bare.isAncestor(mr.sha, update.after))) continue;
      if (update.before !== ZERO_SHA && (await repo.bare.isAncestor(mr.sha, update.before)))
        continue;
      const range =
        update.before === ZERO_SHA ? [update.after] : [`${update.before}..${update.after}`];
      const { stdout } = await repo.run(["rev-list", "--parents", ...range]);
      const merge = stdout
        .split("\n")
        .map((l) => l.split(" "))
        .find((shas) => shas.slice(2).includes(mr.sha));
      await this.mrs.markMerged(mr, user, merge?.[0] ?? null, null);
    }
  }

  private async emitPush(project: Project, user: User, update: RefUpdate): Promise<void> {
    const repo = this.world.repo(project);
    const { total, shas } = await repo.pushedCommits(update);
    const commits = await Promise.all(shas.map((sha) => repo.pushCommit(sha)));
    const branch = update.ref.slice("refs/heads/".length);
    this.webhooks.emit(
      project,
      "Push Hook",
      payloads.push(this.world, project, user, update, commits, total),
      branch,
    );
  }

  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
