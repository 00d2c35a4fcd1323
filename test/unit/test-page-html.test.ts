import { describe, expect, it } from "vitest";
import { AssetCatalog } from "../../src/web/assets/catalog.js";
import { formatAge, formatPercent } from "../../src/web/format.js";
import { renderDocument } from "../../src/web/layout.js";
import { renderSignIn } from "../../src/web/pages/sign-in.js";
import { renderTestPage as testPageView, type TestPageView } from "../../src/web/test-page/html.js";

/** The test page as the browser gets it: its view in the layout. */
function renderTestPage(view: TestPageView): string {
  return renderDocument(testPageView(view), { orgSlug: "acme", assets: new AssetCatalog([]) });
}

const EVIL = `<img src=x onerror="alert('x')">&amp;`;
const NOW = Date.parse("2026-03-10T12:00:00.000Z");

function view(overrides: Partial<TestPageView> = {}): TestPageView {
  return {
    orgSlug: "acme",
    repository: { host: "github.com", owner: "acme", name: "app" },
    test: {
      id: "06cb6db5-f807-5198-b072-af67a0636f8a",
      repository: { html_url: "https://github.com/acme/app" },
      html_url: "http://localhost/acme/flaky-tests/test/06cb6db5?repo=acme/app",
      name: EVIL,
      variant: EVIL,
      status: { value: "flaky", reason: EVIL, timestamp: "2026-03-10T09:00:00.000Z" },
      codeowners: [EVIL, "@acme/web"],
      pull_requests_impacted_last_7d: 3,
      quarantined: true,
      file_path: EVIL,
      parent: EVIL,
      classname: EVIL,
      ticket: { html_url: "javascript:alert(1)" },
      most_common_failures: [
        { summary: EVIL, occurrence_count: 4, last_occurrence: "2026-03-10T11:00:00.000Z" },
      ],
      failure_rate_last_7d: 0.125,
      failure_rate_last_24h: 1 / 3,
    },
    quarantine: {
      setting: "ALWAYS_QUARANTINE",
      override: "ALWAYS_QUARANTINE",
      override_actor: EVIL,
      override_reason: EVIL,
      override_at: "2026-03-09T12:00:00.000Z",
    },
    history: [
      {
        status: "flaky",
        reason: EVIL,
        at: "2026-03-10T09:00:00.000Z",
        kind: "override",
        actor: EVIL,
      },
    ],
    monitors: [
      {
        id: EVIL,
        classification: null,
        active: true,
        reason: EVIL,
        changed_at: "2026-03-10T09:00:00.000Z",
      },
    ],
    runs: [
      {
        at: "2026-03-10T11:30:00.000Z",
        status: "failed",
        attempt: "rerun",
        commit_sha: EVIL,
        branch: EVIL,
        pr_number: 42,
        duration_ms: 1234,
        failure_summary: EVIL,
        failure_text: `${EVIL}\n</pre><script>alert(2)</script>`,
        infrastructure_failure: true,
      },
    ],
    totalRuns: 80,
    now: NOW,
    ...overrides,
  };
}

