/**
 * The pure parts of the GitHub connection: the webhook signature (GitHub's own test vector), the
 * bounded caches of clients and tokens, the repository diff of a sync, the proof-of-control
 * decisions, the handler registry, the App manifest, retry waits and the redaction of GitHub's
 * secrets.
 */
import { describe, expect, it } from "vitest";
import { redactSecrets } from "../../src/lib/redact.js";
import {
  diffRepositories,
  type GitHubRepositoryRecord,
} from "../../src/organizations/github-installations.js";
import {
  ALWAYS_DELIVERED_EVENTS,
  APP_EVENTS,
  APP_PERMISSIONS,
  appManifest,
  registrationUrl,
  webUrlOf,
} from "../../src/providers/github/manifest.js";
import { decideMembershipProof, decideUserProof } from "../../src/providers/github/proof.js";
import { BoundedMap } from "../../src/lib/bounded-map.js";
import {
  InstallationTokenCache,
  TOKEN_REFRESH_MARGIN_MS,
} from "../../src/providers/github/token-cache.js";
import { WebhookInbox, retryDelay } from "../../src/providers/webhook-inbox.js";
import { WebhookHandlers } from "../../src/providers/github/webhooks/registry.js";
import { signBody, verifySignature } from "../../src/providers/github/webhooks/signature.js";
import { DeliveryWriter } from "../../src/providers/webhook-writer.js";
import type {
  ClaimedDelivery,
  DeliveryRecords,
  NewDelivery,
} from "../../src/mergequeue/webhook-delivery-records.js";

describe("webhook signatures", () => {
  it("match GitHub's test vector, over the exact bytes", () => {
    // docs.github.com, "Validating webhook deliveries".
    const secret = "It's a Secret to Everybody";
    const body = Buffer.from("Hello, World!");
    const vector = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    expect(signBody(secret, body)).toBe(vector);
    expect(verifySignature(secret, body, vector)).toBe(true);
    expect(verifySignature(secret, body, vector.toUpperCase().replace("SHA256", "sha256"))).toBe(
      true,
    );
  });

  it("refuse anything else: another secret, another body, a cut or missing signature", () => {
    const secret = "It's a Secret to Everybody";
    const body = Buffer.from("Hello, World!");
    const good = signBody(secret, body);
    expect(verifySignature("another secret", body, good)).toBe(false);
    expect(verifySignature(secret, Buffer.from("Hello, World?"), good)).toBe(false);
    expect(verifySignature(secret, body, good.slice(0, -1))).toBe(false);
    expect(verifySignature(secret, body, good.replace("sha256=", "sha1="))).toBe(false);
    expect(verifySignature(secret, body, "")).toBe(false);
    expect(verifySignature(secret, body, undefined)).toBe(false);
    // Bytes that are not UTF-8 are signed as they are, not as text.
    const binary = Buffer.from([0xff, 0xfe, 0x00, 0x80]);
    expect(verifySignature(secret, binary, signBody(secret, binary))).toBe(true);
    expect(verifySignature(secret, binary, signBody(secret, binary.toString("utf8")))).toBe(false);
  });
});

describe("bounded caches", () => {
  it("forget the least recently used entries beyond their bound", () => {
    const map = new BoundedMap<number, string>(2);
    map.set(1, "a");
    map.set(2, "b");
    expect(map.get(1)).toBe("a");
    map.set(3, "c");
    expect(map.get(2)).toBeUndefined();
    expect(map.keys()).toEqual([1, 3]);
    expect(map.size).toBe(2);
  });

  it("keep an installation token until five minutes before GitHub says it expires", () => {
    let now = Date.parse("2026-11-25T12:00:00Z");
    const cache = new InstallationTokenCache({ now: () => now }, 2);
    const value = (token: string, expiresAt: string) =>
      `${token}|2026-11-25T12:00:00Z|${expiresAt}|all|contents!,metadata|`;
    cache.set("41", value("ghs_one", "2026-11-25T13:00:00Z"));
    cache.set("42|contents", value("ghs_two", "2026-11-25T12:30:00Z"));
    expect(cache.get("41")).toContain("ghs_one");
    now = Date.parse("2026-11-25T13:00:00Z") - TOKEN_REFRESH_MARGIN_MS - 1;
    expect(cache.get("41")).toContain("ghs_one");
    expect(cache.get("42|contents")).toBeUndefined();
    now += 1;
    expect(cache.get("41")).toBeUndefined();
    // Bounded: a third installation pushes out the least recently used.
    now = Date.parse("2026-11-25T12:00:00Z");
    cache.set("41", value("ghs_one", "2026-11-25T13:00:00Z"));
    cache.set("42", value("ghs_two", "2026-11-25T13:00:00Z"));
    cache.set("43", value("ghs_three", "2026-11-25T13:00:00Z"));
    expect(cache.size).toBe(2);
    expect(cache.get("41")).toBeUndefined();
    cache.forgetInstallation(42);
    expect(cache.get("42")).toBeUndefined();
    expect(cache.get("43")).toContain("ghs_three");
    // A value it cannot read is not served.
    cache.set("44", "garbled");
    expect(cache.get("44")).toBeUndefined();
  });
});

