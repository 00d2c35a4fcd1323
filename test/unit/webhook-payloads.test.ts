/**
 * The outbound webhook payloads against hand-written JSON Schemas of Trunk's events
 * (test/helpers/webhook-schemas.ts): every type the builders emit, for every Mainline transition
 * reason and actor, with and without a run; and the schemas themselves refuse what they should.
 */
import { describe, expect, it } from "vitest";
import { presentFailingTest } from "../../src/api/flakytests/presenters/tests.js";
import { TRANSITION_REASONS } from "../../src/mergequeue/model.js";
import {
  EVENT_TYPES,
  PULL_REQUEST_ACTIONS,
  BATCH_ACTIONS,
  batchEvent,
  pingEvent,
  pullRequestEvent,
  queueStateEvent,
  quarantiningChanged,
  statusChangedV1,
  statusChangedV2,
  type PullRequestView,
  type QueueFacts,
  type TestCaseView,
} from "../../src/notifications/events.js";
import type { TestCaseRow } from "../../src/testhealth/records.js";
import { noFigures } from "../../src/testhealth/test-queries.js";
import { parseCodeowners } from "../../src/testhealth/codeowners.js";
import { check, PAYLOAD_SCHEMAS, TRUNK_REASONS } from "../helpers/webhook-schemas.js";

const AT = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

function row(overrides: Partial<TestCaseRow> = {}): TestCaseRow {
  return {
    key: 7,
    repositoryId: "repo_1",
    id: "0b6f4c1e-2f4a-4f53-9a43-7c1d2e3f4a5b",
    name: "adds two numbers",
    classname: "math",
    parent: "math.test",
    file: "src/math.test.ts",
    variant: "",
    status: "flaky",
    statusReason: "pass on retry",
    statusChangedAt: AT,
    monitorStates: "{}",
    monitorsActive: 1,
    quarantineOverride: "UNSPECIFIED",
    overrideActor: null,
    overrideReason: null,
    overrideAt: null,
    ticket: null,
    ticketLinkedAt: null,
    firstSeenAt: AT - 1000,
    lastRunAt: AT,
    lastFailureAt: AT,
    ...overrides,
  };
}

function view(overrides: Partial<TestCaseRow> = {}, ticketBaseUrl: string | null = null) {
  const testCase = presentFailingTest(
    row(overrides),
    {
      ...noFigures(3),
      failureRate7d: 0.25,
      failureRate24h: 0.5,
      mostCommonFailures: [{ summary: "expected 4", occurrenceCount: 2, lastOccurrence: AT }],
    },
    {
      orgSlug: "acme",
      repo: { host: "github.com", owner: "acme", name: "app" },
      baseUrl: "https://mainline.example.com",
      quarantine: { quarantiningEnabled: true, autoQuarantine: true },
      ticketBaseUrl,
      codeowners: parseCodeowners("src/ @acme/math\n"),
    },
  );
  return { testCase, repositoryId: "repo_1" } satisfies TestCaseView;
}

function expectValid(payload: Record<string, unknown>) {
  expect(check(payload), JSON.stringify(payload)).toBe("");
}

const PR: PullRequestView = {
  number: 12,
  author: "ana",
  targetBranch: "main",
  repository: { host: "github.com", owner: "acme", name: "app" },
  htmlDetailsUrl: "https://mainline.example.com/acme/merge-queue/pr/12",
  run: {
    testBranch: "mainline-merge/main/r1",
    testBranchSha: "a".repeat(40),
    batched: true,
    bisection: false,
  },
};

function queueFacts(reason: string, actorKind = "queue"): QueueFacts {
  return {
    kind: "queue_transition",
    queueId: "q1",
    entryId: "e1",
    prNumber: 12,
    from: "pending",
    to: "testing",
    reason,
    detail: null,
    runId: "r1",
    actorKind,
    at: AT,
  };
}

