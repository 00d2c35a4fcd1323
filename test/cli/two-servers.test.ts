import { randomBytes } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { runCli, startServer, stopAllProcesses, type RunningServer } from "../helpers/process.js";
import { post, whoami } from "./support.js";

/**
 * Two `mainline serve` processes on one PostgreSQL database, each caching tokens, repositories and
 * queues (ADR 0017): what one process (or `mainline token revoke`) changes, the other sees on its
 * very next request — no waiting, no retry. (SQLite is served by one process: a second is
 * refused, test/cli/serve.test.ts.)
 */

const servers: RunningServer[] = [];
let database: TestDatabase | undefined;
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop("SIGKILL")));
  await database?.cleanup();
  database = undefined;
});
afterAll(stopAllProcesses);

const REPO = { host: "local", owner: "acme", name: "app" };
const QUEUE = { repo: REPO, targetBranch: "main" };

async function queueState(url: string, token: string): Promise<unknown> {
  const answer = await post(url, "getQueue", QUEUE, token);
  expect(answer.status).toBe(200);
  return (answer.body as { state: string }).state;
}

describe("two servers on one PostgreSQL database", () => {
  it("a token revoked by the CLI, and a queue paused through one server, take effect on both at once", async () => {
    database = await createTestDatabase();
    const { env } = database;
    const bootstrap = randomBytes(32).toString("hex");
    const serverEnv = {
      ...env,
      MAINLINE_BOOTSTRAP_ORG: "acme",
      MAINLINE_BOOTSTRAP_TOKEN: bootstrap,
    };
    const a = await startServer(serverEnv);
    servers.push(a);
    const b = await startServer(serverEnv);
    servers.push(b);

    expect((await post(a.url, "local/createRepository", { repo: REPO }, bootstrap)).status).toBe(
      200,
    );
    expect((await post(a.url, "createQueue", QUEUE, bootstrap)).status).toBe(200);
    // Both servers have the queue cached now (read twice each).
    for (const server of [a, b, a, b])
      expect(await queueState(server.url, bootstrap)).toBe("running");

    expect(
      (await post(b.url, "updateQueue", { ...QUEUE, state: "paused" }, bootstrap)).status,
    ).toBe(200);
    expect(await queueState(a.url, bootstrap)).toBe("paused");
    expect(await queueState(b.url, bootstrap)).toBe("paused");

    const created = await runCli(["token", "create", "--org", "acme", "--name", "ci"], env);
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    for (const server of [a, b, a, b]) expect(await whoami(server.url, token)).toBe("acme");
    const listed = await runCli(["token", "list", "--org", "acme", "--json"], env);
    const id = (JSON.parse(listed.stdout) as { id: string; name: string | null }[]).find(
      (t) => t.name === "ci",
    )?.id;
    expect(id).toBeDefined();

    const revoked = await runCli(["token", "revoke", id ?? ""], env);
    expect(revoked.code).toBe(0);
    expect(await whoami(a.url, token)).toBe(401);
    expect(await whoami(b.url, token)).toBe(401);
    // The other token is untouched.
    expect(await whoami(a.url, bootstrap)).toBe("acme");
    expect(await whoami(b.url, bootstrap)).toBe("acme");
  });
});
