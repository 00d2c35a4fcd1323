/**
 * The webhook inbox with real `mainline serve` processes against the fake GitHub: a server
 * killed with SIGKILL right after it acknowledged a delivery loses nothing (the next server
 * handles it, once the dead one's lease has run out); two servers on one PostgreSQL database,
 * receiving deliveries alternately, handle every delivery exactly once between them. And the
 * whole log of these runs holds no secret: no webhook secret, private key, JWT or token.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { post } from "../cli/support.js";
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from "../helpers/database.js";
import { startGitHubWorld, type GitHubWorld } from "../helpers/github.js";
import {
  runCliInProcess,
  startServer,
  stopAllProcesses,
  waitFor,
  type RunningServer,
} from "../helpers/process.js";

let database: TestDatabase;
let world: GitHubWorld;
let token: string;
let env: Record<string, string>;

beforeEach(async () => {
  database = await createTestDatabase();
  world = await startGitHubWorld({ webhookMode: "round-robin" });
  token = randomBytes(32).toString("hex");
  env = {
    ...database.env,
    ...world.env,
    MAINLINE_BOOTSTRAP_ORG: "acme",
    MAINLINE_BOOTSTRAP_TOKEN: token,
    // A killed server's deliveries are taken over 5 s after its last renewal, not 30.
    MAINLINE_QUEUE_LEASE_SECONDS: "5",
  };
  world.gh.createOrganization("acme-gh");
  world.gh.createUser("alice");
  world.gh.addOrgMember("acme-gh", "alice", "admin");
  await world.gh.createRepository({ owner: "acme-gh", name: "widgets" });
  await world.gh.createRepository({ owner: "acme-gh", name: "gadgets" });
});

afterEach(async () => {
  await stopAllProcesses();
  await world.gh.close();
  await database.cleanup();
});
afterAll(stopAllProcesses);

async function serve(): Promise<RunningServer> {
  const server = await startServer(env, { logLevel: "info", timeoutMs: 30_000 });
  return server;
}

/**
 * The whole log of a run (every line each server wrote) holds none of its secrets: the webhook
 * secret, the App's private key, a JWT, an installation or user token, a signature, an API token.
 */
function expectNoSecrets(servers: RunningServer[]): void {
  const text = servers.map((server) => server.stdout + server.stderr).join("\n");
  // The log was captured (which GitHub line comes first depends on who syncs first).
  expect(text).toContain("Server listening at");
  const minted = [...world.gh.world.tokens.keys(), ...world.gh.world.userTokens.keys()];
  // The servers did talk to GitHub as installations.
  expect(world.gh.world.tokens.size).toBeGreaterThan(0);
  for (const secret of [world.app.webhookSecret, token, ...minted]) {
    expect(text).not.toContain(secret);
  }
  const keyLines = world.app.privateKey.split("\n").filter((line) => line.length > 40);
  expect(keyLines.length).toBeGreaterThan(5);
  for (const line of keyLines) expect(text).not.toContain(line);
  expect(text).not.toMatch(/PRIVATE KEY/);
  expect(text).not.toMatch(/\beyJ[A-Za-z0-9_-]{10,}\.eyJ/);
  expect(text).not.toMatch(/\bgh[opsu]_[A-Za-z0-9]{10,}/);
  expect(text).not.toMatch(/sha256=[0-9a-f]{64}/);
}

/** Installs the App on acme-gh (only widgets) and links it to acme, as the operator. */
async function installAndLink(): Promise<number> {
  const { id } = world.gh.installApp(world.app.id, {
    account: "acme-gh",
    repositories: ["widgets"],
  });
  const linked = await runCliInProcess(
    ["github", "link", "--installation", String(id), "--org", "acme"],
    env,
  );
  expect(linked.stderr).toContain("Linked installation");
  return id;
}

async function deliveryRows() {
  return database.handle.db
    .selectFrom("webhookDeliveries")
    .select(["deliveryId", "event", "state", "attempts", "leaseOwner"])
    .orderBy("key")
    .execute();
}