describe("the test page", () => {
  const page = renderTestPage(view());

  it("never lets a hostile value through", () => {
    expect(page).not.toContain("<img");
    expect(page).not.toContain("<script");
    expect(page).not.toContain('onerror="');
    expect(page).toContain("&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;amp;");
    expect(page).toContain("&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;");
    expect(page).toMatch(/<title>&lt;img src=x/);
  });

  it("links only http(s) URLs", () => {
    expect(page).not.toContain('href="javascript:');
    expect(page).toContain("javascript:alert(1)");
    expect(page).toContain('<a href="https://github.com/acme/app" rel="noreferrer noopener">');
    const linked = renderTestPage(
      view({
        test: {
          ...view().test,
          ticket: { html_url: 'https://linear.app/acme/issue/ENG-1?a=1&b="' },
        },
      }),
    );
    expect(linked).toContain('href="https://linear.app/acme/issue/ENG-1?a=1&amp;b=&quot;"');
  });

  it("shows the status, quarantine, figures, runs and history", () => {
    expect(page).toContain('<span class="badge flaky">flaky</span>');
    expect(page).toContain('<span class="badge quarantined">quarantined</span>');
    expect(page).toContain("by its override (always quarantine)");
    expect(page).toContain("33.3%");
    expect(page).toContain("12.5%");
    expect(page).toContain("<strong>3</strong>");
    expect(page).toContain("(1 of 80)");
    expect(page).toContain("(rerun attempt)");
    expect(page).toContain("(excluded)");
    expect(page).toContain("#42");
    expect(page).toContain("1.23 s");
    expect(page).toContain("3 h ago");
    expect(page).toContain("no longer configured");
    expect(page).toContain("<td>override</td>");
  });

  it("says so when there is nothing to show", () => {
    const empty = renderTestPage(
      view({
        test: {
          ...view().test,
          name: "plain",
          status: { value: "healthy", reason: "", timestamp: "2026-03-01T00:00:00.000Z" },
          quarantined: false,
          most_common_failures: [],
          codeowners: [],
          parent: "",
          file_path: "",
        },
        quarantine: {
          setting: null,
          override: "UNSPECIFIED",
          override_actor: null,
          override_reason: null,
          override_at: null,
        },
        history: [],
        monitors: [],
        runs: [],
        totalRuns: 0,
      }),
    );
    expect(empty).toContain("<h1>plain</h1>");
    expect(empty).toContain("not quarantined");
    expect(empty).toContain("the repository's rule applies");
    expect(empty).toContain("No failures in the last 7 days.");
    expect(empty).toContain("No runs recorded.");
    expect(empty).toContain("No changes recorded yet.");
    expect(empty).not.toContain("Last set by");
    expect(empty).toContain("9 days ago");
    expect(empty).toContain('<dt>File</dt><dd><span class="muted">not in the report</span></dd>');
  });

  it("labels an inactive monitor's reason as past evidence, an active one's as current", () => {
    const page = renderTestPage(
      view({
        monitors: [
          {
            id: "pass-on-retry",
            classification: "flaky",
            active: false,
            reason: "Failed and passed on the same commit abc1234",
            changed_at: "2026-03-01T00:00:00.000Z",
          },
          {
            id: "main-broken",
            classification: "broken",
            active: true,
            reason: "Failure rate 100% (5 of 5 runs) over the last 24 h on main",
            changed_at: "2026-03-10T00:00:00.000Z",
          },
        ],
      }),
    );
    expect(page).toContain(
      '<td>inactive</td><td><span class="muted">Not triggered now. When it last changed, it saw:</span> Failed and passed on the same commit abc1234</td>',
    );
    expect(page).toContain(
      "</td><td>Failure rate 100% (5 of 5 runs) over the last 24 h on main</td>",
    );
  });

  it("shows the file the report names, else one inferred only when certain", () => {
    const withFile = (file_path: string, classname: string, name: string) =>
      renderTestPage(view({ test: { ...view().test, file_path, classname, name } }));
    expect(withFile("src/a.test.ts", "tests.test_foo.TestBar", "test_baz")).toContain(
      "<dt>File</dt><dd><code>src/a.test.ts</code></dd>",
    );
    expect(withFile("", "tests.test_foo.TestBar", "test_baz")).toContain(
      '<dt>File</dt><dd><code>tests/test_foo.py</code> <span class="muted">(from the class name; the report names no file)</span></dd>',
    );
    expect(withFile("", "com.acme.CheckoutTest", "testCheckout")).toContain(
      '<dt>File</dt><dd><span class="muted">not in the report</span></dd>',
    );
  });
});

describe("the sign-in page", () => {
  it("posts to /sign-in with its anti-forgery token and where to go next, escaped", () => {
    const lifetimes = { idleMs: 24 * 3_600_000, absoluteMs: 7 * 86_400_000 };
    const page = renderDocument(
      renderSignIn({ csrf: "t0k3n", next: '/acme?x="1"&y=2', problem: EVIL, lifetimes }),
      { assets: new AssetCatalog([]) },
    );
    expect(page).toContain('<form class="stacked" method="post" action="/sign-in">');
    expect(page).toContain('<input type="hidden" name="csrf" value="t0k3n">');
    expect(page).toContain(
      '<input type="hidden" name="next" value="/acme?x=&quot;1&quot;&amp;y=2">',
    );
    expect(page).toContain('<input id="token" name="token" type="password"');
    expect(page).toContain("after 24 hours without use, or after 7 days at the latest");
    expect(page).not.toContain("<img");
    expect(page).toContain('role="alert"');
    const plain = renderDocument(renderSignIn({ csrf: "t", next: undefined, lifetimes }), {
      assets: new AssetCatalog([]),
    });
    expect(plain).not.toContain('role="alert"');
    expect(plain).not.toContain('name="next"');
  });
});

describe("formatting", () => {
  it("formats rates as percentages with at most one decimal", () => {
    expect(formatPercent(0)).toBe("0%");
    expect(formatPercent(1)).toBe("100%");
    expect(formatPercent(0.5)).toBe("50%");
    expect(formatPercent(2 / 3)).toBe("66.7%");
    expect(formatPercent(0.0004)).toBe("0%");
  });

  it("formats ages", () => {
    const at = (ms: number) => new Date(NOW - ms).toISOString();
    expect(formatAge(at(10_000), NOW)).toBe("just now");
    expect(formatAge(at(5 * 60_000), NOW)).toBe("5 min ago");
    expect(formatAge(at(47 * 3_600_000), NOW)).toBe("47 h ago");
    expect(formatAge(at(3 * 86_400_000), NOW)).toBe("3 days ago");
    expect(formatAge("not a time", NOW)).toBe("");
  });

  it("says which commit broke a broken test, and the pass before it", () => {
    const base = view();
    const html = renderTestPage(
      view({
        test: { ...base.test, status: { ...base.test.status, value: "broken" } },
        brokeAt: {
          commit_sha: "c3".padEnd(40, "0"),
          at: "2026-03-10T10:00:00.000Z",
          last_passed_sha: "c2".padEnd(40, "0"),
        },
      }),
    );
    expect(html).toMatch(
      /<dt>Broke at<\/dt><dd><code title="c30+">c300000<\/code>, <time[^>]*>[^<]*<\/time>(?: <span class="muted">[^<]*<\/span>)?: its first failure in a row; it passed at <code title="c20+">c200000<\/code> before<\/dd>/,
    );
    expect(renderTestPage(view())).not.toContain("Broke at");
  });
});
