import { beforeAll, describe, expect, it } from "vitest";
import { QUEUE_DEFAULTS } from "../helpers/contract.js";
import { createTestApp, type TestApp } from "../helpers/app.js";
import { REPO } from "../helpers/server.js";

let server: TestApp;
beforeAll(async () => {
  server = await createTestApp();
  // Registered only once the server is up: a failed start leaves nothing to close.
  return () => server.close();
});

type Body = Record<string, unknown>;
let branchCounter = 0;
/** Every test works on a queue of its own branch, so tests never see each other's writes. */
async function freshQueue(extra: Body = {}): Promise<{ repo: typeof REPO; targetBranch: string }> {
  const address = { repo: REPO, targetBranch: `queue-${++branchCounter}` };
  const created = await server.call("createQueue", { ...address, ...extra });
  expect(created.status).toBe(200);
  return address;
}

describe("createQueue", () => {
  it("creates a queue with the defaults", async () => {
    const address = { repo: REPO, targetBranch: "create-defaults" };
    const created = await server.call("createQueue", address);
    expect(created.status).toBe(200);
    // Trunk's answer is {}; github.com has no provider here, so Mainline adds its warning
    // (test/api/host-not-connected.test.ts).
    expect(Object.keys(created.body as object)).toEqual(["warnings"]);
    const read = await server.call("getQueue", address);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      ...QUEUE_DEFAULTS,
      branch: "create-defaults",
      enqueuedPullRequests: [],
      localizations: [],
      host: { state: "ok" },
    });
  });

  it("takes mode and concurrency at creation, in any letter case", async () => {
    const address = await freshQueue({ mode: "PARALLEL", concurrency: 5 });
    const read = await server.call("getQueue", address);
    expect(read.body).toMatchObject({ mode: "parallel", concurrency: 5 });
  });

  it("answers 409 when the queue exists, and leaves it unchanged", async () => {
    const address = await freshQueue({ concurrency: 2 });
    const again = await server.call("createQueue", { ...address, concurrency: 9 });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: { code: "conflict" } });
    expect((await server.call("getQueue", address)).body).toMatchObject({ concurrency: 2 });
  });

  it("keeps queues of different branches and repositories apart", async () => {
    const other = { ...REPO, name: "other-app" };
    await freshQueue();
    const created = await server.call("createQueue", { repo: other, targetBranch: "main" });
    expect(created.status).toBe(200);
    const read = await server.call("getQueue", { repo: other, targetBranch: "main" });
    expect(read.body).toMatchObject({ branch: "main", concurrency: 1 });
  });

  it("ignores settings other than mode and concurrency, and unknown fields", async () => {
    const address = await freshQueue({ batch: true, somethingNew: 1 });
    expect((await server.call("getQueue", address)).body).toMatchObject({ batch: false });
  });

  it.each([
    [{ targetBranch: "main" }, "repo"],
    [{ repo: REPO }, "targetBranch"],
    [{ repo: { host: "github.com", owner: "acme" }, targetBranch: "main" }, "repo.name"],
    [{ repo: { ...REPO, owner: "" }, targetBranch: "main" }, "repo.owner"],
    [{ repo: REPO, targetBranch: "" }, "targetBranch"],
    [{ repo: REPO, targetBranch: "feature..x" }, "targetBranch"],
    [{ repo: REPO, targetBranch: "has space" }, "targetBranch"],
    [{ repo: REPO, targetBranch: "/leading" }, "targetBranch"],
    [{ repo: REPO, targetBranch: "ends.lock" }, "targetBranch"],
    [{ repo: REPO, targetBranch: "main", mode: "serial" }, "mode"],
    [{ repo: REPO, targetBranch: "main", concurrency: 0 }, "concurrency"],
    [{ repo: REPO, targetBranch: "main", concurrency: "2" }, "concurrency"],
    [{ repo: "github.com/acme/app", targetBranch: "main" }, "repo"],
  ])("rejects %j with a 400 naming %s", async (body, path) => {
    const response = await server.call<{ error: { code: string; details: { path: string }[] } }>(
      "createQueue",
      body,
    );
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe("invalid_request");
    expect(response.body.error.details.map((d) => d.path)).toContain(path);
  });

  it("accepts branch names git accepts, slashes included", async () => {
    for (const targetBranch of ["release/2026.11", "feature/a-b_c", "v1.x", "main@2"]) {
      const response = await server.call("createQueue", { repo: REPO, targetBranch });
      expect(response.status, targetBranch).toBe(200);
      expect((await server.call("getQueue", { repo: REPO, targetBranch })).body).toMatchObject({
        branch: targetBranch,
      });
    }
  });
});