function stored(
  githubId: number,
  name: string,
  removedAt: number | null = null,
): GitHubRepositoryRecord {
  return {
    githubId,
    owner: "acme",
    name,
    installationId: 1,
    organizationId: "org",
    repositoryId: `repo-${githubId}`,
    removedAt,
    updatedAt: 0,
  };
}

describe("the repository diff of a sync", () => {
  it("tells added, renamed, restored and removed repositories apart by GitHub's id", () => {
    const diff = diffRepositories(
      [stored(1, "same"), stored(2, "old-name"), stored(3, "gone"), stored(4, "back", 10)],
      [
        { githubId: 1, owner: "acme", name: "same" },
        { githubId: 2, owner: "acme", name: "new-name" },
        { githubId: 4, owner: "acme", name: "back" },
        { githubId: 5, owner: "acme", name: "fresh" },
      ],
    );
    expect(diff.added.map((r) => r.name)).toEqual(["fresh"]);
    expect(diff.renamed.map((r) => [r.stored.name, r.listed.name])).toEqual([
      ["old-name", "new-name"],
    ]);
    expect(diff.restored.map((r) => r.listed.name)).toEqual(["back"]);
    expect(diff.removed.map((r) => r.name)).toEqual(["gone"]);
    // A removed one stays removed, and is not removed twice.
    expect(diffRepositories([stored(3, "gone", 10)], []).removed).toEqual([]);
  });
});

describe("proof of control", () => {
  const organization = { id: 10, login: "acme", type: "Organization" };
  const user = { id: 20, login: "carol", type: "User" };

  it("takes the account itself for a user account", () => {
    expect(decideUserProof({ id: 20, login: "carol" }, user)).toBeUndefined();
    // A login is not enough: the id decides (logins are renamed and taken again).
    expect(decideUserProof({ id: 21, login: "carol" }, user)).toContain("belongs to carol");
  });

  it("takes an active owner of the organization", () => {
    const membership = { role: "admin", state: "active", organization: { id: 10 } };
    expect(decideMembershipProof(membership, organization)).toBeUndefined();
    expect(decideMembershipProof({ ...membership, role: "member" }, organization)).toContain(
      "owner (admin)",
    );
    expect(decideMembershipProof({ ...membership, state: "pending" }, organization)).toContain(
      "not accepted",
    );
    expect(
      decideMembershipProof({ ...membership, organization: { id: 11 } }, organization),
    ).toContain("another organization");
    expect(decideMembershipProof({}, organization)).toBeDefined();
  });
});

describe("the handler registry", () => {
  it("runs an event's handlers, then its action's, in the order they registered", () => {
    const handlers = new WebhookHandlers();
    const calls: string[] = [];
    const record = (name: string) => () => {
      calls.push(name);
      return Promise.resolve();
    };
    handlers.forOrganization("pull_request", record("any"));
    handlers.forOrganization("pull_request.closed", record("closed"));
    handlers.forOrganization(["pull_request.closed", "pull_request.opened"], record("both"));
    handlers.forInstallation("installation", record("installation"));
    const names = (event: string, action: string | null) =>
      handlers.organizationHandlers(event, action).length;
    expect(names("pull_request", "closed")).toBe(3);
    expect(names("pull_request", "opened")).toBe(2);
    expect(names("pull_request", "edited")).toBe(1);
    expect(names("pull_request", null)).toBe(1);
    expect(names("push", null)).toBe(0);
    expect(handlers.installationHandlers("installation", "created")).toHaveLength(1);
    expect(handlers.organizationHandlers("installation", "created")).toHaveLength(0);
  });
});

