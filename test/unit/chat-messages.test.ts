/**
 * The Slack and Teams renderers (src/notifications/chat/): every event type Mainline sends, and
 * those the queue adds, as readable messages; every Slack message within Block Kit's limits and
 * every card valid against Microsoft's Adaptive Card 1.4 schema (the fakes' own checks, shown
 * here to refuse what Slack and Teams refuse); user text escaped for Slack's mrkdwn.
 */
import { describe, expect, it } from "vitest";
import { describeEvent, percent } from "../../src/notifications/chat/message.js";
import {
  SLACK_LIMITS,
  slackMessage,
  type SlackMessage,
} from "../../src/notifications/chat/slack.js";
import { teamsMessage, type TeamsMessage } from "../../src/notifications/chat/teams.js";
import { checkBlocks } from "../helpers/fake-slack.js";
import { cardProblems } from "../helpers/fake-teams.js";

const PUBLIC = "https://mainline.example";
const REPOSITORY = { host: "github.com", owner: "acme", name: "web" };

function testCase(extra: Record<string, unknown> = {}) {
  return {
    id: "t-1",
    name: "adds two numbers",
    classname: "MathTest",
    file_path: "payments/math.test.ts",
    parent: "",
    variant: "",
    html_url: `${PUBLIC}/acme/flaky-tests/test/t-1?repo=acme/web`,
    repository: { html_url: "https://github.com/acme/web" },
    status: { value: "flaky", reason: "r", timestamp: "2026-12-07T03:00:00.000Z" },
    failure_rate_last_7d: 0.375,
    failure_rate_last_24h: 0.5,
    pull_requests_impacted_last_7d: 3,
    quarantined: true,
    codeowners: ["@acme/payments", "@alice"],
    most_common_failures: [
      { summary: "Expected 4\n  at add (math.ts:3)", occurrence_count: 3, last_occurrence: "x" },
    ],
    ticket: { html_url: "https://jira.example/browse/PAY-1" },
    ...extra,
  };
}

const statusChanged = (current: string, test = testCase()) => ({
  type: "test_case.status_changed",
  test_case: test,
  status_change: {
    previous_status: "healthy",
    current_status: { value: current, reason: "failed and passed on one commit", timestamp: "x" },
  },
});

const PR = {
  action: "failed",
  status: "failed",
  author: "ana",
  http_details_url: `${PUBLIC}/acme/merge-queue/github.com/acme/web/main/123`,
  pr_number: 123,
  repository: REPOSITORY,
  target_branch: "main",
  timestamp: "2026-12-07T03:00:00.000Z",
  failure_reason: "TEST_RUN_REQUIRED_STATUS_FAILED",
  is_bisection: false,
  mainline_reason: "failing_required_check",
  detail: "ci/test failed",
};

/** Every text a Slack reader sees, joined. */
const slackText = (m: SlackMessage) =>
  [m.text, ...checkBlocks(m.blocks).texts.map((t) => t.text)].join("\n");
const card = (m: TeamsMessage) => m.attachments[0].content;
const teamsText = (m: TeamsMessage) => JSON.stringify(card(m).body);

/** Both renderings of an event, each checked as Slack and Teams would. */
function both(type: string, body: unknown) {
  const slack = slackMessage(type, body, PUBLIC);
  const teams = teamsMessage(type, body, PUBLIC);
  expect(checkBlocks(slack.blocks).problems, type).toEqual([]);
  expect(slack.blocks.length, type).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
  expect(JSON.stringify(slack).length, type).toBeLessThanOrEqual(SLACK_LIMITS.message);
  expect(cardProblems(card(teams)), type).toEqual([]);
  expect(teams.attachments[0].contentType).toBe("application/vnd.microsoft.card.adaptive");
  return { slack, teams, slackText: slackText(slack), teamsText: teamsText(teams) };
}

