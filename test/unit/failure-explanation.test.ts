import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readTail } from "../../src/lib/file-tail.js";
import { logTail } from "../../src/mergequeue/failure-explanation.js";
import { byVerdict, failureVerdict } from "../../src/testhealth/failure-verdicts.js";
import type { TestStanding } from "../../src/testhealth/records.js";

const ON = { quarantiningEnabled: true, autoQuarantine: true };
const SINCE = 1_000_000;
const standing = (over: Partial<TestStanding>): TestStanding => ({
  id: "t",
  status: "healthy",
  quarantineOverride: "UNSPECIFIED",
  firstSeenAt: SINCE - 1,
  ...over,
});

describe("whose red a failed test is", () => {
  it("is quarantined, flaky, broken, new or failing, in that precedence", () => {
    expect(failureVerdict(standing({ status: "flaky" }), ON, SINCE)).toBe("quarantined");
    expect(
      failureVerdict(standing({ status: "flaky" }), { ...ON, autoQuarantine: false }, SINCE),
    ).toBe("flaky");
    expect(failureVerdict(standing({ quarantineOverride: "ALWAYS_QUARANTINE" }), ON, SINCE)).toBe(
      "quarantined",
    );
    expect(
      failureVerdict(
        standing({ status: "flaky", quarantineOverride: "NEVER_QUARANTINE" }),
        ON,
        SINCE,
      ),
    ).toBe("flaky");
    // Broken tests are never quarantined automatically: broken on the stable branch too.
    expect(failureVerdict(standing({ status: "broken" }), ON, SINCE)).toBe("broken");
    expect(failureVerdict(standing({ firstSeenAt: SINCE }), ON, SINCE)).toBe("new");
    expect(failureVerdict(standing({}), ON, SINCE)).toBe("failing");
    // Not known to test health yet: counted as the pull request's.
    expect(failureVerdict(undefined, ON, SINCE)).toBe("failing");
  });

  it("lists what is most likely the pull request's first", () => {
    const tests = [
      { name: "b", verdict: "quarantined" as const },
      { name: "z", verdict: "failing" as const },
      { name: "a", verdict: "failing" as const },
      { name: "c", verdict: "new" as const },
      { name: "d", verdict: "broken" as const },
    ];
    expect(byVerdict(tests).map((t) => t.name)).toEqual(["a", "z", "c", "d", "b"]);
  });
});

describe("the end of a log", () => {
  it("keeps the last lines, without colour codes or trailing blank lines, cutting long ones", () => {
    const text = [
      ...Array.from({ length: 40 }, (_, i) => `line ${String(i)}`),
      "\u001b[31mred\u001b[0m",
      "x".repeat(500),
      "",
      "",
    ].join("\r\n");
    const tail = logTail(text, 3);
    expect(tail.truncated).toBe(true);
    expect(tail.lines).toEqual(["line 39", "red", `${"x".repeat(400)}…`]);
    expect(logTail("one\ntwo\n", 3)).toEqual({ lines: ["one", "two"], truncated: false });
  });

  it("reads only the end of a file, without a broken first character", async () => {
    const file = path.join(await mkdtemp(path.join(tmpdir(), "mainline-tail-")), "log");
    await writeFile(file, `${"a".repeat(100)}é${"b".repeat(10)}`);
    // The last 11 bytes start inside "é" (2 bytes): the cut half is dropped.
    expect(await readTail(file, 11)).toBe("b".repeat(10));
    expect(await readTail(file, 12)).toBe(`é${"b".repeat(10)}`);
    expect(await readTail(`${file}.missing`, 10)).toBeUndefined();
  });
});
