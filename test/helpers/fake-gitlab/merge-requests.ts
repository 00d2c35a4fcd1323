import type { PushCommit } from "./git.js";
import { GitLabError } from "./http.js";
import { isDraft, needsCheck, withoutDraft } from "./mergeability.js";
import { ZERO_SHA, type Label, type MergeRequest, type Project, type User } from "./model.js";
import * as payloads from "./payloads.js";
import type { Pipelines } from "./pipelines.js";
import type { Webhooks } from "./webhooks.js";
import { hookTime, type World } from "./world.js";

/**
 * Merge requests' lifecycle: opening (per-project iid, `refs/merge-requests/:iid/head`), edits
 * (title, draft, labels, state) with their Merge Request Hooks and system notes, the lazy git
 * check behind `merge_status`/`detailed_merge_status`, and what a push does to them (a new head,
 * a moved target, "merged" when the head lands in the target).
 */

export interface Changes {
  title?: string;
  description?: string;
  targetBranch?: string;
  labels?: string[];
  addLabels?: string[];
  removeLabels?: string[];
  squash?: boolean;
  removeSourceBranch?: boolean;
}

type ChangeSet = Record<string, { previous: unknown; current: unknown }>;

export class MergeRequests {
  constructor(
    private readonly world: World,
    private readonly webhooks: Webhooks,
    private readonly pipelines: Pipelines,
  ) {}

  async open(
    project: Project,
    author: User,
    input: {
      sourceBranch: string;
      targetBranch: string;
      title: string;
      description?: string;
      labels?: string[];
      squash?: boolean;
      removeSourceBranch?: boolean;
    },
  ): Promise<MergeRequest> {
    const repo = this.world.repo(project);
    const sha = await repo.branchHead(input.sourceBranch);
    if (sha === null) {
      throw new GitLabError(409, "source", {
        message: [`Source branch "${input.sourceBranch}" does not exist`],
      });
    }
    if ((await repo.branchHead(input.targetBranch)) === null) {
      throw new GitLabError(409, "target", {
        message: [`Target branch "${input.targetBranch}" does not exist`],
      });
    }
    const existing = [...project.mergeRequests.values()].find(
      (m) =>
        m.state === "opened" &&
        m.sourceBranch === input.sourceBranch &&
        m.targetBranch === input.targetBranch,
    );
    if (existing !== undefined) {
      throw new GitLabError(409, "exists", {
        message: [
          `Another open merge request already exists for this source branch: !${existing.iid}`,
        ],
      });
    }
    const now = Date.now();
    const option = project.settings.squash_option;
    const mr: MergeRequest = {
      id: this.world.nextId("mr"),
      iid: project.nextMrIid++,
      project,
      title: input.title,
      description: input.description ?? "",
      state: "opened",
      author,
      sourceBranch: input.sourceBranch,
      targetBranch: input.targetBranch,
      sha,
      sourceMissing: false,
      mergeStatus: "unchecked",
      checkingReadsLeft: this.world.options.uncheckedReads,
      git: null,
      diffRefs: null,
      labels: [],
      squash: input.squash ?? (option === "always" || option === "default_on"),
      forceRemoveSourceBranch:
        input.removeSourceBranch ?? project.settings.remove_source_branch_after_merge,
      mergeCommitSha: null,
      squashCommitSha: null,
      mergeError: null,
      mergedBy: null,
      mergedAt: null,
      closedBy: null,
      closedAt: null,
      lastEditedAt: null,
      lastEditedBy: null,
      createdAt: now,
      updatedAt: now,
      notes: [],
    };
    mr.labels = this.ensureLabels(project, input.labels ?? [])
      .map((l) => l.title)
      .sort();
    project.mergeRequests.set(mr.iid, mr);
    await repo.updateRef(`refs/merge-requests/${mr.iid}/head`, sha, null);
    this.webhooks.emit(
      project,
      "Merge Request Hook",
      payloads.mergeRequest(this.world, mr, author, "open", await this.lastCommit(mr)),
    );
    await this.pipelines.create(project, {
      source: "merge_request_event",
      ref: `refs/merge-requests/${mr.iid}/head`,
      sha,
      beforeSha: ZERO_SHA,
      mr,
      user: author,
    });
    return mr;
  }

  async lastCommit(mr: MergeRequest): Promise<PushCommit | null> {
    return this.world
      .repo(mr.project)
      .pushCommit(mr.sha)
      .catch(() => null);
  }

