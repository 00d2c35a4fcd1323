/**
 * The pure rules of delivering to chat destinations: what each kind's answers mean
 * (`judgeAnswer`), the request each kind sends (`deliveryRequest`), which endpoints take an
 * event (`takesEvent`: types, repositories, code owners), and how owners and credential URLs
 * are written.
 */
import { describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { judgeAnswer, type Answer } from "../../src/notifications/answers.js";
import { normalizeOwner, redactedUrl } from "../../src/notifications/kinds.js";
import type { ClaimedDelivery } from "../../src/notifications/records.js";
import { deliveryRequest } from "../../src/notifications/requests.js";
import { eventOwners, takesEvent } from "../../src/notifications/routing.js";

const answer = (statusCode: number | null, excerpt: string | null = null): Answer => ({
  statusCode,
  excerpt,
});

describe("judgeAnswer", () => {
  it("webhooks: 2xx succeeded, 410 disables, the rest is retried (429/503 after Retry-After)", () => {
    expect(judgeAnswer("webhook", answer(204))).toEqual({ outcome: "succeeded" });
    expect(judgeAnswer("webhook", answer(410))).toMatchObject({
      outcome: "disable",
      problem: null,
      reason: "The endpoint answered 410 Gone: it asked for no more deliveries.",
    });
    expect(judgeAnswer("webhook", answer(400))).toEqual({
      outcome: "retry",
      problem: null,
      throttled: false,
    });
    expect(judgeAnswer("webhook", answer(429))).toMatchObject({ throttled: true });
    expect(judgeAnswer("webhook", answer(null))).toMatchObject({ outcome: "retry" });
  });

  it("Slack incoming webhooks: ok; refused messages fail with Slack's words; 410 disables", () => {
    expect(judgeAnswer("slack", answer(200, "ok"))).toEqual({ outcome: "succeeded" });
    for (const [status, text] of [
      [400, "invalid_payload"],
      [403, "action_prohibited"],
      [404, "channel_not_found"],
      [404, "no_service"],
    ] as const) {
      expect(judgeAnswer("slack", answer(status, text))).toEqual({
        outcome: "failed",
        problem: `Slack answered ${String(status)} ${text}`,
      });
    }
    expect(judgeAnswer("slack", answer(410, "channel_is_archived"))).toMatchObject({
      outcome: "disable",
      reason: expect.stringMatching(/^Slack answered 410 channel_is_archived: /) as string,
    });
    expect(judgeAnswer("slack", answer(429, "rate_limited"))).toMatchObject({
      outcome: "retry",
      throttled: true,
    });
    expect(judgeAnswer("slack", answer(500, "rollup_error"))).toEqual({
      outcome: "retry",
      problem: "Slack answered 500 rollup_error",
      throttled: false,
    });
  });

  it("Slack bots: ok:false is a failure; a refused token disables; rate limits wait", () => {
    const ok = '{"ok":true,"channel":"C1","ts":"1.2","message":{"text":"a \\"ok\\":false"}}';
    expect(judgeAnswer("slack_bot", answer(200, ok))).toEqual({ outcome: "succeeded" });
    // The first kilobyte of a long success may be cut: still understood.
    expect(judgeAnswer("slack_bot", answer(200, ok.slice(0, 40)))).toEqual({
      outcome: "succeeded",
    });
    for (const error of ["not_in_channel", "channel_not_found", "invalid_blocks", "msg_too_long"]) {
      const verdict = judgeAnswer("slack_bot", answer(200, `{"ok":false,"error":"${error}"}`));
      expect(verdict.outcome, error).toBe("failed");
      expect(verdict.outcome !== "succeeded" && verdict.problem, error).toMatch(
        new RegExp(`^Slack: ${error} \\(`),
      );
    }
    for (const error of ["invalid_auth", "account_inactive", "token_revoked"]) {
      expect(
        judgeAnswer("slack_bot", answer(200, `{"ok":false,"error":"${error}"}`)),
        error,
      ).toMatchObject({
        outcome: "disable",
        problem: `Slack: ${error}`,
        reason: expect.stringContaining(`Slack refused the bot token (${error})`) as string,
      });
    }
    expect(judgeAnswer("slack_bot", answer(429, '{"ok":false,"error":"ratelimited"}'))).toEqual({
      outcome: "retry",
      problem: "Slack: ratelimited",
      throttled: true,
    });
    expect(judgeAnswer("slack_bot", answer(200, '{"ok":false,"error":"internal_error"}'))).toEqual({
      outcome: "retry",
      problem: "Slack: internal_error",
      throttled: false,
    });
    expect(judgeAnswer("slack_bot", answer(503, "<html>"))).toMatchObject({
      outcome: "retry",
      throttled: true,
    });
    expect(judgeAnswer("slack_bot", answer(200, "<html>"))).toMatchObject({ outcome: "failed" });
    expect(judgeAnswer("slack_bot", answer(404, '{"ok":false,"error":"unknown_method"}'))).toEqual({
      outcome: "failed",
      problem: "Slack: unknown_method",
    });
  });

  it("Teams: 200 and 202 succeeded, 400 fails, 429 waits, 5xx retried", () => {
    expect(judgeAnswer("teams", answer(202, ""))).toEqual({ outcome: "succeeded" });
    expect(judgeAnswer("teams", answer(200, ""))).toEqual({ outcome: "succeeded" });
    expect(judgeAnswer("teams", answer(400, '{"error":{"code":"InvalidRequestContent"}}'))).toEqual(
      {
        outcome: "failed",
        problem: 'Teams answered 400 {"error":{"code":"InvalidRequestContent"}}',
      },
    );
    expect(judgeAnswer("teams", answer(429))).toMatchObject({ outcome: "retry", throttled: true });
    expect(judgeAnswer("teams", answer(502))).toMatchObject({ outcome: "retry", throttled: false });
    expect(judgeAnswer("teams", answer(410))).toMatchObject({ outcome: "disable" });
  });
});

describe("deliveryRequest", () => {
  const payload = JSON.stringify({ type: "mainline.ping", endpoint_id: "we_1" });
  const delivery = (extra: Partial<ClaimedDelivery>): ClaimedDelivery => ({
    id: "dlv_1",
    eventId: "msg_1",
    eventType: "mainline.ping",
    endpointId: "we_1",
    kind: "webhook",
    url: "https://hooks.example/in",
    secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2Vj",
    channel: null,
    payload,
    attempts: 0,
    failingSince: null,
    ...extra,
  });
  const context = {
    userAgent: "Mainline/1.0.0",
    publicUrl: "https://mainline.example",
    slackApiUrl: "https://slack.example/api",
    at: 1_800_000_000_000,
  };

  it("signs a webhook's body with the Standard Webhooks headers", () => {
    const request = deliveryRequest(delivery({}), { ...context, at: Date.now() });
    expect(request.body).toBe(payload);
    expect(request.trusted).toBe(false);
    const verified = new Webhook("whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2Vj").verify(
      request.body,
      request.headers,
    );
    expect(verified).toEqual(JSON.parse(payload));
  });

  it("posts a message to Slack and Teams URLs, and a bot's to chat.postMessage with its token", () => {
    const slack = deliveryRequest(delivery({ kind: "slack", secret: "" }), context);
    expect(slack.url).toBe("https://hooks.example/in");
    expect(slack.headers).toEqual({
      "content-type": "application/json",
      "user-agent": "Mainline/1.0.0",
    });
    expect(JSON.parse(slack.body)).toMatchObject({
      text: expect.stringMatching(/^Mainline is connected/) as string,
    });
    const teams = deliveryRequest(delivery({ kind: "teams", secret: "" }), context);
    expect(JSON.parse(teams.body)).toMatchObject({ type: "message" });
    const bot = deliveryRequest(
      delivery({ kind: "slack_bot", url: "", secret: "xoxb-1-2-token", channel: "C0ABC" }),
      context,
    );
    expect(bot.url).toBe("https://slack.example/api/chat.postMessage");
    expect(bot.trusted).toBe(true);
    expect(bot.headers.authorization).toBe("Bearer xoxb-1-2-token");
    expect(bot.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(JSON.parse(bot.body)).toMatchObject({ channel: "C0ABC", unfurl_links: false });
    expect(bot.body).not.toContain("xoxb-");
  });
});

describe("takesEvent", () => {
  const endpoint = (extra: Partial<Parameters<typeof takesEvent>[0]> = {}) => ({
    eventTypes: [],
    repositoryIds: [],
    codeOwners: [],
    ...extra,
  });
  const test = (owners: string[], type = "test_case.status_changed") => ({
    type,
    repositoryId: "r1",
    owners,
  });

  it("routes a test's events by its code owners, case-insensitively, the @ optional", () => {
    const payments = endpoint({ codeOwners: ["@ACME/Payments"] });
    expect(takesEvent(payments, test(["@acme/payments", "@bob"]))).toBe(true);
    expect(takesEvent(payments, test(["@acme/search"]))).toBe(false);
    expect(takesEvent(payments, test([]))).toBe(false);
    expect(takesEvent(endpoint({ codeOwners: ["alice"] }), test(["@Alice"]))).toBe(true);
    expect(takesEvent(endpoint({ codeOwners: ["@alice"] }), test(["ALICE"]))).toBe(true);
    for (const type of ["v2.test_case.status_changed", "test_case.quarantining_setting_changed"]) {
      expect(takesEvent(payments, test(["@bob"], type)), type).toBe(false);
    }
    expect(takesEvent(endpoint(), test([]))).toBe(true);
  });

  it("never holds back queue events for owners", () => {
    const payments = endpoint({ codeOwners: ["@acme/payments"] });
    for (const type of [
      "pull_request.failed",
      "pull_request_batch.failed",
      "mainline.queue.blocked",
      "mainline.ping",
    ]) {
      expect(takesEvent(payments, { type, repositoryId: "r1", owners: [] }), type).toBe(true);
    }
  });

  it("keeps the type and repository filters", () => {
    const narrow = endpoint({ eventTypes: ["pull_request.failed"], repositoryIds: ["r1"] });
    expect(
      takesEvent(narrow, { type: "pull_request.failed", repositoryId: "r1", owners: [] }),
    ).toBe(true);
    expect(
      takesEvent(narrow, { type: "pull_request.merged", repositoryId: "r1", owners: [] }),
    ).toBe(false);
    expect(
      takesEvent(narrow, { type: "pull_request.failed", repositoryId: "r2", owners: [] }),
    ).toBe(false);
    expect(
      takesEvent(narrow, { type: "pull_request.failed", repositoryId: null, owners: [] }),
    ).toBe(false);
  });

  it("reads the owners of an event's body, and writes owners and credential URLs as shown", () => {
    expect(eventOwners({ test_case: { codeowners: ["@a", 3, "@b"] } })).toEqual(["@a", "@b"]);
    expect(eventOwners({ type: "pull_request.failed" })).toEqual([]);
    expect(eventOwners(undefined)).toEqual([]);
    expect(normalizeOwner(" acme/payments ")).toBe("@acme/payments");
    expect(normalizeOwner("@alice")).toBe("@alice");
    expect(normalizeOwner("ana@example.com")).toBe("ana@example.com");
    for (const bad of ["", "@", "a b", "@acme/pay/ments", "<!channel>"]) {
      expect(normalizeOwner(bad), bad).toBeUndefined();
    }
    expect(redactedUrl("https://hooks.slack.com/services/T1/B2/secret")).toBe(
      "https://hooks.slack.com/…",
    );
    expect(redactedUrl("https://x.logic.azure.com:443/workflows/1?sig=s")).toBe(
      "https://x.logic.azure.com/…",
    );
    expect(redactedUrl("not a url")).toBe("…");
  });
});
