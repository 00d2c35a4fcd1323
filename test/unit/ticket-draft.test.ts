/**
 * A ticket's content: the draft built from a test, and its renderings for Jira Cloud (ADF,
 * checked against Atlassian's published ADF schema) and Jira Data Center (wiki markup).
 */
import { describe, expect, it } from "vitest";
import {
  markerLabel,
  newMarker,
  ticketDraft,
  ticketTitle,
  TITLE_MAX,
  type TicketSubject,
} from "../../src/notifications/tickets/draft.js";
import { toAdf, toWikiMarkup, wikiEscape } from "../../src/notifications/tickets/jira-format.js";
import type { TicketBlock } from "../../src/notifications/tickets/types.js";
import { jiraDescriptions } from "../helpers/fake-jira.js";

function subject(overrides: Partial<TicketSubject["test"]> = {}): TicketSubject {
  return {
    test: {
      id: "6f1c3c1e-0a4b-5c8d-9e2f-0123456789ab",
      name: "checkout keeps the cart",
      classname: "CartSpec",
      parent: "cart",
      file: "spec/cart_spec.rb",
      variant: "",
      htmlUrl: "https://mainline.example.com/acme/flaky-tests/test/6f1c?repo=acme/app",
      status: {
        value: "flaky",
        reason: "failure rate 30% ≥ 20% over 7 days",
        since: "2026-01-02T03:04:05.000Z",
      },
      quarantined: true,
      owners: ["@acme/payments", "@ana"],
      failureRate7d: 0.3,
      failureRate24h: 0.125,
      prsImpacted7d: 4,
      mostCommonFailures: [
        {
          summary: "Expected 2 items, got 1 [see | log] {x}",
          count: 7,
          last: "2026-01-03T00:00:00.000Z",
        },
      ],
      ...overrides,
    },
    repository: { name: "acme/app", htmlUrl: "https://github.com/acme/app" },
    recentFailures: [
      {
        at: "2026-01-03T00:00:00.000Z",
        branch: "feature/*cart*",
        commitSha: "0123456789abcdef0123456789abcdef01234567",
        commitUrl: "https://github.com/acme/app/commit/0123456789abcdef0123456789abcdef01234567",
        prNumber: 42,
        prUrl: "https://github.com/acme/app/pull/42",
        summary: "Expected 2 items, got 1",
        text: "Expected 2 items, got 1\n  at cart_spec.rb:12\n{code}injected{code}",
      },
    ],
  };
}

describe("the ticket's draft", () => {
  it("titles the test by its status, class and name, on one capped line", () => {
    expect(ticketTitle(subject())).toBe("Flaky test: CartSpec checkout keeps the cart");
    expect(ticketTitle(subject({ status: { value: "broken", reason: "", since: "x" } }))).toMatch(
      /^Broken test: /,
    );
    const long = ticketTitle(subject({ name: `a\nb ${"x".repeat(400)}`, variant: "linux" }));
    expect(long.length).toBe(TITLE_MAX);
    expect(long).not.toMatch(/\n/);
    expect(long.endsWith("…")).toBe(true);
  });

  it("tells the status, rates, PRs, quarantine, owners, failures, runs and the test's page", () => {
    const draft = ticketDraft(subject(), "m", ["flaky-test"]);
    const all = JSON.stringify(draft.blocks);
    for (const expected of [
      "flaky",
      "since 2026-01-02T03:04:05.000Z",
      "30% over 7 days, 12.5% over 24 hours",
      "Pull requests impacted (7 days): ",
      "Quarantined: ",
      "@acme/payments",
      "7×",
      "Expected 2 items, got 1 [see | log] {x}",
      "https://github.com/acme/app/pull/42",
      "https://mainline.example.com/acme/flaky-tests/test/6f1c?repo=acme/app",
    ]) {
      expect(all).toContain(JSON.stringify(expected).slice(1, -1));
    }
    expect(draft.labels).toEqual(["flaky-test"]);
    expect(draft.owners).toEqual(["@acme/payments", "@ana"]);
  });

  it("gives each create its own marker, and a label made of it", () => {
    const a = newMarker("tc_1", "t");
    const b = newMarker("tc_1", "t");
    expect(a).not.toBe(b);
    expect(markerLabel(a)).toMatch(/^mainline-[0-9a-f]{12}$/);
    expect(markerLabel(a)).toBe(markerLabel(a));
    expect(markerLabel(a)).not.toBe(markerLabel(b));
  });
});

describe("Jira Cloud's Atlassian Document Format", () => {
  const { adf } = jiraDescriptions();

  it("is a valid ADF document by Atlassian's schema", () => {
    const document = toAdf(ticketDraft(subject(), "m", []).blocks);
    expect(adf(document), JSON.stringify(adf.errors?.slice(0, 3))).toBe(true);
    expect(document.content.map((node) => node.type)).toEqual(
      expect.arrayContaining(["paragraph", "heading", "bulletList", "codeBlock"]),
    );
  });

  it("keeps code with links, drops strong from code (ADF allows no other mix), skips empty text", () => {
    const blocks: TicketBlock[] = [
      {
        kind: "paragraph",
        spans: [{ text: "x", code: true, strong: true, href: "https://e.x/" }, { text: "" }],
      },
      { kind: "list", items: [] },
      { kind: "heading", text: "" },
    ];
    const document = toAdf(blocks);
    expect(document.content).toEqual([
      {
        type: "paragraph",
        content: [
          {
            type: "text",
            text: "x",
            marks: [{ type: "link", attrs: { href: "https://e.x/" } }, { type: "code" }],
          },
        ],
      },
    ]);
    expect(adf(document)).toBe(true);
    // The schema is not a rubber stamp: the mix ADF forbids is refused.
    const forbidden = {
      type: "doc",
      version: 1,
      content: [
        {
          type: "paragraph",
          content: [{ type: "text", text: "x", marks: [{ type: "code" }, { type: "strong" }] }],
        },
      ],
    };
    expect(adf(forbidden)).toBe(false);
  });
});

describe("Jira Data Center's wiki markup", () => {
  it("escapes what would format, link or end a block", () => {
    expect(wikiEscape("a [b|c] {d} *e* _f_ -g- +h+ ^i^ ~j~ !k! \\l")).toBe(
      "a \\[b\\|c\\] \\{d\\} \\*e\\* \\_f\\_ \\-g\\- \\+h\\+ \\^i\\^ \\~j\\~ \\!k\\! \\\\l",
    );
    const markup = toWikiMarkup([
      { kind: "heading", text: "Most [common]" },
      {
        kind: "paragraph",
        spans: [
          { text: "see " },
          { text: "the [log]", href: "https://e.x/a|b]c d" },
          { text: " and " },
          { text: "x{y}", code: true },
          { text: " and " },
          { text: "bold", strong: true },
        ],
      },
      { kind: "list", items: [[{ text: "one" }], [{ text: "two" }]] },
      { kind: "code", text: "trace\n{code}\nmore" },
    ]);
    expect(markup).toBe(
      [
        "h3. Most \\[common\\]",
        "see [the \\[log\\]|https://e.x/a%7Cb%5Dc%20d] and {{x\\{y\\}}} and *bold*",
        "* one\n* two",
        "{code}\ntrace\n{ code}\nmore\n{code}",
      ].join("\n\n"),
    );
  });
});
