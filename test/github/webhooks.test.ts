/**
 * `POST /webhooks/github` through a real server, with deliveries made and signed by the fake
 * GitHub: refusals (signature, size, malformed) store nothing; a redelivery is stored and handled
 * once; installation and repository events keep the organization's repositories in step;
 * pushes and pull-request events reach the queues of the installation's own organization only;
 * deliveries of an installation that is not linked wait for its link.
 */
import { createHmac } from "node:crypto";
import path from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_DIALECT } from "../helpers/database.js";
import { waitFor } from "../helpers/process.js";
import { ok, type TestServer } from "../helpers/server.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";
import { errorResponse } from "../helpers/fake-github/faults.js";

let world: GitHubWorld;
let server: TestServer;
let installationId: number;
let globex: { token: string; organizationId: string };

const WIDGETS = { host: "github.com", owner: "acme-gh", name: "widgets" };

interface ErrorBody {
  error: { code: string; message: string };
}

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh } = world;
  gh.createOrganization("acme-gh");
  gh.createOrganization("other-gh");
  gh.createUser("alice");
  gh.addOrgMember("acme-gh", "alice", "admin");
  gh.addOrgMember("other-gh", "alice", "admin");
  for (const name of ["widgets", "gadgets", "extra", "doomed"]) {
    await gh.createRepository({ owner: "acme-gh", name });
  }
  await gh.createRepository({ owner: "other-gh", name: "tools" });
  // Failed attempts are tried again quickly here (in production: 5 s, doubling, eight times).
  server = await startGitHubServer(world, {
    githubInbox: { firstRetryMs: 50, maxRetryMs: 200, maxAttempts: 3 },
  });
  const issued = await server.services.organizations.createOrganizationWithToken("globex");
  globex = { token: issued.token, organizationId: issued.organization.id };
  installationId = gh.installApp(world.app.id, {
    account: "acme-gh",
    repositories: ["widgets", "gadgets", "doomed"],
  }).id;
  await settle(world, server);
  await server.services.github?.installations.linkAsOperator(installationId, "acme");
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gh.close();
});

async function deliveries(): Promise<{ deliveryId: string; state: string; attempts: number }[]> {
  return server.database.handle.db
    .selectFrom("webhookDeliveries")
    .select(["deliveryId", "state", "attempts"])
    .orderBy("key")
    .execute();
}