describe("getQueue", () => {
  it("answers 404 for an unknown branch or repository", async () => {
    const unknownBranch = await server.call("getQueue", { repo: REPO, targetBranch: "nope" });
    expect(unknownBranch.status).toBe(404);
    expect(unknownBranch.body).toMatchObject({
      error: { code: "not_found", message: expect.stringContaining("nope") as unknown },
    });
    const unknownRepo = await server.call("getQueue", {
      repo: { ...REPO, name: "never-seen" },
      targetBranch: "main",
    });
    expect(unknownRepo.status).toBe(404);
  });

  it("finds the repository whatever the letter case of host, owner and name", async () => {
    const address = await freshQueue();
    const shouted = {
      host: REPO.host.toUpperCase(),
      owner: REPO.owner.toUpperCase(),
      name: REPO.name.toUpperCase(),
    };
    const read = await server.call("getQueue", { ...address, repo: shouted });
    expect(read.status).toBe(200);
  });

  it("treats branch names as case-sensitive, like git", async () => {
    const address = await freshQueue();
    const read = await server.call("getQueue", {
      ...address,
      targetBranch: address.targetBranch.toUpperCase(),
    });
    expect(read.status).toBe(404);
  });
});

describe("updateQueue", () => {
  const everySetting = {
    state: "paused",
    mode: "parallel",
    concurrency: 4294967295,
    bisectionConcurrency: 3,
    testingTimeoutMinutes: 0,
    pendingFailureDepth: 2,
    canOptimisticallyMerge: true,
    batch: true,
    batchingMaxWaitTimeMinutes: 11,
    batchingMinSize: 7,
    mergeMethod: "merge_commit",
    commentsEnabled: false,
    commandsEnabled: false,
    createPrsForTestingBranches: true,
    statusCheckEnabled: false,
    directMergeMode: "always",
    optimizationMode: "bisection_skip_redundant_tests",
    requiredStatuses: ["build", "test (ubuntu)", "build"],
    extensionEnabled: false,
    enqueueingLabel: "ship-it",
    labelCommandsEnabled: false,
    stateLabelsEnabled: true,
    notReadyTimeoutHours: 0,
    speculationThresholdPercent: 30,
  };

  it("writes every setting and echoes each value exactly, without enqueuedPullRequests", async () => {
    const address = await freshQueue();
    const updated = await server.call("updateQueue", { ...address, ...everySetting });
    expect(updated.status).toBe(200);
    expect(updated.body).toEqual({ ...everySetting, branch: address.targetBranch });
    const read = await server.call("getQueue", address);
    // The queue's host (github.com) has no provider on this server: once a step of the queue
    // asked it anything, getQueue says so (Mainline's extension).
    const { host, ...rest } = read.body;
    expect(
      JSON.stringify(host) === '{"state":"ok"}' ||
        /no provider for host github\.com/.test(JSON.stringify(host)),
      JSON.stringify(host),
    ).toBe(true);
    expect(rest).toEqual({
      ...everySetting,
      branch: address.targetBranch,
      enqueuedPullRequests: [],
      // Mainline's extensions: batching is on, and no failure has stood yet.
      batchSize: {
        size: 7,
        ceiling: 7,
        estimatedFailureRate: 0,
        reason:
          "no failure has stood in the queue's recent runs: batches of 7, the most batchingMinSize allows",
      },
      localizations: [],
    });
  });

  it("leaves absent fields unchanged", async () => {
    const address = await freshQueue();
    await server.call("updateQueue", { ...address, concurrency: 3, batch: true });
    const second = await server.call("updateQueue", { ...address, batchingMinSize: 2 });
    expect(second.body).toMatchObject({ concurrency: 3, batch: true, batchingMinSize: 2 });
  });

  it("answers the current settings to an update without fields", async () => {
    const address = await freshQueue({ concurrency: 6 });
    const response = await server.call("updateQueue", address);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      ...QUEUE_DEFAULTS,
      concurrency: 6,
      branch: address.targetBranch,
    });
  });

  it("accepts enum values in any letter case and answers them in lowercase", async () => {
    const address = await freshQueue();
    const response = await server.call("updateQueue", {
      ...address,
      state: "DRAINING",
      mode: "Parallel",
      mergeMethod: "MERGE_COMMIT",
      directMergeMode: "ALWAYS",
      optimizationMode: "Bisection_Skip_Redundant_Tests",
    });
    expect(response.body).toMatchObject({
      state: "draining",
      mode: "parallel",
      mergeMethod: "merge_commit",
      directMergeMode: "always",
      optimizationMode: "bisection_skip_redundant_tests",
    });
  });

  it("distinguishes requiredStatuses null, [], a list, and deleteRequiredStatuses", async () => {
    const address = await freshQueue();
    const statuses = async (body: Body) =>
      (await server.call("updateQueue", { ...address, ...body })).body.requiredStatuses;
    expect(await statuses({ requiredStatuses: ["ci/build"] })).toEqual(["ci/build"]);
    expect(await statuses({ requiredStatuses: [] })).toEqual([]);
    expect(await statuses({ deleteRequiredStatuses: true })).toBeNull();
    expect(await statuses({ requiredStatuses: ["a", "b"] })).toEqual(["a", "b"]);
    expect(await statuses({ concurrency: 2 })).toEqual(["a", "b"]);
    expect(await statuses({ deleteRequiredStatuses: false })).toEqual(["a", "b"]);
    expect(await statuses({ requiredStatuses: null })).toBeNull();
    expect(await statuses({ requiredStatuses: null, deleteRequiredStatuses: true })).toBeNull();
  });

  it("refuses requiredStatuses together with deleteRequiredStatuses: true, changing nothing", async () => {
    const address = await freshQueue();
    const response = await server.call("updateQueue", {
      ...address,
      concurrency: 5,
      requiredStatuses: ["x"],
      deleteRequiredStatuses: true,
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      error: { code: "invalid_request", details: [{ path: "deleteRequiredStatuses" }] },
    });
    expect((await server.call("getQueue", address)).body).toMatchObject({
      concurrency: 1,
      requiredStatuses: null,
    });
  });

  it("accepts the bounds of every integer setting", async () => {
    const address = await freshQueue();
    const max = 4294967295;
    const atMax = {
      concurrency: max,
      bisectionConcurrency: max,
      testingTimeoutMinutes: max,
      pendingFailureDepth: max,
      batchingMaxWaitTimeMinutes: max,
      batchingMinSize: max,
      notReadyTimeoutHours: max,
      speculationThresholdPercent: 100,
    };
    expect((await server.call("updateQueue", { ...address, ...atMax })).body).toMatchObject(atMax);
    const atMin = {
      concurrency: 1,
      bisectionConcurrency: 1,
      testingTimeoutMinutes: 0,
      pendingFailureDepth: 0,
      batchingMaxWaitTimeMinutes: 1,
      batchingMinSize: 1,
      notReadyTimeoutHours: 0,
      speculationThresholdPercent: 0,
    };
    expect((await server.call("updateQueue", { ...address, ...atMin })).body).toMatchObject(atMin);
  });

  it.each([
    ["concurrency", 0],
    ["concurrency", 4294967296],
    ["concurrency", 1.5],
    ["concurrency", -1],
    ["concurrency", "3"],
    ["concurrency", null],
    ["bisectionConcurrency", 0],
    ["testingTimeoutMinutes", -1],
    ["pendingFailureDepth", 4294967296],
    ["batchingMaxWaitTimeMinutes", 0],
    ["batchingMinSize", 0],
    ["notReadyTimeoutHours", -1],
    ["speculationThresholdPercent", -1],
    ["speculationThresholdPercent", 101],
    ["speculationThresholdPercent", 1.5],
    ["speculationThresholdPercent", "30"],
    ["speculationThresholdPercent", null],
    ["state", "switching_modes"],
    ["state", "stopped"],
    ["mode", "graph"],
    ["mergeMethod", "fast_forward"],
    ["directMergeMode", "sometimes"],
    ["optimizationMode", "on"],
    ["batch", "true"],
    ["batch", 1],
    ["commentsEnabled", null],
    ["requiredStatuses", "build"],
    ["requiredStatuses", [""]],
    ["requiredStatuses", [1]],
    ["deleteRequiredStatuses", "yes"],
    ["enqueueingLabel", ""],
    ["enqueueingLabel", "x".repeat(51)],
  ])("rejects %s = %j with a 400 naming the field, changing nothing", async (field, value) => {
    const address = await freshQueue();
    const response = await server.call<{
      error: { code: string; message: string; details: { path: string; message: string }[] };
    }>("updateQueue", { ...address, batch: true, [field]: value });
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe("invalid_request");
    expect(response.body.error.message).toContain(field);
    expect(response.body.error.details[0]?.path.startsWith(field)).toBe(true);
    expect((await server.call("getQueue", address)).body).toEqual({
      ...QUEUE_DEFAULTS,
      branch: address.targetBranch,
      enqueuedPullRequests: [],
      localizations: [],
      host: { state: "ok" },
    });
  });

  it("reports every invalid field at once", async () => {
    const address = await freshQueue();
    const response = await server.call<{ error: { details: { path: string }[] } }>("updateQueue", {
      ...address,
      concurrency: 0,
      mode: "x",
      requiredStatuses: ["ok", ""],
    });
    expect(response.status).toBe(400);
    expect(response.body.error.details.map((d) => d.path).sort()).toEqual([
      "concurrency",
      "mode",
      "requiredStatuses[1]",
    ]);
  });

  it("explains a wrong type for a nullable list in one message", async () => {
    const address = await freshQueue();
    const response = await server.call<{ error: { details: { path: string; message: string }[] } }>(
      "updateQueue",
      { ...address, requiredStatuses: 5 },
    );
    expect(response.body.error.details).toEqual([
      { path: "requiredStatuses", message: "must be an array or null" },
    ]);
  });

  it("answers 404 for a queue that does not exist", async () => {
    const response = await server.call("updateQueue", {
      repo: REPO,
      targetBranch: "no-such-queue",
      concurrency: 2,
    });
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ error: { code: "not_found" } });
  });

  it("changes the mode at once on an empty queue", async () => {
    const address = await freshQueue();
    const response = await server.call("updateQueue", { ...address, mode: "parallel" });
    expect(response.body).toMatchObject({ mode: "parallel", state: "running" });
  });

  it("keeps concurrent partial updates of different fields", async () => {
    const address = await freshQueue();
    const fields = [
      { concurrency: 9 },
      { batch: true },
      { batchingMinSize: 3 },
      { mergeMethod: "rebase" },
      { pendingFailureDepth: 4 },
      { commentsEnabled: false },
    ];
    const responses = await Promise.all(
      fields.map((f) => server.call("updateQueue", { ...address, ...f })),
    );
    expect(responses.map((r) => r.status)).toEqual(fields.map(() => 200));
    expect((await server.call("getQueue", address)).body).toMatchObject(
      Object.assign({}, ...fields),
    );
  });
});