describe("webhook payloads against Trunk's schemas", () => {
  it("has a schema for every event type", () => {
    expect(Object.keys(PAYLOAD_SCHEMAS).sort()).toEqual([...EVENT_TYPES].sort());
  });

  it("test status changes, v1 and v2, in every direction", () => {
    for (const [previous, current] of [
      ["healthy", "flaky"],
      ["flaky", "broken"],
      ["broken", "healthy"],
    ] as const) {
      const facts = {
        kind: "test_status" as const,
        testKey: 7,
        previous,
        current,
        reason: "why",
        at: AT,
      };
      expectValid(statusChangedV1(facts, view({ status: current })));
      expectValid(statusChangedV2(facts, view({ status: current })));
    }
    // A linked ticket, no file, no class: still Trunk's shape.
    const bare = view(
      { ticket: "ENG-1", file: null, classname: null, parent: null },
      "https://jira.example.com/browse/",
    );
    expect(bare.testCase.ticket?.html_url).toMatch(/ENG-1/);
    const facts = {
      kind: "test_status" as const,
      testKey: 7,
      previous: "healthy",
      current: "flaky",
      reason: "",
      at: AT,
    };
    expectValid(statusChangedV1(facts, bare));
    expectValid(statusChangedV2(facts, bare));
  });

  it("quarantining setting changes, with and without an actor and a reason", () => {
    for (const [actor, reason] of [
      ["ana@example.com", "flaky on CI"],
      ["a bot", null],
      [null, null],
    ] as const) {
      expectValid(
        quarantiningChanged(
          {
            kind: "test_override",
            testKey: 7,
            previous: "UNSPECIFIED",
            updated: "ALWAYS_QUARANTINE",
            actor,
            reason,
            at: AT,
          },
          view(),
        ),
      );
    }
  });

  it("every pull_request action, for every Mainline reason and actor, with or without a run", () => {
    let checked = 0;
    for (const action of PULL_REQUEST_ACTIONS) {
      for (const reason of TRANSITION_REASONS) {
        for (const actorKind of ["user", "queue", "git_host"]) {
          for (const run of [PR.run, null]) {
            expectValid(pullRequestEvent(action, queueFacts(reason, actorKind), { ...PR, run }));
            checked += 1;
          }
        }
      }
    }
    expect(checked).toBe(PULL_REQUEST_ACTIONS.length * TRANSITION_REASONS.length * 6);
  });

  it("names Trunk's reason where Trunk has one", () => {
    const failed = pullRequestEvent("failed", queueFacts("failing_required_check"), PR);
    expect(failed.failure_reason).toBe("TEST_RUN_REQUIRED_STATUS_FAILED");
    expect(TRUNK_REASONS.failure_reason).toContain(failed.failure_reason);
    const merged = pullRequestEvent("merged", queueFacts("merged_manually"), PR);
    expect(merged.merged_reason).toBe("MANUAL_MERGE");
    const cancelled = pullRequestEvent("canceled", queueFacts("pr_closed"), PR);
    expect(cancelled.cancellation_reason).toBe("PR_CLOSED");
    // Mainline's own reason, which Trunk has no word for, is said beside.
    const stacked = pullRequestEvent("queued", queueFacts("stacked_pr_ahead"), PR);
    expect(stacked.mainline_reason).toBe("stacked_pr_ahead");
  });

  it("every batch action, in and out of a bisection, and the queue's own events", () => {
    const queue = {
      targetBranch: "main",
      repository: { host: "github.com", owner: "acme", name: "web" },
      htmlDetailsUrl: "https://mainline.example/acme/merge-queue/github.com/acme/web/main",
    };
    const states = ["testing", "pending_failure", "failed", "cancelled", "merged"];
    for (const [i, to] of states.entries()) {
      for (const bisection of [false, true]) {
        const body = batchEvent(
          {
            kind: "batch_transition",
            queueId: "q1",
            runId: "r1",
            prNumbers: [1, 2],
            batchPrNumbers: [1, 2, 3],
            to,
            reason: to === "merged" ? "merged_by_queue" : "failing_required_check",
            at: AT,
          },
          { ...queue, testBranch: "trunk-merge/main/1", testBranchSha: "a".repeat(40), bisection },
        );
        expect(body.type).toBe(`pull_request_batch.${BATCH_ACTIONS[i] ?? ""}`);
        expectValid(body);
      }
    }
    const blocked = {
      kind: "queue_host" as const,
      queueId: "q1",
      blocked: true,
      cause: "unavailable",
      message: "it answered HTTP 502",
      since: AT,
      at: AT,
    };
    expectValid(queueStateEvent(blocked, queue));
    expectValid(queueStateEvent({ ...blocked, blocked: false, cause: null, message: null }, queue));
    const paused = queueStateEvent(
      {
        kind: "queue_state",
        queueId: "q1",
        previous: "running",
        state: "paused",
        actor: null,
        at: AT,
      },
      queue,
    );
    expectValid(paused);
    expect(paused).toMatchObject({ previous_state: "RUNNING", state: "PAUSED" });
  });

  it("the test event", () => {
    expectValid(pingEvent(AT, "we_1"));
  });

  it("the schemas refuse wrong types, values outside Trunk's enums and missing fields", () => {
    const good = pullRequestEvent("failed", queueFacts("failing_required_check"), PR);
    expectValid(good);
    expect(check({ ...good, failure_reason: "SOMETHING_ELSE" })).toMatch(/failure_reason/);
    expect(check({ ...good, failure_reason: null })).toMatch(/failure_reason/);
    expect(check({ ...good, pr_number: "12" })).toMatch(/pr_number/);
    expect(check({ ...good, timestamp: "yesterday" })).toMatch(/timestamp/);
    const missing = { ...good };
    delete missing.target_branch;
    expect(check(missing)).toMatch(/target_branch/);
    const v1 = statusChangedV1(
      {
        kind: "test_status",
        testKey: 7,
        previous: "healthy",
        current: "flaky",
        reason: "",
        at: AT,
      },
      view(),
    );
    expect(check({ ...v1, test_case: { ...view().testCase, quarantined: "yes" } })).toMatch(
      /quarantined/,
    );
    expect(check({ type: "pull_request.exploded" })).toMatch(/no schema/);
  });
});