describe("the App manifest", () => {
  const manifest = appManifest({ name: "mainline-ci", publicUrl: "https://ci.example.com/" });

  it("asks for Trunk's permissions and the events the queue reads, with the webhook URL", () => {
    expect(manifest.hook_attributes).toEqual({
      url: "https://ci.example.com/webhooks/github",
      active: true,
    });
    expect(manifest.callback_urls).toEqual(["https://ci.example.com/sign-in/github/callback"]);
    expect(manifest.request_oauth_on_install).toBe(false);
    const link = new URL(registrationUrl("https://github.com", manifest));
    expect(link.searchParams.getAll("callback_urls[]")).toEqual(manifest.callback_urls);
    expect(link.searchParams.get("request_oauth_on_install")).toBe("false");
    expect(manifest.default_permissions).toEqual({
      actions: "write",
      administration: "read",
      checks: "write",
      contents: "write",
      issues: "write",
      metadata: "read",
      pull_requests: "write",
      statuses: "write",
      workflows: "write",
    });
    expect(manifest.default_events.sort()).toEqual(
      [
        "branch_protection_rule",
        "check_run",
        "check_suite",
        "issue_comment",
        "pull_request",
        "pull_request_review",
        "push",
        "repository",
        "repository_ruleset",
        "status",
      ].sort(),
    );
    expect(manifest.public).toBe(false);
  });

  it("lists no event GitHub refuses in a manifest, and none its permissions do not cover", () => {
    for (const event of ALWAYS_DELIVERED_EVENTS)
      expect(manifest.default_events).not.toContain(event);
    // GitHub rejects a manifest whose events have no permission behind them.
    const needs: Record<string, keyof typeof APP_PERMISSIONS> = {
      pull_request: "pull_requests",
      issue_comment: "issues",
      pull_request_review: "pull_requests",
      check_run: "checks",
      check_suite: "checks",
      status: "statuses",
      push: "contents",
      repository: "metadata",
      branch_protection_rule: "administration",
      repository_ruleset: "administration",
    };
    expect(Object.keys(needs).sort()).toEqual(Object.keys(APP_EVENTS).sort());
    for (const event of manifest.default_events) {
      expect(manifest.default_permissions[needs[event] ?? "none"], event).toBeDefined();
    }
  });

  it("fills GitHub's registration form from a link, on github.com and GitHub Enterprise Server", () => {
    expect(webUrlOf("https://api.github.com")).toBe("https://github.com");
    expect(webUrlOf("https://github.example.com/api/v3")).toBe("https://github.example.com");
    const link = new URL(registrationUrl("https://github.com", manifest, "acme"));
    expect(link.origin + link.pathname).toBe(
      "https://github.com/organizations/acme/settings/apps/new",
    );
    expect(link.searchParams.get("webhook_url")).toBe("https://ci.example.com/webhooks/github");
    expect(link.searchParams.get("webhook_active")).toBe("true");
    expect(link.searchParams.get("pull_requests")).toBe("write");
    expect(link.searchParams.getAll("events[]")).toEqual(manifest.default_events);
    const ghes = new URL(registrationUrl("https://github.example.com", manifest));
    expect(ghes.pathname).toBe("/settings/apps/new");
  });
});

describe("retries of failed deliveries", () => {
  it("wait longer after each failure, up to a bound", () => {
    const options = { firstRetryMs: 5_000, maxRetryMs: 300_000 };
    expect([1, 2, 3, 4, 7, 20].map((attempts) => retryDelay(attempts, options))).toEqual([
      5_000, 10_000, 20_000, 40_000, 300_000, 300_000,
    ]);
  });
});

