import { describe, expect, it } from "vitest";
import {
  codeBlock,
  escapeText,
  inlineCode,
  markerLine,
  renderBlock,
  renderTicketMarkdown,
  TRUNCATED_NOTICE,
} from "../../src/notifications/tickets/markdown.js";
import type { TicketBlock } from "../../src/notifications/tickets/types.js";

describe("ticket Markdown", () => {
  it("renders headings, paragraphs, lists and code blocks, then the hidden marker", () => {
    const blocks: TicketBlock[] = [
      { kind: "heading", text: "Flaky test" },
      {
        kind: "paragraph",
        spans: [
          { text: "The test " },
          { text: "checkout spec", code: true },
          { text: " failed " },
          { text: "12%", strong: true },
          { text: " of runs. " },
          { text: "Open test", href: "https://mainline.example/acme/tests/t1" },
        ],
      },
      {
        kind: "list",
        items: [[{ text: "Owners: " }, { text: "@acme/payments" }], [{ text: "b" }]],
      },
      { kind: "code", text: "Error: boom\n  at x.ts:1\n" },
    ];
    expect(renderTicketMarkdown(blocks, "t1:c1")).toBe(
      [
        "### Flaky test",
        "The test `checkout spec` failed **12%** of runs. [Open test](https://mainline.example/acme/tests/t1)",
        "- Owners: @acme/payments\n- b",
        "```\nError: boom\n  at x.ts:1\n```",
        "<!-- mainline:ticket t1:c1 -->",
      ].join("\n\n"),
    );
  });

  it("escapes every character that would start inline markup, HTML or an entity", () => {
    expect(escapeText("*a* _b_ [c](d) <b>x</b> a|b ~~s~~ &amp; $x$ back\\slash `tick`")).toBe(
      "\\*a\\* \\_b\\_ \\[c\\](d) \\<b\\>x\\</b\\> a\\|b \\~\\~s\\~\\~ \\&amp; \\$x\\$ back\\\\slash \\`tick\\`",
    );
    expect(escapeText("<!-- mainline:ticket other -->")).toBe("\\<!-- mainline:ticket other --\\>");
  });

  it("keeps lines that look like block markup inside their paragraph", () => {
    const paragraph = renderBlock({
      kind: "paragraph",
      spans: [
        {
          text: "first\n# not a heading\n- not a list\n+ nor this\n1. not ordered\n2) nor this\n> not a quote\n===\nlast",
        },
      ],
    });
    expect(paragraph).toBe(
      "first\n\\# not a heading\n\\- not a list\n\\+ nor this\n1\\. not ordered\n2\\) nor this\n\\> not a quote\n\\===\nlast",
    );
  });

  it("keeps a paragraph one paragraph: no blank line, no hard break, no indented code", () => {
    const paragraph = renderBlock({
      kind: "paragraph",
      spans: [{ text: "        indented\r\n\r\n\nafter blank lines   \n    next  " }],
    });
    expect(paragraph).toBe("indented\nafter blank lines\nnext");
  });

  it("puts headings and list items on one line, and drops empty ones", () => {
    expect(renderBlock({ kind: "heading", text: "C# tests\nin two lines #" })).toBe(
      "### C\\# tests in two lines \\#",
    );
    expect(renderBlock({ kind: "heading", text: "  " })).toBe("");
    expect(
      renderBlock({
        kind: "list",
        items: [[{ text: "a\nb" }], [{ text: " " }], [{ text: "- c" }]],
      }),
    ).toBe("- a b\n- \\- c");
    expect(renderBlock({ kind: "code", text: "\n" })).toBe("");
  });

  it("writes inline code that survives backticks and blanks at either end", () => {
    expect(inlineCode("plain")).toBe("`plain`");
    expect(inlineCode("a`b")).toBe("``a`b``");
    expect(inlineCode("``double`` and `single`")).toBe("``` ``double`` and `single` ```");
    expect(inlineCode("`starts")).toBe("`` `starts ``");
    expect(inlineCode("ends`")).toBe("`` ends` ``");
    expect(inlineCode(" both ")).toBe("`  both  `");
    expect(inlineCode("   ")).toBe("`   `");
    expect(inlineCode("two\nlines")).toBe("`two lines`");
    expect(inlineCode("")).toBe("");
  });

  it("fences code blocks longer than any run of backticks inside", () => {
    expect(codeBlock("no ticks")).toBe("```\nno ticks\n```");
    expect(codeBlock("```\ninner fence\n```")).toBe("````\n```\ninner fence\n```\n````");
    expect(codeBlock("a ````` b")).toBe("``````\na ````` b\n``````");
    expect(codeBlock("windows\r\nlines\r\n")).toBe("```\nwindows\nlines\n```");
    expect(codeBlock("<!-- kept as text -->")).toBe("```\n<!-- kept as text -->\n```");
  });

  it("links with brackets in the text and parentheses or backslashes in the address", () => {
    const link = (text: string, href: string) =>
      renderBlock({ kind: "paragraph", spans: [{ text, href }] });
    expect(link("a]b [c]", "https://x.example/p_(1)/q\\r?s=a b")).toBe(
      "[a\\]b \\[c\\]](https://x.example/p_\\(1\\)/q/r?s=a%20b)",
    );
    expect(link("", "https://x.example/a")).toBe("[https://x.example/a](https://x.example/a)");
    expect(link("run", "javascript:alert(1)")).toBe("run (javascript:alert(1))");
    expect(link("code", "not a url")).toBe("code (not a url)");
    expect(
      renderBlock({
        kind: "paragraph",
        spans: [{ text: "x`y", href: "https://x.example", code: true }],
      }),
    ).toBe("[``x`y``](https://x.example/)");
  });

  it("keeps bold markers next to the text, blanks outside", () => {
    expect(
      renderBlock({
        kind: "paragraph",
        spans: [{ text: "a" }, { text: " bold ", strong: true }, { text: "b" }],
      }),
    ).toBe("a **bold** b");
    expect(renderBlock({ kind: "paragraph", spans: [{ text: " ", strong: true }] })).toBe("");
  });

  it("writes the marker as a comment nothing in it can end", () => {
    expect(markerLine("test 1 --> <b>")).toBe(
      "<!-- mainline:ticket test%201%20%2D%2D%3E%20%3Cb%3E -->",
    );
    expect(markerLine("t_1:c.2=x+y/z")).toBe("<!-- mainline:ticket t_1:c.2=x+y/z -->");
  });

  it("leaves out what does not fit, cuts a code block to fit, and keeps the marker", () => {
    const long = "x".repeat(500);
    const blocks: TicketBlock[] = [
      { kind: "paragraph", spans: [{ text: "intro" }] },
      { kind: "code", text: `${long}\n${long}` },
      { kind: "paragraph", spans: [{ text: "never shown" }] },
    ];
    const body = renderTicketMarkdown(blocks, "m1", { maxLength: 600 });
    expect(body.length).toBeLessThanOrEqual(600);
    expect(body.startsWith("intro\n\n```\nxxx")).toBe(true);
    expect(body).toContain(`\n\`\`\`\n\n${TRUNCATED_NOTICE}\n\n<!-- mainline:ticket m1 -->`);
    expect(body).not.toContain("never shown");
    expect(body.endsWith(markerLine("m1"))).toBe(true);

    const unlimited = renderTicketMarkdown(blocks, "m1");
    expect(unlimited).toContain("never shown");
    expect(unlimited).not.toContain(TRUNCATED_NOTICE);
  });

  it("never splits a character when it cuts", () => {
    const body = renderTicketMarkdown([{ kind: "code", text: "😀".repeat(400) }], "m", {
      maxLength: 400,
    });
    expect(body.length).toBeLessThanOrEqual(400);
    expect(body).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
    expect(body).toContain("😀😀");
  });
});
