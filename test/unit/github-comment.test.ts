import { describe, expect, it } from "vitest";
import {
  commentStage,
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