describe("a server killed right after acknowledging a delivery", () => {
  it("loses nothing: the next server handles it once the lease has run out", async () => {
    const first = await serve();
    world.gh.setWebhookUrls(world.app.id, []);
    const installation = await installAndLink();
    // GitHub is slow to answer the installation: the first server is still at it when killed.
    world.gh.addFault(world.gh.fault.delay("apps/get-installation", 3_000));
    world.gh.addInstallationRepositories(installation, ["gadgets"]);
    const delivery = world.gh.deliveries("installation_repositories").at(-1);
    if (!delivery) throw new Error("no delivery");
    const started = performance.now();
    const answer = await fetch(`${first.url}/webhooks/github`, {
      method: "POST",
      headers: delivery.headers,
      body: delivery.body,
    });
    const answeredMs = performance.now() - started;
    expect(answer.status).toBe(202);
    await first.stop("SIGKILL");
    console.log(`webhook answered in ${answeredMs.toFixed(1)} ms while its handling took seconds`);

    const [row] = (await deliveryRows()).filter((r) => r.deliveryId === delivery.guid);
    expect(row?.state).toMatch(/^(pending|processing)$/);
    const gadgets = { host: "github.com", owner: "acme-gh", name: "gadgets" };
    const repositories = () =>
      database.handle.db
        .selectFrom("repositories")
        .select(["owner", "name"])
        .where("lookupKey", "=", "github.com/acme-gh/gadgets")
        .execute();
    expect(await repositories()).toEqual([]);

    const second = await serve();
    try {
      await waitFor(
        async () =>
          (await deliveryRows()).find((r) => r.deliveryId === delivery.guid)?.state === "processed",
        "the acknowledged delivery to be handled by the next server",
        { timeoutMs: 45_000, intervalMs: 250 },
      );
      expect(await repositories()).toEqual([{ owner: gadgets.owner, name: gadgets.name }]);
    } finally {
      await second.stop();
    }
    expectNoSecrets([first, second]);
  }, 90_000);
});

const onPostgres = TEST_DIALECT === "postgres" ? describe : () => undefined;

onPostgres("two servers on one PostgreSQL database", () => {
  it("handle every delivery exactly once between them, receiving them alternately", async () => {
    const [a, b] = await Promise.all([serve(), serve()]);
    try {
      world.gh.setWebhookUrls(world.app.id, [
        `${a.url}/webhooks/github`,
        `${b.url}/webhooks/github`,
      ]);
      await installAndLink();
      const repo = { host: "github.com", owner: "acme-gh", name: "widgets" };
      expect((await post(a.url, "createQueue", { repo, targetBranch: "main" }, token)).status).toBe(
        200,
      );
      const pushes = 24;
      for (let i = 0; i < pushes; i++) {
        await world.gh.commit("acme-gh/widgets", {
          branch: "main",
          files: { [`file-${i}.txt`]: `${i}\n` },
          by: "alice",
        });
      }
      await world.gh.settleWebhooks();
      const sent = world.gh.deliveries();
      // Alternately: each server was sent about half.
      const to = (server: RunningServer) =>
        sent.filter((d) => d.attempts.some((t) => t.url.startsWith(server.url))).length;
      expect(to(a)).toBeGreaterThan(pushes / 2 - 2);
      expect(to(b)).toBeGreaterThan(pushes / 2 - 2);
      expect(sent.every((d) => d.attempts.length === 1 && d.attempts[0]?.status === 202)).toBe(
        true,
      );

      await waitFor(
        async () => (await deliveryRows()).every((r) => r.state === "processed"),
        "every delivery to be handled",
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      const rows = await deliveryRows();
      expect(rows.map((r) => r.deliveryId).sort()).toEqual(sent.map((d) => d.guid).sort());
      expect(rows.every((r) => r.attempts === 1)).toBe(true);
      const owners = new Set(rows.map((r) => r.leaseOwner?.split(":")[1]));
      console.log(
        `${rows.length} deliveries handled by ${owners.size} processes: ` +
          [...owners]
            .map(
              (pid) => `${pid}: ${rows.filter((r) => r.leaseOwner?.split(":")[1] === pid).length}`,
            )
            .join(", "),
      );
      // Each push to main became exactly one change for the queue.
      const commands = await sql<{
        n: number;
      }>`select count(*)::int as n from mq_commands where payload like '%"branch_moved"%'`.execute(
        database.handle.db,
      );
      expect(commands.rows[0]?.n).toBe(pushes);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    expectNoSecrets([a, b]);
  }, 90_000);
});
