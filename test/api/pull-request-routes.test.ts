/**
 * The pull-request routes over real HTTP, with records set by hand in the real store and a
 * recording command bus instead of the engine's driver (test/helpers/fake-engine.ts): request
 * validation, the error envelope, presenters and the OpenAPI document. What the real engine does
 * with the commands is tested in pull-requests.test.ts.
 */
import type { AddressInfo } from "node:net";
import { Ajv, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildServer } from "../../src/api/server.js";
import type { ApiApp } from "../../src/api/types.js";
import { createServices, serverDependencies, stopService } from "../../src/app.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { PullRequestService, actorOf } from "../../src/mergequeue/pull-request-service.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { RecordingBus, StoredRecords, entryRecord, transition } from "../helpers/fake-engine.js";

const REPO = { host: "github.com", owner: "acme", name: "app" };
const MAIN = { repo: REPO, targetBranch: "main" };

let database: TestDatabase;
let app: ApiApp;
let url: string;
let token: string;
let tokenId: string;
let queueId: string;
let runtime: StoredRecords;
let bus: RecordingBus;

interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

async function send(path: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(`${url}${path}`, init);
  const text = await response.text();
  const json = response.headers.get("content-type")?.includes("application/json");
  return {
    status: response.status,
    headers: response.headers,
    body: json ? (JSON.parse(text) as unknown) : text,
    text,
  };
}

