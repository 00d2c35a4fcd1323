/**
 * The comment-command grammar (docs/github.md, "Commands"): what is a command, what it asks for,
 * and the reason a malformed one is refused.
 */
import { describe, expect, it } from "vitest";
import { parseCommand } from "../../src/mergequeue/pull-request-commands.js";

describe("parseCommand", () => {
  it("ignores comments that are not addressed to the queue", () => {
    for (const body of [
      "LGTM",
      "",
      "please /trunk merge",
      "/trunkated",
      "/mainliner merge",
      "> /trunk merge",
    ]) {
      expect(parseCommand(body), body).toBeUndefined();
    }
  });

  it("reads merge with its priority and batching, and cancel", () => {
    expect(parseCommand("/trunk merge")).toEqual({ kind: "merge", priority: null, noBatch: false });
    expect(parseCommand("  /Mainline MERGE  \nthanks!")).toEqual({
      kind: "merge",
      priority: null,
      noBatch: false,
    });
    expect(parseCommand("/trunk merge --priority=urgent")).toMatchObject({ priority: 0 });
    expect(parseCommand("/trunk merge --priority high")).toMatchObject({ priority: 10 });
    expect(parseCommand("/trunk merge -p 42 --no-batch")).toEqual({
      kind: "merge",
      priority: 42,
      noBatch: true,
    });
    expect(parseCommand("/trunk merge --priority=LOW")).toMatchObject({ priority: 200 });
    expect(parseCommand("/trunk cancel")).toEqual({ kind: "cancel" });
    expect(parseCommand("/mainline cancel\r\nsorry")).toEqual({ kind: "cancel" });
  });

  it("refuses anything else, saying what is wrong", () => {
    const problems: [string, string][] = [
      ["/trunk", "No command given."],
      ["/trunk frobnicate", "Unknown command `frobnicate`."],
      ["/trunk stack", "not supported"],
      ["/trunk merge --bogus", "Unknown option `--bogus`."],
      ["/trunk merge --priority=256", "`256` is not a priority"],
      ["/trunk merge --priority=", "`` is not a priority"],
      ["/trunk merge -p", "`-p` needs a priority."],
      ["/trunk merge -p 1 --priority=2", "The priority is given twice."],
      ["/trunk merge --no-batch --no-batch", "`--no-batch` is given twice."],
      ["/trunk merge --force", "`--force` is not supported"],
      ["/trunk merge cancel", "Unknown option `cancel`."],
      ["/trunk cancel now", "`cancel` takes no arguments."],
      ["/trunk merge `rm`", "Unknown option `'rm'`."],
    ];
    for (const [body, problem] of problems) {
      const parsed = parseCommand(body);
      expect(parsed?.kind, body).toBe("invalid");
      expect(parsed?.kind === "invalid" ? parsed.problem : "", body).toContain(problem);
    }
  });
});
