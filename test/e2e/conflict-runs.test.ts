/**
 * Every run a pull request's timeline names can be looked up (issue 14, item 8), also one whose
 * test branch could not be built because of a conflict: no check ran, but `ci runs` lists it and
 * `ci logs` says why it has no log, instead of "No CI run".
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  QUEUE,
  allConcluded,
  createRepositoryAndQueue,
  ok,
  openPullRequest,
  stateOf,
  submit,
  type Call,
} from "../helpers/local-queue.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface ListedRun {
  runId: string;
  status: string;
  prNumbers: number[];
  checks: unknown[];
  error: { reason: string; message: string } | null;
}

describe("runs that ended on a conflict", () => {
  it("are listed by the CI with the queue's words, and their logs say that no check ran", async () => {
    server = await startTestServer({ engine: { pollMs: 100 } });
    const s = server;
    const call: Call = (operation, body) => s.call(operation, body);
    const project = await createRepositoryAndQueue(call, { testingTimeoutMinutes: 0 });
    const first = await openPullRequest(call, project, 1, { "shared.txt": "first\n" });
    const second = await openPullRequest(call, project, 2, { "shared.txt": "second\n" });
    await ok(call, "updateQueue", { ...QUEUE, state: "paused" });
    await submit(call, first);
    await submit(call, second);
    await ok(call, "updateQueue", { ...QUEUE, state: "running" });
    await waitFor(() => allConcluded(call, [first, second]), "both to conclude", {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    expect(await stateOf(call, second)).toBe("failed");

    const { timeline } = await ok<{
      timeline: { testRunId: string | null; reason: string; detail: string | null }[];
    }>(call, "getSubmittedPullRequest", {
      ...QUEUE,
      pr: { number: second },
      includeTimeline: true,
    });
    const conflict = timeline.find((t) => t.reason === "merge_conflict");
    const runId = conflict?.testRunId ?? "";
    expect(runId).not.toBe("");

    const { runs } = await ok<{ runs: ListedRun[] }>(call, "local/listCiRuns", QUEUE);
    expect(runs.find((r) => r.runId === runId)).toEqual({
      ...runs.find((r) => r.runId === runId),
      status: "error",
      prNumbers: [second],
      checks: [],
      error: {
        reason: "merge_conflict",
        message: `its test branch could not be built: ${conflict?.detail ?? ""}`,
      },
    });
    // Newest first, with the runner's runs.
    expect(runs.map((r) => r.runId)[0]).toBe(runId);
    expect(runs).toHaveLength(2);

    const log = await call("local/getCiLog", { ...QUEUE, runId, check: "test" });
    expect(log.status).toBe(404);
    expect(JSON.stringify(log.body)).toContain(`Run ${runId} ran no checks`);
    expect(JSON.stringify(log.body)).toContain("shared.txt");
    const details = await call("getMergeQueueTestingDetails", { ...QUEUE, testRunId: runId });
    expect(details.status).toBe(200);

    const unknown = await call("local/getCiLog", { ...QUEUE, runId: "no-such-run", check: "test" });
    expect(unknown.status).toBe(404);
    expect(JSON.stringify(unknown.body)).toContain("No CI run no-such-run");
  }, 90_000);
});
