import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import {
  runCli,
  startServer,
  stopAllProcesses,
  withBootstrapToken,
  type RunningServer,
} from "../helpers/process.js";
import { post, whoami } from "./support.js";

/**
 * Two `mainline serve` processes on one PostgreSQL database, each caching tokens, repositories and
 * queues (ADR 0017): what one process (or `mainline token revoke`) changes, the other sees on its
 * very next request — no waiting, no retry, however often. (SQLite is served by one process: a
 * second is refused, test/cli/serve.test.ts.)
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

/**
 * A new database, two servers on it with the organization `acme` and its token `bootstrap`, and
 * a queue created through the first; `env` opens the database (for the CLI).
 */
async function twoServersWithAQueue(): Promise<{
  a: RunningServer;
  b: RunningServer;
  bootstrap: string;
  env: Record<string, string>;
}> {
  database = await createTestDatabase();
  const { env, token: bootstrap } = withBootstrapToken(database.env);
  const a = await startServer(env);
  servers.push(a);
  const b = await startServer(env);
  servers.push(b);
  expect((await post(a.url, "local/createRepository", { repo: REPO }, bootstrap)).status).toBe(200);
  expect((await post(a.url, "createQueue", QUEUE, bootstrap)).status).toBe(200);
  return { a, b, bootstrap, env: database.env };
}

async function queueState(url: string, token: string): Promise<unknown> {
  const answer = await post(url, "getQueue", QUEUE, token);
  expect(answer.status).toBe(200);
  return (answer.body as { state: string }).state;
}

describe("two servers on one PostgreSQL database", () => {
  it("a token revoked by the CLI, and a queue paused through one server, take effect on both at once", async () => {
    const { a, b, bootstrap, env } = await twoServersWithAQueue();
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

  it("a queue paused and resumed through one server, again and again, reads so through the other at once", async () => {
    const { a, b, bootstrap: token } = await twoServersWithAQueue();

    const stale: string[] = [];
    for (let i = 0; i < 60; i++) {
      const state = i % 2 === 0 ? "paused" : "running";
      const [writer, reader] = i % 4 < 2 ? [a, b] : [b, a];
      expect((await post(writer.url, "updateQueue", { ...QUEUE, state }, token)).status).toBe(200);
      const read = await queueState(reader.url, token);
      if (read !== state) stale.push(`${String(i)}: ${state}, read ${String(read)}`);
    }
    expect(stale, "reads through the other server right after updateQueue").toEqual([]);
  });
});
