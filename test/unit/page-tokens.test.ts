import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/lib/errors.js";
import {
  mintPageToken,
  pageInfo,
  readPageToken,
  type PageQueryScope,
} from "../../src/lib/page-tokens.js";

const key = Buffer.from("k".repeat(32));
const scope: PageQueryScope = {
  endpoint: "list-unhealthy-tests",
  organizationId: "org-1",
  repositoryId: "repo-1",
  filters: "status=FLAKY",
};

function expectInvalid(run: () => unknown): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe("invalid_page_token");
    expect((error as ApiError).status).toBe(400);
    return;
  }
  throw new Error("expected invalid_page_token");
}

describe("page tokens", () => {
  it("round-trip the offset; empty or absent means the first page", () => {
    expect(readPageToken(key, scope, mintPageToken(key, scope, 300))).toBe(300);
    expect(readPageToken(key, scope, "")).toBe(0);
    expect(readPageToken(key, scope, undefined)).toBe(0);
  });

  it("are refused for another endpoint, organization, repository or filter", () => {
    const token = mintPageToken(key, scope, 100);
    for (const other of [
      { ...scope, endpoint: "list-quarantined-tests" },
      { ...scope, organizationId: "org-2" },
      { ...scope, repositoryId: "repo-2" },
      { ...scope, filters: "status=BROKEN" },
    ]) {
      expectInvalid(() => readPageToken(key, other, token));
    }
  });

  it("are refused when tampered with, made up, or signed with another key", () => {
    const token = mintPageToken(key, scope, 100);
    const [version, , mac] = token.split(".");
    const forged = `${version}.${Buffer.from('{"o":0}').toString("base64url")}.${mac}`;
    for (const bad of [forged, "garbage", "p1..", `${token}x`, `${token}.extra`, "p1.e30.AAAA"]) {
      expectInvalid(() => readPageToken(key, scope, bad));
    }
    expectInvalid(() => readPageToken(Buffer.from("other-key"), scope, token));
  });
});

describe("page object", () => {
  it("has all six fields; no rows means zeros and empty tokens", () => {
    expect(pageInfo(key, scope, 0, 10, 0)).toEqual({
      total_rows: 0,
      total_pages: 0,
      next_page_token: "",
      prev_page_token: "",
      last_page_token: "",
      page_index: 0,
    });
  });

  it("walks 25 rows in pages of 10 forwards, backwards and to the end", () => {
    const first = pageInfo(key, scope, 0, 10, 25);
    expect(first).toMatchObject({
      total_rows: 25,
      total_pages: 3,
      page_index: 0,
      prev_page_token: "",
    });
    const second = readPageToken(key, scope, first.next_page_token);
    expect(second).toBe(10);
    const middle = pageInfo(key, scope, second, 10, 25);
    expect(middle.page_index).toBe(1);
    expect(readPageToken(key, scope, middle.prev_page_token)).toBe(0);
    const lastOffset = readPageToken(key, scope, first.last_page_token);
    expect(lastOffset).toBe(20);
    const last = pageInfo(key, scope, lastOffset, 10, 25);
    expect(last).toMatchObject({ page_index: 2, next_page_token: "" });
    expect(last.last_page_token).not.toBe("");
  });

  it("a single page has no next or previous page, but a last-page token", () => {
    const only = pageInfo(key, scope, 0, 100, 7);
    expect(only).toMatchObject({
      total_pages: 1,
      page_index: 0,
      next_page_token: "",
      prev_page_token: "",
    });
    expect(readPageToken(key, scope, only.last_page_token)).toBe(0);
  });
});
