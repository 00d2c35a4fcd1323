import { describe, expect, it } from "vitest";
import {
  commentStage,
  renderCheckRun,
  renderComment,
  type PresenceView,
} from "../../src/providers/github/pull-request-presence.js";

const view = (over: Partial<PresenceView>): PresenceView => ({
  queueBranch: "main",
  state: "pending",
  headSha: "a".repeat(40),
  position: 3,
  queueLength: 5,
  priority: "medium",
  reason: "ready",
  detail: null,
  pageUrl: undefined,
  ...over,
});

describe("the queue's comment on a GitHub pull request", () => {
  it("says Testing from the first test until the pull request concludes", () => {
    expect(commentStage("not_ready", undefined)).toBe("queued");
    expect(commentStage("pending", undefined)).toBe("queued");
    expect(commentStage("testing", "queued")).toBe("testing");
    // A batch's localization: failed behind the ones ahead, back to pending, tested again.
    expect(commentStage("pending_failure", "testing")).toBe("testing");
    expect(commentStage("pending", "testing")).toBe("testing");
    expect(commentStage("tests_passed", "testing")).toBe("testing");
    // Not ready again (a conflict with main): said, whatever was shown.
    expect(commentStage("not_ready", "testing")).toBe("queued");
    expect(commentStage("merged", "testing")).toBeNull();
    expect(commentStage("failed", "testing")).toBeNull();
  });

  it("shows no position (an edit each time one ahead moves): the dashboard shows it live", () => {
    const page = "https://mainline.example.com/acme/merge-queue/pr/7";
    const third = renderComment(view({ position: 3, pageUrl: page }));
    expect(third).toContain("**Queued** (priority medium)");
    expect(third).not.toMatch(/position|of 5/);
    expect(third).toContain(`[Its place in the queue and when it should merge: `);
    // Moved up: the same comment, nothing to edit.
    expect(renderComment(view({ position: 1, queueLength: 2, pageUrl: page }))).toBe(third);
    expect(renderComment(view({ state: "merged", position: null, pageUrl: page }))).toContain(
      `[See it on the merge queue's dashboard](${page})`,
    );
  });

  it("beside the comment, has the check run written once, when the pull request concludes", () => {
    expect(renderCheckRun(view({ state: "pending" }), true)).toBeUndefined();
    expect(renderCheckRun(view({ state: "testing", position: null }), true)).toBeUndefined();
    expect(renderCheckRun(view({ state: "merged", position: null }), true)).toMatchObject({
      status: "completed",
      conclusion: "success",
    });
    // Alone, it follows the pull request, with its position.
    expect(renderCheckRun(view({ state: "pending" }))).toMatchObject({
      status: "in_progress",
      title: "Queued (position 3 of 5)",
    });
  });

  it("names the failing tests of a failed pull request, ten at most", () => {
    const tests = Array.from({ length: 10 }, (_, i) => ({
      name: `cart.t${String(i)}`,
      verdict: "failing" as const,
      summary: i === 0 ? "expected 3,\n got 4" : null,
    }));
    const body = renderComment(
      view({
        state: "failed",
        position: null,
        reason: "failing_required_check",
        detail: "failed: test",
        failedTests: tests,
        moreFailedTests: 4,
      }),
    );
    expect(body).toContain(
      "Failing tests:\n- `cart.t0`: fails here (not known flaky or broken) — `expected 3, got 4`\n- `cart.t1`:",
    );
    expect(body).toContain("- …and 4 more");
    expect(
      renderComment(
        view({ state: "failed", moreThanListed: true, failedTests: tests, moreFailedTests: 40 }),
      ),
    ).toContain("- …and more than 40 more");
  });
});