describe("test messages", () => {
  it("says a test became flaky with its rate, owners, commonest failure and links", () => {
    const {
      slack,
      teams,
      slackText: s,
      teamsText: t,
    } = both("test_case.status_changed", statusChanged("flaky"));
    expect(slack.blocks[0]).toEqual({
      type: "header",
      text: { type: "plain_text", text: "Test became flaky", emoji: true },
    });
    expect(slack.text).toBe(
      "Test became flaky: adds two numbers in acme/web: failed and passed on one commit",
    );
    for (const shown of [
      "*Test*\nMathTest › adds two numbers",
      "*File*\npayments/math.test.ts",
      "*Failure rate (7 days)*\n37.5%",
      "*PRs impacted (7 days)*\n3",
      "*Quarantined*\nyes",
      "*Owners*\n@acme/payments, @alice",
      "Most common failure: Expected 4",
    ]) {
      expect(s).toContain(shown);
    }
    expect(s).not.toContain("at add");
    const buttons = slack.blocks.at(-1);
    expect(buttons).toMatchObject({
      type: "actions",
      elements: [
        { text: { text: "Open test" }, url: `${PUBLIC}/acme/flaky-tests/test/t-1?repo=acme/web` },
        { text: { text: "Ticket" }, url: "https://jira.example/browse/PAY-1" },
      ],
    });
    expect(t).toContain('"title":"Failure rate (7 days)","value":"37.5%"');
    expect(t).toContain('"color":"Warning"');
    expect(card(teams).actions.map((a) => a.title)).toEqual(["Open test", "Ticket"]);
    expect(card(teams).version).toBe("1.4");
  });

  it("names broken and healthy-again tests, and shows no ticket nor owners it does not have", () => {
    const broken = both("test_case.status_changed", statusChanged("broken"));
    expect(broken.slack.text).toMatch(/^Test is broken: /);
    expect(broken.teamsText).toContain('"color":"Attention"');
    const healthy = both(
      "test_case.status_changed",
      statusChanged("healthy", testCase({ ticket: undefined, codeowners: [] })),
    );
    expect(healthy.slack.text).toMatch(/^Test is healthy again: /);
    expect(healthy.slackText).toContain("*Owners*\nnone known");
    expect(JSON.stringify(healthy.slack.blocks)).not.toContain("Ticket");
    expect(healthy.teamsText).toContain('"color":"Good"');
  });

  it("renders the v2 status event and the quarantine override (who, what, why)", () => {
    const v2 = both("v2.test_case.status_changed", {
      type: "v2.test_case.status_changed",
      previous_status: "HEALTHY",
      new_status: "BROKEN",
      repository: { id: "r1", html_url: "https://github.com/acme/web" },
      test_case: { name: "adds", classname: "MathTest", html_url: `${PUBLIC}/t`, codeowners: [] },
      mainline_reason: "failed 5 times on main",
    });
    expect(v2.slack.text).toBe("Test is broken: adds in acme/web: failed 5 times on main");
    const override = both("test_case.quarantining_setting_changed", {
      type: "test_case.quarantining_setting_changed",
      test_case: testCase(),
      quarantine_setting_changed: {
        actor: { full_name: "ana@acme.test", email: "ana@acme.test" },
        reason: "known flake, PAY-1",
        timestamp: "x",
        previous_quarantining_setting: "UNSPECIFIED",
        updated_quarantining_setting: "ALWAYS_QUARANTINE",
      },
    });
    expect(override.slack.text).toBe(
      "Quarantine setting changed: ana@acme.test set adds two numbers to always quarantined.",
    );
    expect(override.slackText).toContain(
      "*What*\nautomatic (the repository's settings) → always quarantined",
    );
    expect(override.slackText).toContain("*Why*\nknown flake, PAY-1");
  });

  it("escapes user text for Slack: no mention, link or markup comes from a test's name", () => {
    const hostile = "<!channel> <@U123> <https://evil.example|click> & done";
    const {
      slack,
      slackText: s,
      teamsText: t,
    } = both(
      "test_case.status_changed",
      statusChanged("flaky", testCase({ name: hostile, codeowners: ["<!here>"] })),
    );
    expect(s).not.toContain("<!channel>");
    expect(s).not.toContain("<@U123>");
    expect(s).not.toContain("<!here>");
    expect(s).not.toContain("<https://evil.example");
    expect(slack.text).toContain("&lt;!channel&gt; &lt;@U123&gt;");
    expect(s).toContain("&amp; done");
    // Headers are plain text: shown as typed, never parsed.
    expect(t).toContain("<!channel>");
  });

  it("keeps a huge test within Slack's limits and Teams' card", () => {
    const long = "x".repeat(5000);
    const { slack } = both(
      "test_case.status_changed",
      statusChanged(
        "flaky",
        testCase({
          name: long,
          classname: long,
          file_path: long,
          most_common_failures: [{ summary: "y".repeat(20_000) }],
          codeowners: Array.from({ length: 300 }, (_, i) => `@team-${String(i)}`),
        }),
      ),
    );
    // Shrunk to fit, not dropped: the summary and fields are there, cut short.
    expect(JSON.stringify(slack).length).toBeGreaterThan(3000);
    const section = slack.blocks[1];
    expect(section?.type === "section" && "text" in section && section.text.text).toMatch(/x…$/);
    const branch = both("pull_request.failed", { ...PR, target_branch: "b".repeat(300) });
    const header = branch.slack.blocks[0];
    expect(header?.type === "header" && header.text.text).toMatch(/^#123 failed in the b+…$/);
    expect(header?.type === "header" && header.text.text.length).toBe(SLACK_LIMITS.header);
    expect(slack.text.length).toBeLessThanOrEqual(1000);
  });
});

describe("merge-queue messages", () => {
  it("says why a pull request failed, with the failing check and tests when given", () => {
    const failure = {
      check: "ci/test",
      summary: "2 tests failed\nsee the log",
      url: "https://ci.example/runs/9",
      tests: Array.from({ length: 12 }, (_, i) => `test ${String(i)}`),
    };
    const {
      slack,
      teams,
      slackText: s,
      teamsText: t,
    } = both("pull_request.failed", {
      type: "pull_request.failed",
      ...PR,
      failure,
    });
    expect(slack.text).toBe(
      "#123 failed in the main queue: A required check failed. ci/test failed",
    );
    expect(s).toContain("*Repository*\nacme/web");
    expect(s).toContain("*Author*\nana");
    expect(s).toContain("*Failing check*\n<https://ci.example/runs/9|ci/test>");
    expect(s).toContain("test 0\ntest 1");
    expect(s).toContain("test 9\nand 2 more");
    expect(s).not.toContain("test 10");
    expect(s).toContain("2 tests failed");
    expect(card(teams).actions.map((a) => [a.title, a.url])).toEqual([
      ["Open pull request", PR.http_details_url],
      ["Failing check", "https://ci.example/runs/9"],
    ]);
    expect(t).toContain('"value":"[ci/test](https://ci.example/runs/9)"');
    // Without Mainline's `failure` field: the reason and detail only.
    const plain = both("pull_request.failed", { type: "pull_request.failed", ...PR });
    expect(plain.slackText).not.toContain("Failing check");
  });

  it("renders canceled and pending failures, and one line for the other steps", () => {
    const canceled = both("pull_request.canceled", {
      ...PR,
      type: "pull_request.canceled",
      mainline_reason: "pr_closed",
      detail: null,
    });
    expect(canceled.slack.text).toBe(
      "#123 was canceled in the main queue: The pull request was closed, so it left the queue.",
    );
    const pending = both("pull_request.pending_failure", {
      ...PR,
      type: "pull_request.pending_failure",
    });
    expect(pending.slack.text).toMatch(/^#123 is failing in the main queue, waiting/);
    for (const [action, line] of [
      ["merged", "#123 merged into main (acme/web)"],
      ["testing", "#123 is being tested in the main queue (acme/web)"],
      ["queued", "#123 is queued in the main queue (acme/web)"],
      ["submitted", "#123 was submitted to the main queue (acme/web)"],
    ] as const) {
      const { slack, teams } = both(`pull_request.${action}`, { ...PR, action, status: action });
      expect(slack.text).toBe(line);
      expect(slack.blocks).toHaveLength(1);
      expect(slack.blocks[0]).toEqual({
        type: "section",
        text: { type: "mrkdwn", text: `${line} · <${PR.http_details_url}|Open pull request>` },
      });
      expect(card(teams).body).toHaveLength(1);
    }
  });

  it("renders the queue's own events and a failed batch", () => {
    /** A queue event's body (the lead's sample shapes): its common fields and `extra`. */
    const queue = (type: string, extra: Record<string, unknown> = {}) =>
      both(type, {
        type,
        timestamp: "2026-12-07T03:00:00.000Z",
        repository: REPOSITORY,
        target_branch: "main",
        http_details_url: `${PUBLIC}/acme/merge-queue/x`,
        ...extra,
      });
    const state = queue("mainline.queue.state_changed", {
      previous_state: "RUNNING",
      state: "PAUSED",
      actor: "alice@acme.test",
      reason: "release freeze",
    });
    expect(state.slack.text).toBe(
      "The main queue of acme/web is paused: alice@acme.test changed it from running to paused: release freeze",
    );
    expect(state.slackText).toContain("*By*\nalice@acme.test");
    const blocked = queue("mainline.queue.blocked", {
      cause: "host_unreachable",
      message: "GitHub answered 502 to every request since 03:00",
    });
    expect(blocked.slack.text).toBe(
      "The main queue of acme/web is blocked: host unreachable: GitHub answered 502 to every request since 03:00",
    );
    const unblocked = queue("mainline.queue.unblocked");
    expect(unblocked.slack.text).toBe("The main queue of acme/web is unblocked");
    const batch = queue("pull_request_batch.failed", {
      action: "failed",
      status: "failed",
      pr_numbers: [1, 2],
      pr_numbers_in_batch: [1, 2, 3],
      test_branch: "trunk-merge/main/1",
      test_branch_sha: "abc",
      failure_reason: "TEST_RUN_REQUIRED_STATUS_FAILED",
      is_bisection: false,
    });
    expect(batch.slack.text).toBe(
      "A batch of 3 failed in the main queue: test run required status failed.",
    );
    expect(batch.slackText).toContain("*Failed*\n#1, #2");
    expect(batch.slackText).toContain("*Batch*\n#1, #2, #3");
  });
});

describe("other messages", () => {
  it("says Mainline is connected for a test event, and names any other type", () => {
    const ping = both("mainline.ping", { type: "mainline.ping", endpoint_id: "we_1" });
    expect(ping.slack.text).toMatch(/^Mainline is connected: /);
    expect(ping.slackText).toContain(PUBLIC);
    expect(card(ping.teams).actions).toEqual([
      { type: "Action.OpenUrl", title: "Open Mainline", url: PUBLIC },
    ]);
    const other = both("test_case.ticket_linked", { repository: REPOSITORY });
    expect(other.slack.text).toBe("Mainline: test_case.ticket_linked in acme/web");
  });

  it("never links anything but http(s), and survives a body missing every field", () => {
    const message = describeEvent(
      "pull_request.failed",
      { http_details_url: "javascript:alert(1)", failure: { url: "file:///etc/passwd" } },
      PUBLIC,
    );
    expect(message.links).toEqual([]);
    expect(message.title).toBe("# failed in the queue");
    both("test_case.status_changed", null);
    both("mainline.queue.state_changed", "not an object");
    expect(percent(0.123456)).toBe("12.3%");
    expect(percent("x")).toBe("");
  });
});

describe("the fakes' checks refuse what Slack and Teams refuse", () => {
  it("Block Kit: a long header, too many fields, an unknown block", () => {
    const header = { type: "header", text: { type: "plain_text", text: "h".repeat(151) } };
    const fields = {
      type: "section",
      fields: Array.from({ length: 11 }, () => ({ type: "mrkdwn", text: "f" })),
    };
    expect(checkBlocks([header, fields, { type: "video" }]).problems).toEqual([
      "blocks[0].text: text of 1 to 150 characters",
      "blocks[1].fields: 1 to 10",
      "blocks[2]: unknown block type video",
    ]);
  });

  it("Adaptive Cards: version 1.5, an unknown property, a TextBlock without text", () => {
    const good = card(teamsMessage("mainline.ping", {}, PUBLIC));
    expect(cardProblems({ ...good, version: "1.5" })).toEqual([
      "version 1.5: Workflows render Adaptive Cards up to 1.4",
    ]);
    expect(cardProblems({ ...good, msteams: { width: "Full" } }).length).toBeGreaterThan(0);
    expect(cardProblems({ ...good, body: [{ type: "TextBlock" }] }).length).toBeGreaterThan(0);
  });
});
