import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import {
  formatPullRequest,
  formatPullRequestList,
  parsePrNumber,
} from "../../src/cli/commands/pr.js";
import { formatTable } from "../../src/cli/table.js";

describe("pull request numbers on the command line", () => {
  it.each([
    ["12", 12],
    ["#12", 12],
    [" 7 ", 7],
    ["0", 0],
    ["4294967295", 4294967295],
  ])("reads %j as %i", (input, expected) => {
    expect(parsePrNumber(input)).toBe(expected);
  });

  it.each(["", "#", "abc", "12a", "-1", "1.5", "4294967296", "99999999999"])(
    "refuses %j",
    (input) => {
      expect(() => parsePrNumber(input)).toThrow(InvalidArgumentError);
      expect(() => parsePrNumber(input)).toThrow("expected a pull request number");
    },
  );
});

const ITEM = {
  id: "e-1",
  state: "testing",
  stateChangedAt: "2026-11-25T21:00:00.000Z",
  priorityValue: 100,
  priorityName: "medium",
  usedDefaultPriorityName: "medium",
  skipTheLine: false,
  noBatch: false,
  prNumber: 12,
  prTitle: "Add login",
  prSha: "f".repeat(40),
  prBaseBranch: "main",
  prAuthor: "alice",
};

const WITHOUT_DEFAULT: Omit<typeof ITEM, "usedDefaultPriorityName"> = { ...ITEM };
Reflect.deleteProperty(WITHOUT_DEFAULT, "usedDefaultPriorityName");

describe("human output", () => {
  it("tables align every column but the last", () => {
    expect(
      formatTable([
        ["A", "BB", "C"],
        ["aaa", "b", ""],
      ]),
    ).toBe("A    BB  C\naaa  b\n");
  });

  it("pr list: one row per pull request under a header", () => {
    const text = formatPullRequestList([
      ITEM,
      {
        ...WITHOUT_DEFAULT,
        prNumber: 7,
        state: "pending",
        priorityName: "urgent",
        priorityValue: 0,
        prTitle: "Hotfix",
        prAuthor: "bob",
      },
    ]);
    expect(text.split("\n")).toEqual([
      "PR   STATE    PRIORITY               CHANGED                   AUTHOR  TITLE",
      "#12  testing  medium (100), default  2026-11-25T21:00:00.000Z  alice   Add login",
      "#7   pending  urgent (0)             2026-11-25T21:00:00.000Z  bob     Hotfix",
      "",
    ]);
  });

  it("pr status: key and value lines, readiness, then the timeline", () => {
    const text = formatPullRequest({
      ...ITEM,
      readiness: { doesBaseBranchMatch: true, gitHubMergeability: "mergeable" },
      isCurrentlySubmittedToQueue: true,
      timeline: [
        {
          at: "2026-11-25T20:59:00.000Z",
          fromState: null,
          toState: "pending",
          reason: "submitted",
          actor: { kind: "user", name: "api-token:tok_1" },
          testRunId: null,
          detail: null,
        },
        {
          at: "2026-11-25T21:00:00.000Z",
          fromState: "pending",
          toState: "testing",
          reason: "test_run_started",
          actor: { kind: "queue" },
          testRunId: "run-1",
          detail: null,
        },
      ],
    });
    expect(text).toMatch(/^pr +#12 Add login$/m);
    expect(text).toMatch(/^state +testing$/m);
    expect(text).toMatch(/^priority +medium \(100\), default$/m);
    expect(text).toMatch(/^inQueue +true$/m);
    expect(text).toMatch(/^gitHubMergeability +mergeable$/m);
    expect(text).toContain("\ntimeline\nAT ");
    // Reasons in words, as the pages say them.
    expect(text).toMatch(
      /^2026-11-25T20:59:00.000Z +- +pending +Submitted to the queue\. +api-token:tok_1 +-$/m,
    );
    expect(text).toMatch(
      /^2026-11-25T21:00:00.000Z +pending +testing +Its tests started\. +queue +run-1$/m,
    );
    expect(formatPullRequest(ITEM)).not.toContain("timeline");
  });
});
