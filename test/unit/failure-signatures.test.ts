import { describe, expect, it } from "vitest";
import {
  failureSignature,
  mostCommonFailures,
  type FailureOccurrence,
} from "../../src/testhealth/failure-signatures.js";

const at = (minute: number) => Date.UTC(2026, 10, 25, 12, minute);
const failure = (
  message: string,
  minute = 0,
  type: string | null = "AssertionError",
): FailureOccurrence => ({
  type,
  message,
  text: null,
  at: at(minute),
});

describe("failure signatures", () => {
  it.each([
    ["expected 200 but got 500", "expected 404 but got 503"],
    ["timeout after 30000ms", "timeout after 5000ms"],
    [
      "user 3f2b8c1e-9d4a-4c5e-8f1a-0b2c3d4e5f60 missing",
      "user 8a7b6c5d-1e2f-4a3b-9c8d-7e6f5a4b3c2d missing",
    ],
    ["failed at 2026-11-25T10:00:00Z", "failed at 2026-11-24 09:15:31.123+02:00"],
    [
      "cannot open /tmp/pytest-of-ci/pytest-12/test_x0/data.json",
      "cannot open /tmp/pytest-of-ci/pytest-99/test_x1/data.json",
    ],
    ["pointer 0xdeadbeef freed", "pointer 0x7ffd1234 freed"],
    ["commit 1a2b3c4d5e6f not found", "commit 9f8e7d6c5b4a not found"],
  ])("%j and %j are the same failure", (a, b) => {
    expect(failureSignature(failure(a))).toBe(failureSignature(failure(b)));
  });

  it.each([
    ["expected true", "expected false"],
    ["connection refused", "connection reset"],
  ])("%j and %j are different failures", (a, b) => {
    expect(failureSignature(failure(a))).not.toBe(failureSignature(failure(b)));
  });

  it("the exception type is part of the signature", () => {
    expect(failureSignature(failure("boom", 0, "TypeError"))).not.toBe(
      failureSignature(failure("boom", 0, "RangeError")),
    );
  });

  it("uses the first non-empty line of the message, else of the text", () => {
    const fromText: FailureOccurrence = {
      type: null,
      message: "  \n",
      text: "\n  first line\nsecond",
      at: 0,
    };
    expect(mostCommonFailures([fromText])[0]?.summary).toBe("first line");
  });
});

describe("most common failures", () => {
  it("groups, counts, orders by count then recency, keeps the latest summary, at most five", () => {
    const occurrences = [
      failure("timeout after 100ms", 1),
      failure("timeout after 250ms", 5),
      failure("timeout after 300ms", 3),
      failure("expected 1 to be 2", 2),
      failure("expected 3 to be 4", 7),
      failure("disk full", 9),
      failure("a", 1),
      failure("b", 1),
      failure("c", 1),
    ];
    const groups = mostCommonFailures(occurrences);
    expect(groups).toHaveLength(5);
    expect(groups.slice(0, 3)).toEqual([
      { summary: "timeout after 250ms", occurrenceCount: 3, lastOccurrence: at(5) },
      { summary: "expected 3 to be 4", occurrenceCount: 2, lastOccurrence: at(7) },
      { summary: "disk full", occurrenceCount: 1, lastOccurrence: at(9) },
    ]);
  });

  it("cuts summaries at 200 characters", () => {
    const [group] = mostCommonFailures([failure("x".repeat(500))]);
    expect(group?.summary).toHaveLength(200);
    expect(group?.summary.endsWith("…")).toBe(true);
  });

  it("a failure without any text is summarized by its type", () => {
    expect(
      mostCommonFailures([{ type: "Timeout", message: null, text: null, at: 0 }])[0]?.summary,
    ).toBe("Timeout");
  });
});
