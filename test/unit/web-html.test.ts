import { describe, expect, it } from "vitest";
import {
  SafeHtml,
  UNSAFE_URL,
  escapeHtml,
  isSafeUrl,
  markup,
  pathWithQuery,
  trustedHtml,
} from "../../src/web/html.js";
import { safeNext } from "../../src/web/routes.js";
import { urls } from "../../src/web/urls.js";

describe("markup", () => {
  it("escapes the five characters that matter", () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe(
      "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;",
    );
  });

  it("escapes every interpolation except SafeHtml, joining arrays", () => {
    const inner = markup`<b>${"<i>"}</b>`;
    const out = markup`<p title="${`"x"`}">${inner}${["<", new SafeHtml("<br>"), 3]}${null}${undefined}${false}</p>`;
    expect(out).toBeInstanceOf(SafeHtml);
    expect(out.value).toBe('<p title="&quot;x&quot;"><b>&lt;i&gt;</b>&lt;<br>3</p>');
    expect(String(out)).toBe(out.value);
    expect(markup`${trustedHtml("<svg></svg>")}`.value).toBe("<svg></svg>");
  });

  it("lets only relative and http(s) URLs into URL attributes", () => {
    for (const url of ["/acme", "?page=2", "#main", "https://github.com/a/b", "http://x.test/"]) {
      expect(isSafeUrl(url), url).toBe(true);
      expect(markup`<a href="${url}">x</a>`.value).toBe(`<a href="${escapeHtml(url)}">x</a>`);
    }
    for (const url of [
      "javascript:alert(1)",
      " JavaScript:alert(1)",
      "data:text/html,x",
      "//evil.example",
      "/\\evil",
      "vbscript:x",
      "x",
    ]) {
      expect(isSafeUrl(url), url).toBe(false);
      expect(markup`<a href="${url}">x</a>`.value, url).toBe(`<a href="${UNSAFE_URL}">x</a>`);
      expect(markup`<img src='${url}'>`.value, url).toBe(`<img src='${UNSAFE_URL}'>`);
      expect(markup`<form action="${url}"></form>`.value, url).toContain(UNSAFE_URL);
    }
    // Text that merely looks like a URL attribute is text.
    expect(markup`<p>href="${"javascript:x"}</p>`.value).toBe('<p>href="javascript:x</p>');
  });

  it("refuses an unquoted attribute, but not an equals sign in text", () => {
    expect(() => markup`<a title=${"x onmouseover=alert(1)"}>`).toThrow(/quote the attribute/);
    expect(markup`<pre>export URL=${"http://x"}</pre>`.value).toBe(
      "<pre>export URL=http://x</pre>",
    );
  });
});

describe("URLs", () => {
  it("builds paths with readable queries, leaving out empty values", () => {
    expect(pathWithQuery("/a", { repo: "acme/app", host: undefined, q: "", page: 2 })).toBe(
      "/a?repo=acme/app&page=2",
    );
    expect(pathWithQuery("/a", { q: "a&b=c d" })).toBe("/a?q=a%26b%3Dc+d");
    expect(urls.test("acme", "t-1", { host: "github.com", owner: "acme", name: "app" })).toBe(
      "/acme/flaky-tests/test/t-1?repo=acme/app",
    );
    expect(
      urls.repository(
        "acme",
        { host: "local", owner: "group/sub", name: "svc" },
        { status: "flaky" },
      ),
    ).toBe("/acme/flaky-tests/repo?repo=group/sub/svc&host=local&status=flaky");
    expect(
      urls.queue("acme", { host: "github.com", owner: "acme", name: "app" }, "release/1"),
    ).toBe("/acme/merge-queue/queue?repo=acme/app&branch=release/1");
  });

  it("goes back after sign-in only to a path of this server", () => {
    expect(safeNext("/acme/flaky-tests?repo=a/b")).toBe("/acme/flaky-tests?repo=a/b");
    for (const bad of [
      "//evil",
      "/\\evil",
      "https://evil",
      "evil",
      "/a\nb",
      "/sign-in",
      "/sign-out",
      5,
      undefined,
      "/" + "a".repeat(3000),
    ]) {
      expect(safeNext(bad), String(bad)).toBeUndefined();
    }
  });
});