const call = (operation: string, body: unknown, useToken: string | null = token) =>
  send(`/v1/${operation}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(useToken === null ? {} : { "x-api-token": useToken }),
    },
    body: JSON.stringify(body),
  });

type ErrorBody = { error: { code: string; message: string; details?: { path: string }[] } };
const errorOf = (answer: Answer) => (answer.body as ErrorBody).error;

beforeAll(async () => {
  database = await createTestDatabase();
  const services = createServices(database.handle, { dataDir: database.dataDir });
  const issued = await services.organizations.createOrganizationWithToken("acme");
  token = issued.token;
  tokenId = issued.tokenId;
  runtime = new StoredRecords(database.handle);
  bus = new RecordingBus();
  const store = new MergeQueueStore(database.handle.db, database.handle.dialect);
  app = await buildServer({
    ...serverDependencies(services, false),
    pullRequests: new PullRequestService({
      queues: store,
      runtime,
      commands: bus,
      clock: services.clock,
    }),
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  expect((await call("createQueue", MAIN)).status).toBe(200);
  expect((await call("createQueue", { repo: REPO, targetBranch: "drain" })).status).toBe(200);
  expect(
    (await call("updateQueue", { repo: REPO, targetBranch: "drain", state: "DRAINING" })).status,
  ).toBe(200);
  const queue = await store.find(issued.organization.id, REPO, "main");
  if (!queue) throw new Error("the queue was not created");
  queueId = queue.id;
});

afterAll(async () => {
  await stopService(app, database.handle);
  await database.cleanup();
});

beforeEach(async () => {
  await runtime.reset();
  bus.executed.length = 0;
  bus.answer = { ok: true };
});

const actor = () => actorOf({ organizationId: "", organizationSlug: "acme", tokenId });

describe("submitPullRequest (and its old name queuePullRequest)", () => {
  it("takes pr.number as an integer or a numeric string and the priority by name or number", async () => {
    const a = await call("submitPullRequest", { ...MAIN, pr: { number: 12 }, priority: "HIGH" });
    expect([a.status, a.body]).toEqual([200, {}]);
    const b = await call("queuePullRequest", {
      ...MAIN,
      pr: { number: "13" },
      priority: 7,
      noBatch: true,
      unknownField: 1,
    });
    expect([b.status, b.body]).toEqual([200, {}]);
    const c = await call("submitPullRequest", { ...MAIN, pr: { number: 14 }, priority: null });
    expect(c.status).toBe(200);
    expect(bus.executed).toEqual([
      {
        queueId,
        command: { type: "submit", prNumber: 12, priority: 10, noBatch: false, actor: actor() },
      },
      {
        queueId,
        command: { type: "submit", prNumber: 13, priority: 7, noBatch: true, actor: actor() },
      },
      {
        queueId,
        command: { type: "submit", prNumber: 14, priority: null, noBatch: false, actor: actor() },
      },
    ]);
  });

  it.each([
    [{ pr: { number: "12a" } }, "pr.number"],
    [{ pr: { number: "012" } }, "pr.number"],
    [{ pr: { number: -1 } }, "pr.number"],
    [{ pr: { number: 1.5 } }, "pr.number"],
    [{ pr: { number: 4294967296 } }, "pr.number"],
    [{ pr: { number: "4294967296" } }, "pr.number"],
    [{ pr: { number: true } }, "pr.number"],
    [{ pr: {} }, "pr.number"],
    [{}, "pr"],
    [{ pr: { number: 1 }, priority: "highest" }, "priority"],
    [{ pr: { number: 1 }, priority: 256 }, "priority"],
    [{ pr: { number: 1 }, priority: [] }, "priority"],
    [{ pr: { number: 1 }, noBatch: "yes" }, "noBatch"],
  ])("rejects %j with a 400 naming %s", async (extra, path) => {
    const answer = await call("submitPullRequest", { ...MAIN, ...extra });
    expect(answer.status).toBe(400);
    expect(errorOf(answer).code).toBe("invalid_request");
    expect(errorOf(answer).details?.map((d) => d.path)).toContain(path);
    expect(bus.executed).toEqual([]);
  });

  it("the largest pull request number is accepted as a string and as a number", async () => {
    for (const number of [4294967295, "4294967295", 0, "0"]) {
      expect((await call("submitPullRequest", { ...MAIN, pr: { number } })).status).toBe(200);
    }
  });

  it("404 without a queue, 409 while draining, the engine's refusal as it is", async () => {
    const missing = await call("submitPullRequest", {
      repo: REPO,
      targetBranch: "nope",
      pr: { number: 1 },
    });
    expect(missing.status).toBe(404);
    expect(errorOf(missing)).toEqual({
      code: "not_found",
      message: "No merge queue for branch nope of github.com/acme/app.",
    });
    const draining = await call("submitPullRequest", {
      repo: REPO,
      targetBranch: "drain",
      pr: { number: 1 },
    });
    expect(draining.status).toBe(409);
    expect(errorOf(draining).code).toBe("conflict");
    bus.answer = { ok: false, code: "not_found", message: "Pull request #1 is not open." };
    const refused = await call("submitPullRequest", { ...MAIN, pr: { number: 1 } });
    expect([refused.status, errorOf(refused)]).toEqual([
      404,
      { code: "not_found", message: "Pull request #1 is not open." },
    ]);
  });

  it("401 without a token, before anything is validated", async () => {
    const answer = await call("submitPullRequest", { nonsense: true }, null);
    expect(answer.status).toBe(401);
  });
});

describe("cancelPullRequest, restartTestsOnPullRequest, setImpactedTargets", () => {
  it("hand the engine its commands", async () => {
    expect((await call("cancelPullRequest", { ...MAIN, pr: { number: "4" } })).body).toEqual({});
    expect((await call("restartTestsOnPullRequest", { ...MAIN, pr: { number: 5 } })).body).toEqual(
      {},
    );
    for (const impactedTargets of ["ALL", "all", "IMPACTS_ALL", ["//a", "//b"], []]) {
      const answer = await call("setImpactedTargets", {
        ...MAIN,
        pr: { number: "6", sha: "abc123" },
        impactedTargets,
      });
      expect(answer.status).toBe(200);
    }
    expect(bus.executed.map((e) => e.command)).toEqual([
      { type: "cancel", prNumber: 4, actor: actor() },
      { type: "restart", prNumber: 5, actor: actor() },
      { type: "set_impacted_targets", prNumber: 6, headSha: "abc123", targets: "ALL" },
      { type: "set_impacted_targets", prNumber: 6, headSha: "abc123", targets: "ALL" },
      { type: "set_impacted_targets", prNumber: 6, headSha: "abc123", targets: "ALL" },
      { type: "set_impacted_targets", prNumber: 6, headSha: "abc123", targets: ["//a", "//b"] },
      { type: "set_impacted_targets", prNumber: 6, headSha: "abc123", targets: [] },
    ]);
  });

  it.each([
    [{ pr: { number: 1, sha: "a" }, impactedTargets: "some" }, "impactedTargets"],
    [{ pr: { number: 1, sha: "a" }, impactedTargets: [1] }, "impactedTargets[0]"],
    [{ pr: { number: 1, sha: "a" }, impactedTargets: null }, "impactedTargets"],
    [{ pr: { number: 1, sha: "a" } }, "impactedTargets"],
    [{ pr: { number: 1 }, impactedTargets: "ALL" }, "pr.sha"],
    [{ pr: { number: "x", sha: "a" }, impactedTargets: "ALL" }, "pr.number"],
  ])("setImpactedTargets rejects %j naming %s", async (extra, path) => {
    const answer = await call("setImpactedTargets", { ...MAIN, ...extra });
    expect(answer.status).toBe(400);
    expect(errorOf(answer).details?.map((d) => d.path)).toContain(path);
  });
});

describe("getSubmittedPullRequest(s)", () => {
  it("by number or by head branch, with the timeline when asked", async () => {
    const entry = entryRecord(queueId, {
      prNumber: 21,
      prHeadBranch: "feature/login",
      stateChangedAt: Date.UTC(2026, 10, 25, 21, 0, 0),
    });
    runtime.entries.push(entry);
    runtime.transitionRecords.push(
      transition(entry, Date.UTC(2026, 10, 25, 21, 0, 0), null, "pending", {
        reason: "submitted",
        actor: actor(),
      }),
    );
    const byNumber = await call("getSubmittedPullRequest", { ...MAIN, pr: { number: "21" } });
    expect(byNumber.status).toBe(200);
    expect(byNumber.body).toEqual({
      id: entry.id,
      state: "pending",
      stateChangedAt: "2026-11-25T21:00:00.000Z",
      priorityValue: 100,
      priorityName: "medium",
      usedDefaultPriorityName: "medium",
      skipTheLine: false,
      noBatch: false,
      prNumber: 21,
      prTitle: "PR 21",
      prSha: "a".repeat(40),
      prBaseBranch: "main",
      prAuthor: "alice",
      readiness: {
        hasImpactedTargets: false,
        requiresImpactedTargets: false,
        doesBaseBranchMatch: true,
        gitHubMergeability: "mergeable",
      },
      forceEnqueued: false,
      isCurrentlySubmittedToQueue: true,
    });
    const byBranch = await call("getSubmittedPullRequest", {
      ...MAIN,
      pr: { branch: "feature/login" },
      includeTimeline: true,
      includeEstimatedTimeToMerge: true,
    });
    expect(byBranch.body).toMatchObject({
      prNumber: 21,
      timeline: [
        {
          at: "2026-11-25T21:00:00.000Z",
          fromState: null,
          toState: "pending",
          reason: "submitted",
          actor: { kind: "user", name: `api-token:${tokenId}` },
          testRunId: null,
          detail: null,
        },
      ],
    });
  });

  it("exactly one of number and branch; 404 for a pull request never submitted", async () => {
    for (const pr of [{}, { number: 1, branch: "x" }]) {
      const answer = await call("getSubmittedPullRequest", { ...MAIN, pr });
      expect(answer.status).toBe(400);
      expect(errorOf(answer).details?.map((d) => d.path)).toEqual(["pr"]);
    }
    const missing = await call("getSubmittedPullRequest", { ...MAIN, pr: { number: 404 } });
    expect(missing.status).toBe(404);
    expect(errorOf(missing).message).toContain("#404 has never been submitted");
  });

  it("the batch lookup reports the ones never submitted in notFound", async () => {
    runtime.entries.push(entryRecord(queueId, { prNumber: 31 }));
    const answer = await call("getSubmittedPullRequests", {
      ...MAIN,
      prs: [{ number: 31 }, { number: "32" }],
      includeTimeline: true,
    });
    expect(answer.status).toBe(200);
    const body = answer.body as { pullRequests: { prNumber: number }[]; notFound: unknown };
    expect(body.pullRequests.map((p) => p.prNumber)).toEqual([31]);
    expect(body.notFound).toEqual([{ number: 32 }]);
    const tooMany = await call("getSubmittedPullRequests", {
      ...MAIN,
      prs: Array.from({ length: 101 }, (_, i) => ({ number: i })),
    });
    expect(tooMany.status).toBe(400);
  });
});

describe("listPullRequests", () => {
  it("walks the pages with nextCursor; filters by state in any case and by since", async () => {
    for (let n = 1; n <= 5; n++) {
      runtime.entries.push(
        entryRecord(queueId, {
          prNumber: n,
          ...(n <= 2 ? { state: "merged" as const, concludedAt: Date.UTC(2026, 0, n) } : {}),
        }),
      );
    }
    const seen: number[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const answer = await call("listPullRequests", {
        ...MAIN,
        take: 2,
        ...(cursor ? { cursor } : {}),
      });
      expect(answer.status).toBe(200);
      const body = answer.body as { pullRequests: { prNumber: number }[]; nextCursor?: string };
      seen.push(...body.pullRequests.map((p) => p.prNumber));
      cursor = body.nextCursor;
      pages += 1;
    } while (cursor);
    expect([seen, pages]).toEqual([[1, 2, 3, 4, 5], 3]);

    const pending = await call("listPullRequests", { ...MAIN, state: "PENDING", cursor: "" });
    expect((pending.body as { pullRequests: unknown[] }).pullRequests).toHaveLength(3);
    const since = await call("listPullRequests", { ...MAIN, since: "2026-01-02T00:00:00Z" });
    expect(
      (since.body as { pullRequests: { prNumber: number }[] }).pullRequests.map((p) => p.prNumber),
    ).toEqual([2]);
  });

  it.each([
    [{ take: 0 }, "take"],
    [{ take: 101 }, "take"],
    [{ take: "5" }, "take"],
    [{ state: "queued" }, "state"],
    [{ since: "yesterday" }, "since"],
    [{ cursor: "0f8fad5b-d9cb-469f-a165-70867728950e" }, "cursor"],
  ])("rejects %j naming %s", async (extra, path) => {
    const answer = await call("listPullRequests", { ...MAIN, ...extra });
    expect(answer.status).toBe(400);
    expect(errorOf(answer).details?.map((d) => d.path)).toContain(path);
  });
});

describe("getMergeQueueTestingDetails", () => {
  it("answers Trunk's shape for a known run and 404 for an unknown one", async () => {
    const entry = entryRecord(queueId, { prNumber: 41, prTitle: "Speed up" });
    runtime.entries.push(entry);
    runtime.runs.push({
      id: "run-41",
      queueId,
      kind: "main",
      status: "passed",
      baseSha: "b".repeat(40),
      testBranch: "mainline-merge/main/run-41",
      testBranchSha: "c".repeat(40),
      prs: [{ entryId: entry.id, number: 41, headSha: "d".repeat(40) }],
      unit: [entry.id],
      requiredStatuses: ["test"],
      requiredStatusesSource: "merge_instance",
      checks: [{ name: "test", conclusion: "success", url: null }],
      startedAt: Date.UTC(2026, 10, 25),
      finishedAt: Date.UTC(2026, 10, 25, 0, 5),
    });
    const answer = await call("getMergeQueueTestingDetails", { ...MAIN, testRunId: "run-41" });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      requiredStatuses: ["test"],
      requiredStatusesSource: "merge_instance",
      testBranch: "mainline-merge/main/run-41",
      testBranchSha: "c".repeat(40),
      createdAt: "2026-11-25T00:00:00.000Z",
      status: "succeeded",
      checkSuites: [
        { checkRuns: [{ name: "test", url: "", status: "COMPLETED", conclusion: "SUCCESS" }] },
      ],
      statusChecks: [],
      testedPullRequests: [
        { prNumber: 41, prUrl: "https://github.com/acme/app/pull/41", title: "Speed up" },
      ],
      dependentPrs: [],
    });
    const unknown = await call("getMergeQueueTestingDetails", { ...MAIN, testRunId: "run-0" });
    expect(unknown.status).toBe(404);
    const invalid = await call("getMergeQueueTestingDetails", { ...MAIN, testRunId: "" });
    expect(errorOf(invalid).details?.map((d) => d.path)).toEqual(["testRunId"]);
  });
});

describe("GET getMergeQueueMetrics", () => {
  const get = (query: string, useToken: string | null = token) =>
    send(`/v1/getMergeQueueMetrics${query}`, {
      headers: useToken === null ? {} : { "x-api-token": useToken },
    });

  it("Prometheus text for every queue, or one repository's", async () => {
    runtime.entries.push(entryRecord(queueId, { prNumber: 51, state: "testing" }));
    const all = await get("");
    expect(all.status).toBe(200);
    expect(all.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(all.text).toContain(
      'mq_testing_slots_active{repo="acme/app",branch="main",queue_type="main"} 1',
    );
    expect(all.text).toContain(
      'mq_depth_current{repo="acme/app",branch="drain",queue_type="main"} 0',
    );
    const one = await get("?repo=ACME/app&repoHost=github.com");
    expect(one.status).toBe(200);
    expect(one.text).toContain(
      'mq_depth_current{repo="acme/app",branch="main",queue_type="main"} 1',
    );
  });

  it("400 for repo without repoHost or not owner/name, 404 for a repository without a queue, 401 without a token", async () => {
    const noHost = await get("?repo=acme/app");
    expect(noHost.status).toBe(400);
    expect(errorOf(noHost).details?.map((d) => d.path)).toEqual(["repoHost"]);
    const badRepo = await get("?repo=app&repoHost=github.com");
    expect(errorOf(badRepo).details?.map((d) => d.path)).toEqual(["repo"]);
    const unknown = await get("?repo=acme/other&repoHost=github.com");
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown).message).toBe("No merge queue in github.com/acme/other.");
    expect((await get("", null)).status).toBe(401);
    const post = await call("getMergeQueueMetrics", {});
    expect(post.status).toBe(405);
  });
});

describe("the OpenAPI document of the pull-request routes", () => {
  interface Operation {
    security?: unknown[];
    deprecated?: boolean;
    requestBody?: { content: Record<string, { schema: object }> };
    responses: Record<string, { content?: Record<string, { schema: object }> }>;
  }
  let paths: Record<string, Record<string, Operation>>;
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats.default(ajv);

  beforeAll(async () => {
    paths = ((await send("/openapi.json")).body as { paths: typeof paths }).paths;
  });

  const op = (path: string, method = "post"): Operation => {
    const found = paths[path]?.[method];
    if (!found) throw new Error(`${method} ${path} is not documented`);
    return found;
  };
  const request = (path: string): ValidateFunction =>
    ajv.compile(op(path).requestBody?.content["application/json"]?.schema ?? {});
  const response = (path: string): ValidateFunction =>
    ajv.compile(op(path).responses["200"]?.content?.["application/json"]?.schema ?? {});

  it("documents every operation, authenticated, with its error statuses", () => {
    const operations = [
      "submitPullRequest",
      "queuePullRequest",
      "cancelPullRequest",
      "restartTestsOnPullRequest",
      "getSubmittedPullRequest",
      "getSubmittedPullRequests",
      "listPullRequests",
      "setImpactedTargets",
      "getMergeQueueTestingDetails",
    ];
    for (const name of operations) {
      const documented = op(`/v1/${name}`);
      // A fork's workflow run may stand in for the token on setImpactedTargets only.
      expect(documented.security, name).toEqual(
        name === "setImpactedTargets"
          ? [{ ApiKeyAuth: [] }, { ForkedWorkflowRun: [] }]
          : [{ ApiKeyAuth: [] }],
      );
      expect(Object.keys(documented.responses), name).toEqual(
        expect.arrayContaining(["200", "400", "401", "404", "415"]),
      );
    }
    expect(op("/v1/queuePullRequest").deprecated).toBe(true);
    const metrics = op("/v1/getMergeQueueMetrics", "get");
    expect(metrics.security).toEqual([{ ApiKeyAuth: [] }]);
    expect(Object.keys(metrics.responses["200"]?.content ?? {})).toEqual(["text/plain"]);
  });

  it("answers what the response schemas document", async () => {
    const entry = entryRecord(queueId, { prNumber: 61, usedDefaultPriority: false });
    runtime.entries.push(entry);
    runtime.transitionRecords.push(transition(entry, 1, null, "pending", { runId: "r" }));
    const checks: [string, unknown][] = [
      ["getSubmittedPullRequest", { ...MAIN, pr: { number: 61 }, includeTimeline: true }],
      ["getSubmittedPullRequests", { ...MAIN, prs: [{ number: 61 }, { number: 62 }] }],
      ["listPullRequests", { ...MAIN, take: 1 }],
      ["submitPullRequest", { ...MAIN, pr: { number: 61 } }],
    ];
    for (const [operation, body] of checks) {
      const answer = await call(operation, body);
      expect(answer.status, operation).toBe(200);
      const validate = response(`/v1/${operation}`);
      expect(validate(answer.body), `${operation}: ${ajv.errorsText(validate.errors)}`).toBe(true);
    }
  });

  it("the server accepts exactly what the document describes (pr.number, priority, noBatch, targets)", async () => {
    const validSubmit = request("/v1/submitPullRequest");
    const validTargets = request("/v1/setImpactedTargets");
    const number = fc.oneof(
      fc.integer({ min: -2, max: 20 }),
      fc.constantFrom(
        4294967295,
        4294967296,
        2.5,
        "7",
        "007",
        "4294967295",
        "4294967296",
        "",
        "1e3",
        " 1",
        true,
        null,
      ),
    );
    // Priorities the schema accepts are those the server accepts, except numbers above 255 and
    // unknown names, which the service refuses (described in prose): those are left out.
    const priority = fc.constantFrom(
      0,
      10,
      255,
      -1,
      4294967296,
      1.5,
      "high",
      "URGENT",
      "7",
      true,
      [],
      null,
    );
    const targets = fc.oneof(
      fc.constantFrom("ALL", "all", "IMPACTS_ALL", "Impacts_All", 3, null, {}),
      fc.array(fc.oneof(fc.string({ maxLength: 4 }), fc.integer()), { maxLength: 3 }),
    );
    await fc.assert(
      fc.asyncProperty(
        number,
        fc.option(priority),
        fc.option(fc.constantFrom(true, false, "true", 0)),
        async (n, p, noBatch) => {
          const body = {
            ...MAIN,
            pr: { number: n },
            ...(p === null ? {} : { priority: p }),
            ...(noBatch === null ? {} : { noBatch }),
          };
          const answer = await call("submitPullRequest", body);
          expect(answer.status === 200, JSON.stringify(body)).toBe(validSubmit(body));
          if (answer.status !== 200) expect(answer.status).toBe(400);
        },
      ),
      { numRuns: 150 },
    );
    await fc.assert(
      fc.asyncProperty(number, targets, async (n, t) => {
        const body = { ...MAIN, pr: { number: n, sha: "abc" }, impactedTargets: t };
        const answer = await call("setImpactedTargets", body);
        expect(answer.status === 200, JSON.stringify(body)).toBe(validTargets(body));
      }),
      { numRuns: 150 },
    );
  });
});
