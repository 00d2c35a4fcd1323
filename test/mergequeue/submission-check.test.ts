/**
 * submitPullRequest on a host that stores its pull requests (ADR 0018): checked from the stored
 * record with the same errors as the driver gives, then handed to the inbox with `accept` (no
 * wait for the driver); other hosts still wait for the driver's answer (`execute`).
 */
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/lib/errors.js";
import type { QueueCommand } from "../../src/mergequeue/model.js";
import {
  PullRequestService,
  type PullRequestServiceDeps,
} from "../../src/mergequeue/pull-request-service.js";
import type { EntryRecord, MergeQueueRecord } from "../../src/mergequeue/records.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";

const principal = { organizationId: "o1", organizationSlug: "acme", tokenId: "t1" };
const actor = { kind: "user" as const, name: "dev" };
const LOCAL = { repo: { host: "local", owner: "acme", name: "shop" }, targetBranch: "main" };
const REMOTE = { repo: { host: "github.com", owner: "acme", name: "app" }, targetBranch: "main" };

function setUp(
  options: {
    state?: "running" | "draining";
    queued?: number[];
    configWarnings?: PullRequestServiceDeps["configWarnings"];
  } = {},
) {
  const calls = { accepted: [] as QueueCommand[], executed: [] as QueueCommand[] };
  const records = new Map<number, "open" | "closed" | "merged">([
    [1, "open"],
    [2, "closed"],
    [3, "merged"],
  ]);
  const queue: MergeQueueRecord = {
    id: "q1",
    repositoryId: "r1",
    targetBranch: "main",
    configuration: { ...initialConfiguration({}), state: options.state ?? "running" },
    createdAt: 1,
    updatedAt: 1,
    version: 1,
  };
  const deps = {
    queues: {
      find: (_org: string, repo: { host: string }) =>
        Promise.resolve(repo.host === "nowhere" ? undefined : queue),
      listForOrganization: () => Promise.resolve([]),
    },
    runtime: {
      latestEntry: (_queueId: string, number: number) =>
        Promise.resolve(
          options.queued?.includes(number)
            ? ({ prNumber: number, concludedAt: null } as EntryRecord)
            : undefined,
        ),
    },
    commands: {
      execute: (_queueId: string, command: QueueCommand) => {
        calls.executed.push(command);
        return Promise.resolve({ ok: true as const });
      },
      accept: (_queueId: string, command: QueueCommand) => {
        calls.accepted.push(command);
        return Promise.resolve();
      },
    },
    clock: { now: () => 1 },
    storedPullRequest: (repo: { host: string }, number: number) => {
      if (repo.host !== "local") return null;
      const state = records.get(number);
      return Promise.resolve(state ? { state } : undefined);
    },
    ...(options.configWarnings ? { configWarnings: options.configWarnings } : {}),
  } as unknown as PullRequestServiceDeps;
  return { service: new PullRequestService(deps), calls };
}

const numbers = (commands: QueueCommand[]) =>
  commands.map((c) => ("prNumber" in c ? c.prNumber : null));

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe("submitPullRequest answered once stored", () => {
  it("hands an open pull request of a local repository to the inbox without waiting", async () => {
    const { service, calls } = setUp();
    await service.submit(principal, LOCAL, { prNumber: 1, priority: "high" }, actor);
    expect(calls.accepted).toEqual([
      { type: "submit", prNumber: 1, priority: 10, noBatch: false, actor },
    ]);
    expect(calls.executed).toEqual([]);
  });

  it("keeps the synchronous errors: unknown 404, closed or merged 409, draining 409, bad priority 400", async () => {
    const { service, calls } = setUp();
    const unknown = await refusal(service.submit(principal, LOCAL, { prNumber: 9 }, actor));
    expect([unknown.code, unknown.message]).toEqual([
      "not_found",
      "Pull request #9 does not exist in acme/shop.",
    ]);
    for (const [number, state] of [
      [2, "closed"],
      [3, "merged"],
    ] as const) {
      const refused = await refusal(service.submit(principal, LOCAL, { prNumber: number }, actor));
      expect([refused.code, refused.message]).toEqual([
        "conflict",
        `Pull request #${String(number)} is ${state}; only open pull requests can be queued.`,
      ]);
    }
    const noQueue = await refusal(
      service.submit(
        principal,
        { ...LOCAL, repo: { ...LOCAL.repo, host: "nowhere" } },
        { prNumber: 1 },
        actor,
      ),
    );
    expect(noQueue.code).toBe("not_found");
    const badPriority = await refusal(
      service.submit(principal, LOCAL, { prNumber: 1, priority: "soon" }, actor),
    );
    expect(badPriority.code).toBe("invalid_request");
    expect(calls.accepted).toEqual([]);

    const draining = setUp({ state: "draining", queued: [1] });
    const late = await refusal(draining.service.submit(principal, LOCAL, { prNumber: 4 }, actor));
    expect(late.code).toBe("conflict");
    // A pull request it holds may still change its priority.
    await draining.service.submit(principal, LOCAL, { prNumber: 1, priority: "urgent" }, actor);
    expect(numbers(draining.calls.accepted)).toEqual([1]);
  });

  it("a host that stores no pull requests still waits for the driver's answer", async () => {
    const { service, calls } = setUp();
    await service.submit(principal, REMOTE, { prNumber: 1 }, actor);
    expect(numbers(calls.executed)).toEqual([1]);
    expect(calls.accepted).toEqual([]);
  });
});

describe("a submission's configuration warnings", () => {
  const warning = {
    code: "config_unknown_key",
    message: "colour: unknown key",
    file: ".mainline.yml",
    line: 1,
  };

  it("are the answer, on either path; a submission refused gets none", async () => {
    const asked: number[] = [];
    const { service, calls } = setUp({
      configWarnings: (_queue, _repo, prNumber) => {
        asked.push(prNumber);
        return Promise.resolve([warning]);
      },
    });
    expect(await service.submit(principal, LOCAL, { prNumber: 1 }, actor)).toEqual({
      warnings: [warning],
    });
    expect(await service.submit(principal, REMOTE, { prNumber: 1 }, actor)).toEqual({
      warnings: [warning],
    });
    await refusal(service.submit(principal, LOCAL, { prNumber: 2 }, actor));
    expect(asked).toEqual([1, 1]);
    expect(numbers(calls.accepted)).toEqual([1]);
  });

  it("a check that fails leaves the submission as it is, with no warnings", async () => {
    const { service, calls } = setUp({
      configWarnings: () => Promise.reject(new Error("git: cannot read")),
    });
    expect(await service.submit(principal, LOCAL, { prNumber: 1 }, actor)).toEqual({
      warnings: [],
    });
    expect(numbers(calls.accepted)).toEqual([1]);
  });
});