  /** Labels by title, created when unknown (GitLab's default colour). */
  ensureLabels(project: Project, titles: string[]): Label[] {
    return titles.map((title) => {
      const key = title.toLowerCase();
      let label = project.labels.get(key);
      if (label === undefined) {
        label = {
          id: this.world.nextId("label"),
          title,
          color: "#6699cc",
          description: null,
          createdAt: Date.now(),
        };
        project.labels.set(key, label);
      }
      return label;
    });
  }

  systemNote(mr: MergeRequest, user: User, body: string): void {
    const now = Date.now();
    mr.notes.push({
      id: this.world.nextId("note"),
      body,
      author: user,
      system: true,
      internal: false,
      resolvable: false,
      resolved: false,
      discussionId: this.world.random.hex(40),
      createdAt: now,
      updatedAt: now,
      awards: [],
    });
  }

  /** Edits as `PUT …/merge_requests/:iid` does; one Merge Request Hook `update` for them. */
  async update(mr: MergeRequest, user: User, changes: Changes): Promise<void> {
    const set: ChangeSet = {};
    const project = mr.project;
    const previousLabels = payloads.hookLabels(mr);
    let labels = [...mr.labels];
    if (changes.labels !== undefined)
      labels = this.ensureLabels(project, changes.labels).map((l) => l.title);
    if (changes.addLabels !== undefined) {
      for (const l of this.ensureLabels(project, changes.addLabels)) {
        if (!labels.some((t) => t.toLowerCase() === l.title.toLowerCase())) labels.push(l.title);
      }
    }
    if (changes.removeLabels !== undefined) {
      const remove = new Set(changes.removeLabels.map((t) => t.toLowerCase()));
      labels = labels.filter((t) => !remove.has(t.toLowerCase()));
    }
    labels.sort();
    const added = labels.filter((t) => !mr.labels.includes(t));
    const removed = mr.labels.filter((t) => !labels.includes(t));
    if (added.length > 0 || removed.length > 0) {
      mr.labels = labels;
      set.labels = { previous: previousLabels, current: payloads.hookLabels(mr) };
      this.systemNote(mr, user, labelNote(project, added, removed));
    }
    if (changes.title !== undefined && changes.title !== mr.title) {
      const wasDraft = isDraft(mr.title);
      set.title = { previous: mr.title, current: changes.title };
      mr.title = changes.title;
      if (wasDraft !== isDraft(mr.title)) {
        set.draft = { previous: wasDraft, current: !wasDraft };
        this.systemNote(
          mr,
          user,
          `marked this merge request as **${wasDraft ? "ready" : "draft"}**`,
        );
      }
    }
    if (changes.description !== undefined && changes.description !== mr.description) {
      set.description = { previous: mr.description, current: changes.description };
      mr.description = changes.description;
    }
    if (changes.targetBranch !== undefined && changes.targetBranch !== mr.targetBranch) {
      set.target_branch = { previous: mr.targetBranch, current: changes.targetBranch };
      mr.targetBranch = changes.targetBranch;
      this.markUnchecked(mr);
      mr.diffRefs = null;
    }
    if (changes.squash !== undefined) mr.squash = changes.squash;
    if (changes.removeSourceBranch !== undefined)
      mr.forceRemoveSourceBranch = changes.removeSourceBranch;
    if (Object.keys(set).length === 0) return;
    const before = mr.updatedAt;
    mr.updatedAt = Date.now();
    if (set.title !== undefined || set.description !== undefined) {
      set.last_edited_at = { previous: hookTime(mr.lastEditedAt), current: hookTime(mr.updatedAt) };
      set.last_edited_by_id = { previous: mr.lastEditedBy?.id ?? null, current: user.id };
      mr.lastEditedAt = mr.updatedAt;
      mr.lastEditedBy = user;
    }
    set.updated_at = { previous: hookTime(before), current: hookTime(mr.updatedAt) };
    set.updated_by_id = { previous: null, current: user.id };
    this.webhooks.emit(
      project,
      "Merge Request Hook",
      payloads.mergeRequest(this.world, mr, user, "update", await this.lastCommit(mr), {
        changes: set,
      }),
    );
  }

  async setDraft(mr: MergeRequest, user: User, draft: boolean): Promise<void> {
    const title = draft ? `Draft: ${withoutDraft(mr.title)}` : withoutDraft(mr.title);
    await this.update(mr, user, { title });
  }

