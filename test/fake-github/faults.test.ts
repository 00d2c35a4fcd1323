import { Octokit } from "@octokit/core";
import { RequestError } from "@octokit/request-error";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FakeGitHub, type CreatedApp } from "../helpers/fake-github/index.js";
import { WebhookReceiver } from "../helpers/fake-github/receiver.js";

let gh: FakeGitHub;
let app: CreatedApp;
let octokit: Octokit;
const NAME = "acme/widgets";
const R = { owner: "acme", repo: "widgets" };

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 17 });
  gh.createOrganization("acme");
  gh.createUser("alice");
  gh.addOrgMember("acme", "alice", "admin");
  await gh.createRepository({ owner: "acme", name: "widgets" });
  app = gh.createApp({ slug: "mainline" });
  octokit = new Octokit({
    baseUrl: gh.url,
    auth: gh.installationToken(gh.installApp(app.id, { account: "acme" }).id),
  });
});

afterEach(() => {
  gh.faults.clear();
});

afterAll(async () => {
  await gh.close();
  gh.schema.assertValid();
});

async function failure(promise: Promise<unknown>): Promise<RequestError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof RequestError))
    throw new Error(`expected a RequestError, got ${String(error)}`);
  return error;
}

let branches = 0;
async function openPr(): Promise<number> {
  const branch = `fault-${++branches}`;
  await gh.commit(NAME, { branch, from: "main", files: { [`${branch}.txt`]: "x\n" } });
  return gh.openPullRequest(NAME, { head: branch });
}

const merge = (n: number): Promise<unknown> =>
  octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
    ...R,
    pull_number: n,
    merge_method: "squash",
  });
const merged = async (n: number): Promise<boolean> =>
  (await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { ...R, pull_number: n }))
    .data.merged;

describe("merge faults", () => {
  it("405 base branch modified: nothing lands", async () => {
    const n = await openPr();
    gh.addFault(gh.fault.baseBranchModified());
    const error = await failure(merge(n));
    expect([error.status, error.message]).toEqual([
      405,
      expect.stringMatching(
        /^Base branch was modified\. Review and try the merge again\./,
      ) as unknown,
    ]);
    expect(await merged(n)).toBe(false);
    await merge(n);
    expect(await merged(n)).toBe(true);
  });

  it("405 merge already in progress, and the ghost merge that landed anyway", async () => {
    const plain = await openPr();
    gh.addFault(gh.fault.mergeAlreadyInProgress());
    expect((await failure(merge(plain))).message).toMatch(/^Merge already in progress/);
    expect(await merged(plain)).toBe(false);

    const ghost = await openPr();
    const before = await gh.readRef(NAME, "heads/main");
    gh.addFault(gh.fault.mergeAlreadyInProgress({ merged: true }));
    expect((await failure(merge(ghost))).status).toBe(405);
    expect(await merged(ghost)).toBe(true);
    expect(
      (
        await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
          ...R,
          pull_number: ghost,
        })
      ).status,
    ).toBe(204);
    expect(await gh.readRef(NAME, "heads/main")).not.toBe(before);
    // Trying again now is refused: it already merged.
    expect((await failure(merge(ghost))).status).toBe(405);
  });

  it("409 head branch modified although the head did not move", async () => {
    const n = await openPr();
    const head = gh.pullRequest(NAME, n).headSha;
    gh.addFault(gh.fault.headBranchModified());
    const error = await failure(
      octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        ...R,
        pull_number: n,
        sha: head,
      }),
    );
    expect([error.status, error.message]).toEqual([
      409,
      expect.stringMatching(/^Head branch was modified/) as unknown,
    ]);
    expect(gh.pullRequest(NAME, n).headSha).toBe(head);
  });

  it("409 on POST /merges that is a permission glitch, not a conflict", async () => {
    const base = (await gh.readRef(NAME, "heads/main")) ?? "";
    await octokit.request("POST /repos/{owner}/{repo}/git/refs", {
      ...R,
      ref: "refs/heads/trunk-temp/x",
      sha: base,
    });
    const head = await gh.commit(NAME, {
      branch: "mergeable",
      from: "main",
      files: { "m.txt": "m\n" },
    });
    gh.addFault(gh.fault.mergesPermissionConflict());
    const error = await failure(
      octokit.request("POST /repos/{owner}/{repo}/merges", { ...R, base: "trunk-temp/x", head }),
    );
    expect([error.status, error.message]).toEqual([
      409,
      expect.stringMatching(/not authorized to push/) as unknown,
    ]);
    expect(await gh.readRef(NAME, "heads/trunk-temp/x")).toBe(base);
    expect(
      (
        await octokit.request("POST /repos/{owner}/{repo}/merges", {
          ...R,
          base: "trunk-temp/x",
          head,
        })
      ).status,
    ).toBe(201);
  });

  it("a change that happens but answers an error", async () => {
    const base = (await gh.readRef(NAME, "heads/main")) ?? "";
    gh.addFault(gh.fault.succeedsButErrors("git/create-ref", 502));
    const error = await failure(
      octokit.request("POST /repos/{owner}/{repo}/git/refs", {
        ...R,
        ref: "refs/heads/landed-anyway",
        sha: base,
      }),
    );
    expect(error.status).toBe(502);
    expect(await gh.readRef(NAME, "heads/landed-anyway")).toBe(base);
  });
});

