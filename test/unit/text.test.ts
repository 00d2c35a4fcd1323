import { describe, expect, it } from "vitest";
import { findUnstorableText, unstorableText } from "../../src/lib/text.js";

describe("text both databases store as sent", () => {
  it("accepts any Unicode text, surrogate pairs included", () => {
    for (const text of ["", "plain", "😀 e\u0301 \u202E ١٢٣", "\uD83D\uDE00", "\u0001\t\n"]) {
      expect(unstorableText(text)).toBeUndefined();
    }
  });

  it("refuses NUL and unpaired surrogates, wherever they are", () => {
    expect(unstorableText("a\u0000b")).toMatch(/NUL/);
    for (const text of ["\uD800", "x\uDC00", "\uDE00\uD83D", "a\uD83Db"]) {
      expect(unstorableText(text)).toMatch(/surrogate/);
    }
  });

  it("names the first offending field of a parsed body", () => {
    expect(findUnstorableText({ repo: { owner: "a\u0000" } }, "")).toEqual({
      path: "repo.owner",
      message: expect.stringMatching(/NUL/) as unknown,
    });
    expect(findUnstorableText({ list: ["ok", { deep: ["\uD800"] }] }, "")?.path).toBe(
      "list[1].deep[0]",
    );
    expect(findUnstorableText({ ok: 1, ["k\u0000"]: 2 }, "")?.path).toBe("body");
    expect(findUnstorableText("\u0000", "")?.path).toBe("body");
    expect(findUnstorableText({ a: [1, true, null, "fine"] }, "")).toBeUndefined();
  });

  it("walks very deep values without exhausting the stack", () => {
    let deep: unknown = "\u0000";
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(findUnstorableText(deep, "")?.message).toMatch(/NUL/);
  });
});