function post(body: Buffer | string, headers: Record<string, string>) {
  return server.request("/webhooks/github", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
}

function signed(body: Buffer | string, secret = world.app.webhookSecret): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** The queue commands stored for a queue (what host changes became). */
async function commandsOf(queueId: string): Promise<{ type: string; prNumber?: number }[]> {
  const rows = await server.database.handle.db
    .selectFrom("mqCommands")
    .select("payload")
    .where("queueId", "=", queueId)
    .orderBy("id")
    .execute();
  return rows.map((row) => JSON.parse(row.payload) as { type: string; prNumber?: number });
}

async function queueId(organizationId: string, repo: typeof WIDGETS, branch = "main") {
  const queue = await new MergeQueueStore(
    server.database.handle.db,
    server.database.handle.dialect,
  ).find(organizationId, repo, branch);
  if (!queue) throw new Error("no queue");
  return queue.id;
}

describe("what the receiver refuses", () => {
  it("refuses unsigned, missigned and malformed deliveries with the envelope, storing nothing", async () => {
    const before = await deliveries();
    const body = JSON.stringify({ action: "opened", installation: { id: installationId } });
    const headers = { "x-github-event": "pull_request", "x-github-delivery": "d-1" };
    const cases: [string, Buffer | string, Record<string, string>, number][] = [
      ["no signature", body, headers, 401],
      ["another secret", body, { ...headers, "x-hub-signature-256": signed(body, "other") }, 401],
      ["another body", body, { ...headers, "x-hub-signature-256": signed(`${body} `) }, 401],
      ["sha1 only", body, { ...headers, "x-hub-signature": "sha1=00" }, 401],
      ["no event", body, { "x-github-delivery": "d-2", "x-hub-signature-256": signed(body) }, 400],
      [
        "no delivery id",
        body,
        { "x-github-event": "push", "x-hub-signature-256": signed(body) },
        400,
      ],
      ["not JSON", "{nope", { ...headers, "x-hub-signature-256": signed("{nope") }, 400],
      ["not an object", "[1]", { ...headers, "x-hub-signature-256": signed("[1]") }, 400],
    ];
    for (const [why, sent, sentHeaders, status] of cases) {
      const answer = await post(sent, sentHeaders);
      expect(answer.status, `${why}: ${answer.text}`).toBe(status);
      expect((answer.body as ErrorBody).error.code).toBe(
        status === 401 ? "unauthorized" : "invalid_request",
      );
      expect(answer.text).not.toContain(world.app.webhookSecret);
    }
    const wrongType = await server.request("/webhooks/github", {
      method: "POST",
      headers: { "content-type": "text/plain", ...headers, "x-hub-signature-256": signed(body) },
      body,
    });
    expect(wrongType.status).toBe(415);
    expect(await deliveries()).toEqual(before);
  });

  it("refuses a body over GitHub's 25 MB cap with 413", async () => {
    const before = await deliveries();
    const huge = Buffer.alloc(25 * 1024 * 1024 + 1, 0x20);
    const answer = await post(huge, {
      "x-github-event": "push",
      "x-github-delivery": "huge-1",
      "x-hub-signature-256": signed(huge),
    });
    expect(answer.status).toBe(413);
    expect((answer.body as ErrorBody).error).toMatchObject({ code: "payload_too_large" });
    expect((answer.body as ErrorBody).error.message).toContain("25 MiB");
    expect(await deliveries()).toEqual(before);
  });

  it("answers GitHub's test vector only with its own secret", async () => {
    // docs.github.com's example: this secret and payload give this signature.
    const vector = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    const answer = await post("Hello, World!", {
      "x-github-event": "ping",
      "x-github-delivery": "vector-1",
      "x-hub-signature-256": vector,
    });
    expect(answer.status).toBe(401);
  });
});

describe("storing and handling deliveries", () => {
  it("stores a redelivery once and handles it once", async () => {
    const { gh } = world;
    gh.addInstallationRepositories(installationId, ["extra"]);
    await settle(world, server);
    const delivery = gh.deliveries("installation_repositories").at(-1);
    if (!delivery) throw new Error("no delivery");
    expect(delivery.attempts.map((a) => a.status)).toEqual([202]);
    await gh.webhooks.redeliver(delivery.guid);
    await settle(world, server);
    expect(delivery.attempts.map((a) => a.status)).toEqual([202, 202]);
    const again = await post(delivery.body, delivery.headers);
    expect(again.status).toBe(202);
    expect(again.body).toEqual({ accepted: true, duplicate: true });
    const stored = (await deliveries()).filter((d) => d.deliveryId === delivery.guid);
    expect(stored).toEqual([{ deliveryId: delivery.guid, state: "processed", attempts: 1 }]);
    // And it did its work: the added repository is the organization's.
    expect(
      await server.services.stores.repositories.find(server.organizationId, {
        ...WIDGETS,
        name: "extra",
      }),
    ).toBeDefined();
  });

  it("keeps the organization's repositories in step: removed, renamed, deleted", async () => {
    const { gh } = world;
    expect((await server.call("createQueue", { repo: WIDGETS, targetBranch: "main" })).status).toBe(
      200,
    );
    const gadgets = { ...WIDGETS, name: "gadgets" };
    gh.removeInstallationRepositories(installationId, ["gadgets"]);
    await settle(world, server);
    const removed = await server.call<ErrorBody>("createQueue", {
      repo: gadgets,
      targetBranch: "main",
    });
    expect(removed.status).toBe(409);
    expect(removed.body.error.code).toBe("host_not_connected");
    expect(removed.body.error.message).toMatch(
      /removed from the GitHub App installation .* data are kept/,
    );
    // Its row (and anything it holds) stays.
    expect(
      await server.services.stores.repositories.find(server.organizationId, gadgets),
    ).toBeDefined();

    // Renamed on GitHub: the same repository row, with its queue, under the new name.
    const before = await server.services.stores.repositories.find(server.organizationId, WIDGETS);
    const repo = gh.world.repo("acme-gh/widgets");
    gh.world.repos.delete("acme-gh/widgets");
    repo.name = "sprockets";
    gh.world.repos.set("acme-gh/sprockets", repo);
    gh.webhooks.emitForRepo("repository", repo, gh.actor("alice"), {
      action: "renamed",
      changes: { repository: { name: { from: "widgets" } } },
    });
    await settle(world, server);
    const sprockets = { ...WIDGETS, name: "sprockets" };
    const after = await server.services.stores.repositories.find(server.organizationId, sprockets);
    expect(after?.id).toBe(before?.id);
    expect(
      await server.services.stores.repositories.find(server.organizationId, WIDGETS),
    ).toBeUndefined();
    expect((await server.call("getQueue", { repo: sprockets, targetBranch: "main" })).status).toBe(
      200,
    );

    // Deleted on GitHub: no longer usable, its data kept.
    const doomed = gh.world.repo("acme-gh/doomed");
    gh.webhooks.emitForRepo("repository", doomed, gh.actor("alice"), { action: "deleted" });
    gh.world.repos.delete("acme-gh/doomed");
    await settle(world, server);
    await expect(
      server.services.github?.repositories.resolve({
        organizationId: server.organizationId,
        ...WIDGETS,
        name: "doomed",
      }),
    ).rejects.toThrow(/removed from the GitHub App installation/);
  });

  it("turns pushes and pull-request events into changes for the installation's organization's queues only", async () => {
    const { gh } = world;
    const sprockets = { ...WIDGETS, name: "sprockets" };
    const ours = await queueId(server.organizationId, sprockets);
    // Another organization's queue on a repository of the same name (made before GitHub was
    // configured): no delivery of this installation may reach it.
    const stranger = await server.services.stores.repositories.ensure(
      globex.organizationId,
      sprockets,
      Date.now(),
    );
    const queues = new MergeQueueStore(server.database.handle.db, server.database.handle.dialect);
    await queues.insert({
      id: "globex-queue",
      repositoryId: stranger.id,
      targetBranch: "main",
      configuration: initialConfiguration({}),
      createdAt: Date.now(),
    });

    // A pull request opened and pushed to (pull_request.opened, .synchronize, and a push of its
    // branch), and a push to the queue's branch.
    await gh.commit("acme-gh/sprockets", {
      branch: "feature",
      files: { "b.txt": "2\n" },
      by: "alice",
    });
    const number = await gh.openPullRequest("acme-gh/sprockets", { head: "feature", by: "alice" });
    await gh.pushToPullRequest("acme-gh/sprockets", number, { "b.txt": "3\n" });
    await gh.commit("acme-gh/sprockets", {
      branch: "main",
      files: { "a.txt": "1\n" },
      by: "alice",
    });
    await settle(world, server);
    const commands = await commandsOf(ours);
    expect(commands.filter((c) => c.type === "pr_changed")).toEqual([
      { type: "pr_changed", prNumber: number },
      { type: "pr_changed", prNumber: number },
    ]);
    expect(commands.filter((c) => c.type === "branch_moved")).toHaveLength(1);
    expect(await commandsOf("globex-queue")).toEqual([]);
  });

  it("keeps the deliveries of an installation that is not linked until it is", async () => {
    const { gh } = world;
    const other = gh.installApp(world.app.id, { account: "other-gh" }).id;
    await settle(world, server);
    await gh.commit("other-gh/tools", { branch: "fix", files: { "f.txt": "1\n" }, by: "alice" });
    await gh.openPullRequest("other-gh/tools", { head: "fix", by: "alice" });
    await settle(world, server);
    const guid = gh.deliveries("pull_request").at(-1)?.guid ?? "";
    const parked = (await deliveries()).find((d) => d.deliveryId === guid);
    expect(parked?.state).toBe("parked");

    await ok(
      server.call(
        "github/linkInstallation",
        { installationId: other, githubToken: gh.createUserToken("alice") },
        { token: globex.token },
      ),
    );
    await settle(world, server);
    const handled = (await deliveries()).find((d) => d.deliveryId === guid);
    expect(handled).toMatchObject({ state: "processed", attempts: 2 });
  });

  it("moves a repository transferred to an account of another organization's installation", async () => {
    const { gh } = world;
    const extra = { ...WIDGETS, name: "extra" };
    const before = await server.services.stores.repositories.find(server.organizationId, extra);
    expect(before).toBeDefined();
    // A pull request on it while it is acme's, whose delivery comes late (after the transfer).
    gh.setWebhookUrls(world.app.id, []);
    await gh.commit("acme-gh/extra", { branch: "late", files: { "l.txt": "1\n" }, by: "alice" });
    await gh.openPullRequest("acme-gh/extra", { head: "late", by: "alice" });
    const late = gh.deliveries("pull_request").at(-1);
    gh.setWebhookUrls(world.app.id, [`${server.url}/webhooks/github`]);
    // acme-gh/extra goes to other-gh, whose installation (on all its repositories) is globex's.
    const repo = gh.world.repo("acme-gh/extra");
    gh.world.repos.delete("acme-gh/extra");
    repo.owner = gh.world.account("other-gh");
    gh.world.repos.set("other-gh/extra", repo);
    gh.webhooks.emitForRepo("repository", repo, gh.actor("alice"), {
      action: "transferred",
      changes: { owner: { from: { user: { login: "acme-gh" } } } },
    });
    await settle(world, server);
    const moved = { ...extra, owner: "other-gh" };
    expect(
      await server.services.stores.repositories.find(globex.organizationId, moved),
    ).toBeDefined();
    expect(
      await server.services.github?.repositories.resolve({
        organizationId: globex.organizationId,
        ...moved,
      }),
    ).toMatchObject({ owner: "other-gh", name: "extra" });
    // The late delivery, from acme's installation, reaches none of globex's queues.
    expect(
      (
        await server.call(
          "createQueue",
          { repo: moved, targetBranch: "main" },
          { token: globex.token },
        )
      ).status,
    ).toBe(200);
    if (!late) throw new Error("no pull_request delivery");
    expect((await post(late.body, late.headers)).status).toBe(202);
    await settle(world, server);
    expect((await deliveries()).find((d) => d.deliveryId === late.guid)?.state).toBe("processed");
    expect(await commandsOf(await queueId(globex.organizationId, moved))).toEqual([]);
    // acme keeps its row and what it holds, and cannot reach the repository any more.
    expect(await server.services.stores.repositories.find(server.organizationId, extra)).toEqual(
      before,
    );
    await expect(
      server.services.github?.repositories.resolve({
        organizationId: server.organizationId,
        ...extra,
      }),
    ).rejects.toThrow(/not a repository of a GitHub App installation linked to this organization/);
  });
});

describe("a delivery whose handling fails", () => {
  it("is tried again with growing waits, then kept with its error; a redelivery tries once more", async () => {
    const { gh } = world;
    const refused = gh.addFault({
      operation: "apps/get-installation",
      name: "refused",
      times: 1000,
      effect: { kind: "respond", response: errorResponse(403, "Resource not accessible") },
    });
    gh.suspendInstallation(installationId, "alice");
    await settle(world, server);
    const delivery = gh.deliveries("installation").at(-1);
    if (!delivery) throw new Error("no delivery");
    const row = async () =>
      server.database.handle.db
        .selectFrom("webhookDeliveries")
        .select(["state", "attempts", "error"])
        .where("deliveryId", "=", delivery.guid)
        .executeTakeFirstOrThrow();
    await waitFor(async () => (await row()).state === "failed", "the delivery to be given up");
    const failed = await row();
    expect(failed.attempts).toBe(3);
    expect(failed.error).toContain("Resource not accessible");
    expect(gh.faults.fired(refused)).toBe(3);

    gh.faults.remove(refused);
    await gh.webhooks.redeliver(delivery.guid);
    await settle(world, server);
    expect(await row()).toMatchObject({ state: "processed", attempts: 4 });
    await expect(
      server.services.github?.repositories.resolve({
        organizationId: server.organizationId,
        ...WIDGETS,
        name: "sprockets",
      }),
    ).rejects.toThrow(/is suspended on GitHub/);
    gh.unsuspendInstallation(installationId, "alice");
    await settle(world, server);
    const access = await server.services.github?.repositories.resolve({
      organizationId: server.organizationId,
      ...WIDGETS,
      name: "sprockets",
    });
    expect(access?.installationId).toBe(installationId);
  });
});

const onSqlite = TEST_DIALECT === "sqlite" ? describe : () => undefined;

onSqlite("when the database is away", () => {
  it("answers 503 with Retry-After, and takes the delivery when GitHub sends it again", async () => {
    const body = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1 });
    const headers = {
      "x-github-event": "ping",
      "x-github-delivery": "locked-out-1",
      "x-hub-signature-256": signed(body),
    };
    // Another connection holds SQLite's write lock past the server's busy timeout.
    const blocker = new BetterSqlite3(path.join(server.database.dataDir, "mainline.db"));
    try {
      blocker.exec("begin immediate");
      const answer = await post(body, headers);
      expect(answer.status).toBe(503);
      expect(answer.headers.get("retry-after")).toBe("2");
      expect((answer.body as ErrorBody).error.code).toBe("unavailable");
      blocker.exec("rollback");
    } finally {
      blocker.close();
    }
    expect((await deliveries()).some((d) => d.deliveryId === "locked-out-1")).toBe(false);
    expect((await post(body, headers)).status).toBe(202);
    await settle(world, server);
    expect((await deliveries()).find((d) => d.deliveryId === "locked-out-1")?.state).toBe(
      "processed",
    );
  }, 20_000);
});

describe("the stored deliveries", () => {
  it("hold no signature, secret or token", async () => {
    const db = server.database.handle.db;
    const { rows } = await sql<Record<string, unknown>>`select * from webhook_deliveries`.execute(
      db,
    );
    const text = JSON.stringify(rows);
    expect(text).not.toContain(world.app.webhookSecret);
    expect(text).not.toMatch(/sha256=[0-9a-f]{64}/);
    expect(text).not.toMatch(/ghs_/);
  });
});
