/** The test-results comment's body (pure): sections in the reader's order, code fenced safely. */
import { describe, expect, it } from "vitest";
import {
  TEST_RESULTS_MARKER,
  renderTestResults,
} from "../../src/providers/github/pull-request-test-results.js";
import type { ExplainedTest } from "../../src/testhealth/ci-failures.js";

const test = (name: string, verdict: ExplainedTest["verdict"], summary: string | null = null) => ({
  id: `id-${name}`,
  name,
  classname: "cart",
  parent: "",
  file: null,
  summary,
  verdict,
});

describe("renderTestResults", () => {
  it("puts what is most likely the change's first, then what test health knows", () => {
    const body = renderTestResults({
      sha: "abcdef0123456789",
      tests: [
        test("q", "quarantined", "timeout"),
        test("f", "flaky"),
        test("b", "broken"),
        test("n", "new", "no `items`"),
        test("x", "failing", "expected 3"),
      ],
      more: 2,
    });
    expect(body.startsWith(`${TEST_RESULTS_MARKER}\n### Test results`)).toBe(true);
    expect(body).toContain("7 failing tests at abcdef0; 3 of them known to test health");
    const order = [
      "Failing here",
      "New in this pull request",
      "Broken on",
      "Known flaky**",
      "Known flaky, quarantined",
    ];
    const at = order.map((heading) => body.indexOf(`**${heading}`));
    expect(at.every((index) => index > 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(body).toContain("- `cart.n` — `` no `items` ``");
    expect(body).toContain("…and 2 more.");
  });

  it("links a test to its page when the page is known, and says when nothing fails", () => {
    const linked = renderTestResults({
      sha: "abcdef0",
      tests: [{ ...test("x", "failing"), url: "https://m.example/acme/t" }],
      more: 0,
    });
    expect(linked).toContain("- [`cart.x`](https://m.example/acme/t)");
    expect(linked).toContain("1 failing test at abcdef0.");
    expect(renderTestResults({ sha: "abcdef0", tests: [], more: 0 })).toContain(
      "No failing tests at abcdef0.",
    );
  });
});