describe("speculationThresholdPercent (Mainline's extension)", () => {
  type Refusal = {
    error: { code: string; message: string; details: { path: string; message: string }[] };
  };

  it("is 0 on a new queue, and createQueue ignores it like other settings", async () => {
    const address = await freshQueue({ speculationThresholdPercent: 50 });
    const read = await server.call("getQueue", address);
    expect(read.body).toMatchObject({ speculationThresholdPercent: 0 });
  });

  it("is set by updateQueue, echoed, kept by later updates, and set back to 0", async () => {
    const address = await freshQueue();
    const set = await server.call("updateQueue", { ...address, speculationThresholdPercent: 30 });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({
      ...QUEUE_DEFAULTS,
      speculationThresholdPercent: 30,
      branch: address.targetBranch,
    });
    expect((await server.call("getQueue", address)).body).toMatchObject({
      speculationThresholdPercent: 30,
    });
    const other = await server.call("updateQueue", { ...address, concurrency: 3 });
    expect(other.body).toMatchObject({ concurrency: 3, speculationThresholdPercent: 30 });
    const reset = await server.call("updateQueue", { ...address, speculationThresholdPercent: 0 });
    expect(reset.body).toMatchObject({ concurrency: 3, speculationThresholdPercent: 0 });
    expect((await server.call("getQueue", address)).body).toMatchObject({
      speculationThresholdPercent: 0,
    });
  });

  it.each([
    [-1, "must be a whole number from 0 to 100"],
    [101, "must be a whole number from 0 to 100"],
    [1.5, "must be an integer"],
    ["30", "must be an integer"],
  ])("refuses %j, saying why, and keeps the value it had", async (value, why) => {
    const address = await freshQueue();
    await server.call("updateQueue", { ...address, speculationThresholdPercent: 30 });
    const response = await server.call<Refusal>("updateQueue", {
      ...address,
      concurrency: 2,
      speculationThresholdPercent: value,
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({
      code: "invalid_request",
      message: `Invalid request: speculationThresholdPercent ${why}.`,
      details: [{ path: "speculationThresholdPercent", message: why }],
    });
    expect((await server.call("getQueue", address)).body).toMatchObject({
      concurrency: 1,
      speculationThresholdPercent: 30,
    });
  });
});

describe("deleteQueue", () => {
  it("deletes an empty queue, answers {}, and the branch can get a new queue", async () => {
    const address = await freshQueue({ concurrency: 3 });
    const deleted = await server.call("deleteQueue", address);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({});
    expect((await server.call("getQueue", address)).status).toBe(404);
    expect((await server.call("createQueue", address)).status).toBe(200);
    expect((await server.call("getQueue", address)).body).toMatchObject({ concurrency: 1 });
  });

  it("answers 404 for a queue that does not exist", async () => {
    const response = await server.call("deleteQueue", { repo: REPO, targetBranch: "gone" });
    expect(response.status).toBe(404);
  });

  it("validates its input", async () => {
    const response = await server.call("deleteQueue", { repo: REPO });
    expect(response.status).toBe(400);
  });
});
