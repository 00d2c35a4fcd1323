import { describe, expect, it } from "vitest";
import {
  mergeabilityPending,
  pullRequestInfo,
  type MergeRequestJson,
} from "../../src/providers/gitlab/merge-requests.js";

const SHA = "a".repeat(40);

function mr(fields: Partial<MergeRequestJson> = {}): MergeRequestJson {
  return {
    iid: 7,
    title: "Add the widget",
    state: "opened",
    draft: false,
    sha: SHA,
    source_branch: "feature",
    target_branch: "main",
    author: { username: "alice" },
    detailed_merge_status: "mergeable",
    has_conflicts: false,
    diff_refs: { base_sha: SHA, head_sha: SHA, start_sha: SHA },
    head_pipeline: null,
    ...fields,
  };
}

describe("a GitLab merge request as the queue reads it", () => {
  it("carries its number, head, branches and author", () => {
    expect(pullRequestInfo(mr())).toEqual({
      number: 7,
      title: "Add the widget",
      author: "alice",
      headSha: SHA,
      headBranch: "feature",
      baseBranch: "main",
      mergeability: "mergeable",
      upToDate: false,
      checksPassed: false,
      state: "open",
      draft: false,
    });
  });

  it("waits while GitLab checks, and for every blocker but a conflict", () => {
    for (const status of ["unchecked", "checking", "preparing", "approvals_syncing"]) {
      expect(mergeabilityPending(mr({ detailed_merge_status: status }))).toBe(true);
      expect(pullRequestInfo(mr({ detailed_merge_status: status })).mergeability).toBe(
        "in_progress",
      );
    }
    // A merge request just opened has no diff refs until GitLab has looked at it.
    expect(pullRequestInfo(mr({ diff_refs: null })).mergeability).toBe("in_progress");
    for (const status of ["ci_must_pass", "ci_still_running", "discussions_not_resolved"]) {
      expect(pullRequestInfo(mr({ detailed_merge_status: status })).mergeability).toBe(
        "in_progress",
      );
    }
    expect(pullRequestInfo(mr({ detailed_merge_status: "conflict" })).mergeability).toBe(
      "not_mergeable",
    );
    // Behind the target in a semi-linear or fast-forward project: the queue rebases it itself.
    expect(pullRequestInfo(mr({ detailed_merge_status: "need_rebase" })).mergeability).toBe(
      "mergeable",
    );
    expect(pullRequestInfo(mr({ detailed_merge_status: "not_approved" })).reviewRequired).toBe(
      true,
    );
  });

  it("maps the states, drafts and a passing head pipeline", () => {
    expect(pullRequestInfo(mr({ state: "merged" })).state).toBe("merged");
    expect(pullRequestInfo(mr({ state: "closed" })).state).toBe("closed");
    // Locked: GitLab is merging it right now; still open until it says merged.
    expect(pullRequestInfo(mr({ state: "locked" })).state).toBe("open");
    expect(pullRequestInfo(mr({ draft: true, detailed_merge_status: "draft_status" })).draft).toBe(
      true,
    );
    const passed = mr({ head_pipeline: { id: 1, sha: SHA, status: "success" } });
    expect(pullRequestInfo(passed).checksPassed).toBe(true);
  });

  it("reads instances before 15.6 from merge_status", () => {
    const legacy = (fields: Partial<MergeRequestJson>) => {
      const read: MergeRequestJson = mr(fields);
      delete read.detailed_merge_status;
      return read;
    };
    expect(pullRequestInfo(legacy({ merge_status: "can_be_merged" })).mergeability).toBe(
      "mergeable",
    );
    expect(pullRequestInfo(legacy({ merge_status: "cannot_be_merged" })).mergeability).toBe(
      "not_mergeable",
    );
    expect(pullRequestInfo(legacy({ merge_status: "unchecked" })).mergeability).toBe("in_progress");
  });
});
