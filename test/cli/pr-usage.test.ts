import { afterAll, beforeAll, describe, it } from "vitest";
import { freePort, runCliInProcess, stopAllProcesses } from "../helpers/process.js";

afterAll(stopAllProcesses);

/**
 * Mistakes the CLI catches itself: they fail with a clear message before any request is made
 * (the address points at a closed port, so a request would fail differently).
 */
let at: string[];
beforeAll(async () => {
  at = ["--repo", "acme/app", "--url", `http://127.0.0.1:${await freePort()}`, "--token", "t"];
});

describe.concurrent("pr usage errors", () => {
  const cases: [string, string[], string][] = [
    ["a number that is not one", ["submit", "abc"], "expected a pull request number"],
    ["a missing number", ["cancel"], "missing required argument 'number'"],
    ["restart with a negative number", ["restart", "-1"], "expected a pull request number"],
    ["status without a pull request", ["status"], "Name the pull request"],
    ["status with a number and --head", ["status", "3", "--head", "x"], "Name the pull request"],
    [
      "list with a page size that is not a number",
      ["list", "--take", "ten"],
      "expected a whole number",
    ],
  ];
  for (const [name, args, message] of cases) {
    it(name, async ({ expect }) => {
      const result = await runCliInProcess(["pr", ...args, ...at]);
      expect(result.code).not.toBe(0);
      expect(result.code).not.toBeNull();
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(message);
      expect(result.stderr).not.toContain("Cannot reach Mainline");
    });
  }
});