describe("transport faults", () => {
  it("5xx: JSON for 500/503, HTML for 502", async () => {
    gh.addFault(gh.fault.serverError("repos/get", 500));
    const e500 = await failure(octokit.request("GET /repos/{owner}/{repo}", R));
    expect([e500.status, e500.response?.data]).toEqual([
      500,
      expect.objectContaining({ message: "Server Error" }) as unknown,
    ]);
    gh.addFault(gh.fault.serverError("repos/get", 502));
    const e502 = await failure(octokit.request("GET /repos/{owner}/{repo}", R));
    expect(e502.status).toBe(502);
    expect(e502.response?.headers["content-type"]).toMatch(/^text\/html/);
  });

  it("secondary limits carry retry-after; 429 too; GitHub's message names the secondary limit", async () => {
    gh.addFault(gh.fault.secondaryRateLimit("repos/get", 7));
    const e403 = await failure(octokit.request("GET /repos/{owner}/{repo}", R));
    expect(e403.status).toBe(403);
    expect(e403.message).toMatch(/\bsecondary rate\b/);
    expect(e403.response?.headers["retry-after"]).toBe("7");
    gh.addFault(gh.fault.tooManyRequests("repos/get", 3));
    const e429 = await failure(octokit.request("GET /repos/{owner}/{repo}", R));
    expect([e429.status, e429.response?.headers["retry-after"]]).toEqual([429, "3"]);
  });

  it("the primary limit, spent, answers 403 with remaining 0 and the reset, then recovers", async () => {
    const own = new Octokit({
      baseUrl: gh.url,
      auth: gh.installationToken(
        gh.installApp(gh.createApp({ slug: "other" }).id, { account: "acme" }).id,
      ),
    });
    // Long enough that the second request still falls before the reset on a loaded machine.
    gh.addFault(gh.fault.primaryRateLimit("repos/get", 4));
    const error = await failure(own.request("GET /repos/{owner}/{repo}", R));
    expect(error.status).toBe(403);
    expect(error.message).toMatch(/^API rate limit exceeded for installation ID \d+\./);
    expect(error.response?.headers["x-ratelimit-remaining"]).toBe("0");
    const reset = Number(error.response?.headers["x-ratelimit-reset"]);
    expect(reset * 1000).toBeGreaterThan(Date.now() - 1000);
    // Every route is refused until the reset, not only the one that tripped it.
    expect((await failure(own.request("GET /repos/{owner}/{repo}/pulls", R))).status).toBe(403);
    await new Promise((r) => setTimeout(r, reset * 1000 - Date.now() + 50));
    expect((await own.request("GET /repos/{owner}/{repo}", R)).status).toBe(200);
  });

  it("the primary limit runs out for real at the configured budget", async () => {
    const small = await FakeGitHub.start({ rateLimit: 3 });
    try {
      small.createOrganization("acme");
      small.createUser("alice");
      small.addOrgMember("acme", "alice", "admin");
      await small.createRepository({ owner: "acme", name: "widgets" });
      const client = new Octokit({
        baseUrl: small.url,
        auth: small.installationToken(
          small.installApp(small.createApp({ slug: "s" }).id, { account: "acme" }).id,
        ),
      });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++)
        statuses.push(
          await client.request("GET /repos/{owner}/{repo}", R).then(
            (r) => r.status,
            (e: unknown) => (e as RequestError).status,
          ),
        );
      expect(statuses).toEqual([200, 200, 200, 403]);
    } finally {
      await small.close();
    }
  });

  it("delays, skips, counts, and acts with a seeded probability", async () => {
    gh.addFault(gh.fault.delay("repos/get", 150));
    const started = Date.now();
    await octokit.request("GET /repos/{owner}/{repo}", R);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    const rule = gh.addFault(gh.fault.serverError("repos/get", 503, { skip: 1, times: 2 }));
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push(
        await octokit.request("GET /repos/{owner}/{repo}", R).then(
          (r) => r.status,
          (e: unknown) => (e as RequestError).status,
        ),
      );
    expect(statuses).toEqual([200, 503, 503, 200]);
    expect(gh.faults.fired(rule)).toBe(2);
    gh.addFault(gh.fault.serverError("repos/get", 503, { times: Infinity, probability: 0.5 }));
    const chancy: number[] = [];
    for (let i = 0; i < 20; i++)
      chancy.push(
        await octokit.request("GET /repos/{owner}/{repo}", R).then(
          (r) => r.status,
          (e: unknown) => (e as RequestError).status,
        ),
      );
    expect(chancy).toContain(503);
    expect(chancy).toContain(200);
  });

  it("JWT faults: 401 with the iat message on App routes", async () => {
    gh.addFault(gh.fault.jwtIssuedAtRejected());
    const { createAppAuth } = await import("@octokit/auth-app");
    const appClient = new Octokit({
      baseUrl: gh.url,
      authStrategy: createAppAuth,
      auth: { appId: app.id, privateKey: app.privateKey },
      log: {
        debug: () => undefined,
        info: () => undefined,
        warn: () => undefined,
        error: () => undefined,
      },
    });
    const mark = gh.requests.mark();
    const { data } = await appClient.request("GET /app");
    expect(data?.slug).toBe("mainline");
    expect(gh.requests.filter({ since: mark }).map((e) => [e.status, e.fault])).toEqual([
      [401, "401 JWT iat"],
      [200, null],
    ]);
  });

  it("logs requests per operation, and finds no bad token where none was used", () => {
    const counts = gh.requests.byOperation();
    expect(counts["repos/get"]).toBeGreaterThan(20);
    expect(counts["pulls/merge"]).toBeGreaterThan(3);
    expect(gh.requests.badTokenRequests()).toEqual([]);
  });
});