  async setState(mr: MergeRequest, user: User, event: "close" | "reopen"): Promise<void> {
    if (event === "close" && mr.state !== "opened") return;
    if (event === "reopen" && mr.state !== "closed") return;
    const now = Date.now();
    mr.state = event === "close" ? "closed" : "opened";
    mr.closedBy = event === "close" ? user : null;
    mr.closedAt = event === "close" ? now : null;
    mr.updatedAt = now;
    this.systemNote(mr, user, event === "close" ? "closed" : "reopened");
    if (event === "reopen") this.markUnchecked(mr);
    this.webhooks.emit(
      mr.project,
      "Merge Request Hook",
      payloads.mergeRequest(this.world, mr, user, event, await this.lastCommit(mr), {
        changes: {
          state_id: { previous: event === "close" ? 1 : 2, current: event === "close" ? 2 : 1 },
        },
      }),
    );
  }

  // ---- mergeability ----------------------------------------------------------------------------

  markUnchecked(mr: MergeRequest): void {
    const conflicted = [
      "cannot_be_merged",
      "cannot_be_merged_recheck",
      "cannot_be_merged_rechecking",
    ];
    mr.mergeStatus = conflicted.includes(mr.mergeStatus) ? "cannot_be_merged_recheck" : "unchecked";
    mr.checkingReadsLeft = this.world.options.uncheckedReads;
  }

  /** GitLab's check: mergeable with git (`merge-tree`), fast-forwardable, and the diff refs. */
  async check(mr: MergeRequest): Promise<void> {
    const repo = this.world.repo(mr.project);
    const targetSha = await repo.branchHead(mr.targetBranch);
    if (targetSha === null) {
      mr.git = { targetSha: ZERO_SHA, conflict: true, ffPossible: false };
      mr.mergeStatus = "cannot_be_merged";
      return;
    }
    const ffPossible = await repo.bare.isAncestor(targetSha, mr.sha);
    const conflict = ffPossible
      ? false
      : "conflicts" in (await repo.bare.mergeTree(targetSha, mr.sha));
    mr.git = { targetSha, conflict, ffPossible };
    mr.mergeStatus = conflict ? "cannot_be_merged" : "can_be_merged";
    if (mr.diffRefs === null) await this.refreshDiffRefs(mr, targetSha);
  }

  async refreshDiffRefs(mr: MergeRequest, targetSha: string): Promise<void> {
    const base = await this.world.repo(mr.project).bare.mergeBase(targetSha, mr.sha);
    mr.diffRefs = { base_sha: base ?? targetSha, head_sha: mr.sha, start_sha: targetSha };
  }

  /** A single read: the first reads after a move answer `checking`, a later one checks. */
  async read(mr: MergeRequest): Promise<void> {
    if (mr.state !== "opened" || !needsCheck(mr)) return;
    if (mr.checkingReadsLeft > 0) {
      mr.checkingReadsLeft--;
      if (mr.mergeStatus === "unchecked") mr.mergeStatus = "checking";
      if (mr.mergeStatus === "cannot_be_merged_recheck")
        mr.mergeStatus = "cannot_be_merged_rechecking";
      return;
    }
    await this.check(mr);
  }

  async markMerged(
    mr: MergeRequest,
    user: User,
    mergeCommit: string | null,
    squashCommit: string | null,
  ): Promise<void> {
    const now = Date.now();
    mr.state = "merged";
    mr.mergeCommitSha = mergeCommit;
    mr.squashCommitSha = squashCommit;
    mr.mergedBy = user;
    mr.mergedAt = now;
    mr.updatedAt = now;
    mr.mergeError = null;
    this.systemNote(mr, user, "merged");
    this.webhooks.emit(
      mr.project,
      "Merge Request Hook",
      payloads.mergeRequest(this.world, mr, user, "merge", await this.lastCommit(mr), {
        changes: { state_id: { previous: 1, current: 3 } },
      }),
    );
  }
}

function labelNote(project: Project, added: string[], removed: string[]): string {
  const refs = (titles: string[]): string =>
    titles.map((t) => `~${project.labels.get(t.toLowerCase())?.id ?? 0}`).join(" ");
  const part = (verb: string, titles: string[]): string =>
    `${verb} ${refs(titles)} label${titles.length === 1 ? "" : "s"}`;
  if (added.length > 0 && removed.length > 0)
    return `${part("added", added)} and ${part("removed", removed)}`;
  return added.length > 0 ? part("added", added) : part("removed", removed);
}
