import { createAppAuth } from "@octokit/auth-app";
import { Octokit } from "@octokit/core";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeGitHub, type CreatedApp } from "../helpers/fake-github/index.js";

/**
 * The client Mainline's provider is built on (core + auth-app + retry + throttling) against the
 * fake: the faults are GitHub's, and the libraries must recover from them as they do on GitHub.
 */

let gh: FakeGitHub;
let app: CreatedApp;
let installationId: number;
const R = { owner: "acme", repo: "widgets" };
const Client = Octokit.plugin(retry, throttling);
const limits: string[] = [];

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 13 });
  gh.createOrganization("acme");
  gh.createUser("alice");
  gh.addOrgMember("acme", "alice", "admin");
  await gh.createRepository({ owner: "acme", name: "widgets" });
  app = gh.createApp({ slug: "mainline" });
  installationId = gh.installApp(app.id, { account: "acme" }).id;
});

afterAll(async () => {
  await gh.close();
  gh.schema.assertValid();
});

function client(throttleBase = 20): InstanceType<typeof Client> {
  return new Client({
    baseUrl: gh.url,
    authStrategy: createAppAuth,
    auth: { appId: app.id, privateKey: app.privateKey, installationId },
    retry: { retryAfterBaseValue: 5 },
    throttle: {
      retryAfterBaseValue: throttleBase,
      onRateLimit: (_after: number, _options: unknown, _octokit: unknown, retryCount: number) => {
        limits.push("primary");
        return retryCount < 2;
      },
      onSecondaryRateLimit: (
        _after: number,
        _options: unknown,
        _octokit: unknown,
        retryCount: number,
      ) => {
        limits.push("secondary");
        return retryCount < 2;
      },
    },
    log: {
      debug: () => undefined,
      info: () => undefined,
      warn: () => undefined,
      error: () => undefined,
    },
  });
}

describe("a real Octokit client against the fake", () => {
  it("mints a token and recovers from the 401 GitHub answers right after minting", async () => {
    const mark = gh.requests.mark();
    const rule = gh.addFault(gh.fault.unauthorizedAfterMint(5_000, { times: 1 }));
    const { data } = await client().request("GET /repos/{owner}/{repo}", R);
    expect(data.full_name).toBe("acme/widgets");
    expect(gh.faults.fired(rule)).toBe(1);
    const log = gh.requests.entries.slice(mark).map((e) => [e.operationId, e.status]);
    expect(log).toEqual([
      ["apps/create-installation-access-token", 201],
      ["repos/get", 401],
      ["repos/get", 200],
    ]);
    gh.requests.assertNoBadTokens();
  });

  it("retries server errors (plugin-retry), an HTML 502 included", async () => {
    const octokit = client();
    await octokit.request("GET /repos/{owner}/{repo}", R);
    const mark = gh.requests.mark();
    gh.addFault(gh.fault.serverError("repos/get", 502, { times: 1 }));
    gh.addFault(gh.fault.serverError("repos/get", 503, { times: 1 }));
    const { data } = await octokit.request("GET /repos/{owner}/{repo}", R);
    expect(data.name).toBe("widgets");
    expect(gh.requests.filter({ since: mark }).map((e) => e.status)).toEqual([502, 503, 200]);
  });

  it("waits out a secondary rate limit for its retry-after (plugin-throttling), 403 and 429 alike", async () => {
    const octokit = client();
    await octokit.request("GET /repos/{owner}/{repo}", R);
    limits.length = 0;
    const mark = gh.requests.mark();
    gh.addFault(gh.fault.secondaryRateLimit("repos/get", 1, { times: 1 }));
    gh.addFault(gh.fault.tooManyRequests("repos/get", 1, { times: 1 }));
    const { data } = await octokit.request("GET /repos/{owner}/{repo}", R);
    expect(data.name).toBe("widgets");
    // The 403 goes through throttling's secondary-limit handler; the 429 may be retried by either plugin.
    expect(limits[0]).toBe("secondary");
    const entries = gh.requests.filter({ since: mark });
    expect(entries.map((e) => e.status)).toEqual([403, 429, 200]);
    // It waited at least retry-after × the base value between attempts.
    expect((entries[1]?.atMs ?? 0) - (entries[0]?.atMs ?? 0)).toBeGreaterThanOrEqual(20);
  });

  it("waits for the primary rate limit's reset (x-ratelimit-remaining: 0)", async () => {
    const octokit = client(1000);
    await octokit.request("GET /repos/{owner}/{repo}", R);
    limits.length = 0;
    const mark = gh.requests.mark();
    gh.addFault(gh.fault.primaryRateLimit("repos/get", 1, { times: 1 }));
    const started = Date.now();
    const { data } = await octokit.request("GET /repos/{owner}/{repo}", R);
    expect(data.name).toBe("widgets");
    expect(limits).toEqual(["primary"]);
    expect(gh.requests.filter({ since: mark }).map((e) => e.status)).toEqual([403, 200]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });
});