describe("webhook chaos", () => {
  let receiver: WebhookReceiver;
  let chaos: FakeGitHub;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    chaos = await FakeGitHub.start({ seed: 99 });
    chaos.createOrganization("acme");
    chaos.createUser("alice");
    chaos.addOrgMember("acme", "alice", "admin");
    await chaos.createRepository({ owner: "acme", name: "widgets" });
    chaos.installApp(chaos.createApp({ slug: "mainline", webhookUrls: [receiver.url] }).id, {
      account: "acme",
    });
    await receiver.waitFor(1);
  });

  afterAll(async () => {
    await chaos.close();
    await receiver.close();
  });

  const pushes = async (count: number, prefix: string): Promise<string[]> => {
    const guids: string[] = [];
    for (let i = 0; i < count; i++) {
      const before = chaos.deliveries("push").length;
      await chaos.commit(NAME, {
        branch: `${prefix}-${i}`,
        from: "main",
        files: { [`${prefix}${i}`]: "x\n" },
      });
      guids.push(chaos.deliveries("push")[before]?.guid ?? "");
    }
    return guids;
  };

  it("delivers in order without chaos, and shuffled when reordered", async () => {
    let start = receiver.received.length;
    const ordered = await pushes(5, "calm");
    await chaos.settleWebhooks();
    expect(
      receiver.received
        .slice(start)
        .filter((r) => r.event === "push")
        .map((r) => r.delivery),
    ).toEqual(ordered);

    chaos.setWebhookChaos({ reorder: 8 });
    start = receiver.received.length;
    const shuffled = await pushes(8, "wild");
    await chaos.settleWebhooks();
    const arrived = receiver.received
      .slice(start)
      .filter((r) => r.event === "push")
      .map((r) => r.delivery);
    expect([...arrived].sort()).toEqual([...shuffled].sort());
    expect(arrived).not.toEqual(shuffled);
    chaos.setWebhookChaos({});
  });

  it("duplicates (same delivery GUID), drops (redeliverable), and delivers late past the timeout", async () => {
    chaos.setWebhookChaos({ duplicate: 1 });
    let start = receiver.received.length;
    const [dup] = await pushes(1, "dup");
    await chaos.settleWebhooks();
    expect(receiver.received.slice(start).filter((r) => r.delivery === dup)).toHaveLength(2);

    chaos.setWebhookChaos({ drop: 1 });
    start = receiver.received.length;
    const [dropped] = await pushes(1, "drop");
    await chaos.settleWebhooks();
    expect(receiver.received.slice(start).some((r) => r.delivery === dropped)).toBe(false);
    expect(chaos.deliveries().find((d) => d.guid === dropped)?.dropped).toBe(true);
    chaos.setWebhookChaos({});
    await chaos.webhooks.redeliver(dropped ?? "");
    expect(receiver.received.filter((r) => r.delivery === dropped)).toHaveLength(1);

    chaos.setWebhookChaos({ late: 1, lateMs: 300 });
    const quick = Date.now();
    const [late] = await pushes(1, "late");
    await chaos.settleWebhooks();
    const arrival = receiver.received.find((r) => r.delivery === late);
    expect(arrival).toBeDefined();
    expect(Date.now() - quick).toBeGreaterThanOrEqual(300);
    chaos.setWebhookChaos({});
  });

  it("records a receiver that answers too slowly as a failed attempt", async () => {
    const slow = await FakeGitHub.start({ seed: 5, webhookTimeoutMs: 100 });
    const sleepy = await WebhookReceiver.start();
    try {
      sleepy.delayMs = 400;
      slow.createOrganization("acme");
      slow.installApp(slow.createApp({ slug: "m", webhookUrls: [sleepy.url] }).id, {
        account: "acme",
      });
      await slow.settleWebhooks();
      const attempt = slow.deliveries("installation")[0]?.attempts[0];
      expect(attempt?.status).toBeNull();
      expect(attempt?.error).toMatch(/abort|timeout/i);
      expect(sleepy.received).toHaveLength(1);
    } finally {
      await slow.close();
      await sleepy.close();
    }
  });

  it("holds deliveries while paused, and takes turns between two receivers", async () => {
    const second = await WebhookReceiver.start();
    const duo = await FakeGitHub.start({ seed: 3, webhookMode: "round-robin" });
    try {
      duo.createOrganization("acme");
      duo.createUser("alice");
      duo.addOrgMember("acme", "alice", "admin");
      await duo.createRepository({ owner: "acme", name: "widgets" });
      const first = await WebhookReceiver.start();
      try {
        duo.installApp(duo.createApp({ slug: "m", webhookUrls: [first.url, second.url] }).id, {
          account: "acme",
        });
        duo.webhooks.pause();
        for (let i = 0; i < 4; i++)
          await duo.commit(NAME, { branch: `rr-${i}`, from: "main", files: { [`rr${i}`]: "x\n" } });
        await duo.settleWebhooks();
        expect(first.received.length + second.received.length).toBe(0);
        duo.webhooks.resume();
        await first.waitFor(3);
        await second.waitFor(2);
        await duo.settleWebhooks();
        expect(first.received.length + second.received.length).toBe(5);
        expect(Math.abs(first.received.length - second.received.length)).toBeLessThanOrEqual(1);
      } finally {
        await first.close();
      }
    } finally {
      await duo.close();
      await second.close();
    }
  });
});