describe("redaction of GitHub's secrets", () => {
  it("removes tokens, JWTs and private keys from text", () => {
    const jwt =
      "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpYXQiOjE3MDAwMDAwMDAsImlzcyI6IjEyMyJ9.c2lnbmF0dXJl";
    const pem =
      "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAuEPzOUE\n-----END RSA PRIVATE KEY-----";
    const text = [
      "token ghs_16C7e42F292c6912E7710c838347Ae178B4a",
      "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
      "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
      "gho_abcdefghij0123456789",
      `bearer ${jwt}`,
      pem,
      "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    ].join(" | ");
    const redacted = redactSecrets(text);
    for (const secret of [
      "16C7e42F292c6912E7710c838347Ae178B4a",
      "abcdefghijklmnopqrstuvwxyz0123456789",
      "abcdefghijklmnop",
      "abcdefghij0123456789",
      "c2lnbmF0dXJl",
      "MIIEowIBAAKCAQEAuEPzOUE",
      "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    ]) {
      expect(redacted).not.toContain(secret);
    }
    expect(redacted).toContain("ghs_[redacted]");
    expect(redactSecrets("the ghost_town of ghsts")).toBe("the ghost_town of ghsts");
  });
});

describe("the delivery writer", () => {
  const delivery = (id: string, payload = "{}"): NewDelivery => ({
    source: "github",
    deliveryId: id,
    event: "push",
    action: null,
    installationId: null,
    payload,
    receivedAt: 0,
  });

  it("stores deliveries that arrive together in one transaction, each answered", async () => {
    const batches: string[][] = [];
    const known = new Set(["old"]);
    const writer = new DeliveryWriter({
      storeMany: (deliveries) => {
        batches.push(deliveries.map((d) => d.deliveryId));
        const stored = new Set(deliveries.map((d) => d.deliveryId).filter((id) => !known.has(id)));
        for (const id of stored) known.add(id);
        return Promise.resolve(stored);
      },
    });
    const answers = await Promise.all(
      ["a", "b", "old", "a"].map((id) => writer.store(delivery(id))),
    );
    // Sent once: a delivery twice in one insert would be refused by PostgreSQL.
    expect(batches).toEqual([["a", "b", "old"]]);
    // New, new, a redelivery, and the same delivery twice in one batch: new once.
    expect(answers).toEqual([true, true, false, false]);
    expect(await writer.store(delivery("c"))).toBe(true);
    expect(batches).toHaveLength(2);
  });

  it("keeps batches small when payloads are large, and fails every caller of a failed batch", async () => {
    const batches: number[] = [];
    const big = "x".repeat(5 * 1024 * 1024);
    const writer = new DeliveryWriter({
      storeMany: (deliveries) => {
        batches.push(deliveries.length);
        if (deliveries.some((d) => d.deliveryId === "poison")) {
          return Promise.reject(new Error("database away"));
        }
        return Promise.resolve(new Set(deliveries.map((d) => d.deliveryId)));
      },
    });
    await Promise.all(["1", "2", "3"].map((id) => writer.store(delivery(id, big))));
    expect(batches).toEqual([1, 1, 1]);
    const outcomes = await Promise.allSettled([
      writer.store(delivery("poison")),
      writer.store(delivery("victim")),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect(await writer.store(delivery("after"))).toBe(true);
  });
});

describe("the webhook inbox's worker", () => {
  const claimed = (key: number): ClaimedDelivery => ({
    key,
    source: "github",
    deliveryId: `d${key}`,
    event: "push",
    action: null,
    installationId: null,
    payload: "{}",
    receivedAt: 0,
    state: "processing",
    attempts: 1,
    leaseUntil: 1,
    leaseOwner: "w",
    nextAttemptAt: 0,
    error: null,
    processedAt: null,
  });
  const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

  it("claims as many as it has free slots in one call, and completes those handled together in one", async () => {
    let ready = Array.from({ length: 10 }, (_, i) => i + 1);
    const claims: number[][] = [];
    const completions: number[][] = [];
    const deliveries: Omit<DeliveryRecords, "storeMany" | "find"> = {
      claim: (_source, _now, _lease, _owner, limit) => {
        const taken = ready.slice(0, limit);
        ready = ready.slice(limit);
        claims.push(taken);
        return Promise.resolve(taken.map(claimed));
      },
      // Taken over by another worker meanwhile: 3 is not completed.
      complete: (done) => {
        completions.push(done.map((d) => d.key));
        return Promise.resolve(new Set(done.map((d) => d.key).filter((key) => key !== 3)));
      },
      renew: () => Promise.resolve(true),
      retryLater: () => Promise.resolve(true),
      fail: () => Promise.resolve(true),
      park: () => Promise.resolve(true),
      unpark: () => Promise.resolve(0),
      prune: () => Promise.resolve(0),
    };
    const warnings: unknown[] = [];
    const dispatched: number[] = [];
    const inbox = new WebhookInbox(
      {
        deliveries,
        dispatch: (delivery) => {
          dispatched.push(delivery.key);
          return Promise.resolve("done");
        },
        linkedNow: () => Promise.resolve(false),
        clock: { now: () => 0 },
        logger: { ...quiet, warn: (fields) => warnings.push(fields) },
        owner: "w",
        source: "github",
      },
      { concurrency: 4, pollIntervalMs: 10_000 },
    );
    inbox.start();
    await inbox.idle();
    await inbox.stop();
    expect(dispatched).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(claims).toEqual([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10], []]);
    expect(completions).toEqual([
      [1, 2, 3, 4],
      [5, 6, 7, 8],
      [9, 10],
    ]);
    expect(warnings).toEqual([expect.objectContaining({ delivery: "d3" })]);
  });
});
