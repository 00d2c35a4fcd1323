/**
 * The service when its database goes away, with real `mainline serve` processes: PostgreSQL
 * connections terminated (`pg_terminate_backend`) while requests, uploads and a merge queue are
 * running, and PostgreSQL "restarting" (the server reaches it through a TCP proxy that is stopped
 * and started). The process survives, requests caught in the fault answer 503 with the error
 * envelope and `Retry-After`, everything acknowledged is kept, ingestion and the queue carry on,
 * and `/healthz` follows the database; a CI check that ends while the database is away still
 * merges its pull request. Only this file's server's sessions are touched: they are found by an
 * `application_name` of their own (other test runs share the PostgreSQL server). Also: a server
 * killed in the middle of a batch has its upload resumed by another once the (short) lease ends;
 * on SQLite, a write locked out beyond `busy_timeout` answers 503 and changes nothing.
 */
import { randomBytes } from "node:crypto";
import net from "node:net";
import path from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { post, type HttpAnswer } from "../cli/support.js";
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from "../helpers/database.js";
import {
  allConcluded,
  createRepositoryAndQueue,
  openPullRequest,
  stateOf,
  submit,
  type Call,
} from "../helpers/local-queue.js";
import { PROJECT_FILES, mainlineYml } from "../helpers/local-project.js";
import { startServer, stopAllProcesses, waitFor, type RunningServer } from "../helpers/process.js";
import { REPO, startTestServer } from "../helpers/server.js";
import { bundle, junit } from "../helpers/uploads.js";

/** Each part runs on the dialect it is about (the other run does not register it). */
const onPostgres = TEST_DIALECT === "postgres" ? describe : () => undefined;
const onSqlite = TEST_DIALECT === "sqlite" ? describe : () => undefined;

let database: TestDatabase;
let token: string;
let env: Record<string, string>;
beforeEach(async () => {
  database = await createTestDatabase();
  token = randomBytes(32).toString("hex");
  env = { ...database.env, MAINLINE_BOOTSTRAP_ORG: "acme", MAINLINE_BOOTSTRAP_TOKEN: token };
});
afterEach(async () => {
  await stopAllProcesses();
  await database.cleanup();
});
afterAll(stopAllProcesses);

/** The test database's URL with one more query parameter (or a different host and port). */
function databaseUrl(change: (url: URL) => void): string {
  const url = new URL(env.DATABASE_URL ?? "");
  change(url);
  return url.toString();
}

interface Answer extends HttpAnswer {
  retryAfter: string | null;
}

/** Any request to the server; a network failure (the process died) throws. */
async function request(server: RunningServer, path: string, init?: RequestInit): Promise<Answer> {
  const response = await fetch(`${server.url}${path}`, init);
  const text = await response.text();
  let body: unknown = text;
  if (response.headers.get("content-type")?.includes("application/json")) body = JSON.parse(text);
  return { status: response.status, body, retryAfter: response.headers.get("retry-after") };
}

const callOn =
  (server: RunningServer): Call =>
  (operation, body) =>
    post(server.url, operation, body, token);

/** What a request caught by the fault must look like: 503, the envelope, Retry-After. */
function expectAnsweredOrRetryable(answer: Answer, what: string): void {
  if (answer.status === 200) return;
  expect({ what, status: answer.status, body: answer.body }).toMatchObject({
    what,
    status: 503,
    body: { error: { code: "unavailable", message: expect.any(String) as string } },
  });
  expect(Number(answer.retryAfter), `${what}: Retry-After`).toBeGreaterThan(0);
}

/** createBundleUpload + PUT: the upload id when the PUT was acknowledged (200), else null. */
async function upload(server: RunningServer, name: string): Promise<string | null> {
  const created = await request(server, "/v1/metrics/createBundleUpload", {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-token": token },
    body: JSON.stringify({ repo: REPO, orgUrlSlug: "acme", clientVersion: "test", remoteUrls: [] }),
  });
  expectAnsweredOrRetryable(created, "createBundleUpload");
  if (created.status !== 200) return null;
  const { id, url } = created.body as { id: string; url: string };
  const body = await bundle({ files: [junit([{ name, status: "passed" }])] });
  const response = await fetch(url, {
    method: "PUT",
    headers: { "content-type": "application/octet-stream" },
    body,
  });
  const put: Answer = {
    status: response.status,
    body: JSON.parse(await response.text()) as unknown,
    retryAfter: response.headers.get("retry-after"),
  };
  expectAnsweredOrRetryable(put, "bundle PUT");
  return put.status === 200 ? id : null;
}

async function uploadState(server: RunningServer, id: string): Promise<string> {
  const answer = await post(
    server.url,
    "flaky-tests/get-upload",
    { repo: REPO, org_url_slug: "acme", upload_id: id },
    token,
  );
  if (answer.status !== 200) return `http ${String(answer.status)}`;
  return (answer.body as { upload: { state: string } }).upload.state;
}

async function healthz(server: RunningServer): Promise<Answer> {
  return request(server, "/healthz", { signal: AbortSignal.timeout(5_000) });
}

/** Requests of every kind until `until()`: each answers 200 or a retryable 503. */
async function load(server: RunningServer, until: () => boolean, acknowledged: string[]) {
  let n = 0;
  const worker = async (kind: number) => {
    while (!until()) {
      n += 1;
      if (kind === 0) {
        const id = await upload(server, `t${String(n)}`);
        if (id) acknowledged.push(id);
      } else if (kind === 1) {
        const answer = await request(server, "/v1/whoami", {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-token": token },
          body: "{}",
        });
        expectAnsweredOrRetryable(answer, "whoami");
      } else {
        const answer = await request(server, "/v1/getQueue", {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-token": token },
          body: JSON.stringify({
            repo: { host: "local", owner: "acme", name: "shop" },
            targetBranch: "main",
          }),
        });
        expectAnsweredOrRetryable(answer, "getQueue");
      }
    }
  };
  await Promise.all([0, 0, 1, 2].map(worker));
}

onPostgres("PostgreSQL connections lost under load", () => {
  it("pg_terminate_backend on every session of the server: it survives, answers 503 + Retry-After meanwhile, loses nothing acknowledged, and carries on", async () => {
    const application = `mainline_faults_${randomBytes(4).toString("hex")}`;
    const server = await startServer({
      ...env,
      DATABASE_URL: databaseUrl((url) => {
        url.searchParams.set("application_name", application);
      }),
    });
    const call = callOn(server);
    const project = await createRepositoryAndQueue(call, {
      concurrency: 2,
      testingTimeoutMinutes: 0,
    });
    const numbers: number[] = [];
    for (let k = 1; k <= 4; k++) {
      numbers.push(
        await openPullRequest(call, project, k, {
          [`numbers/p${String(k)}.txt`]: `${String(k)}\n`,
        }),
      );
    }
    for (const number of numbers.slice(0, 2)) await submit(call, number);
    const before = await upload(server, "before");
    expect(before).not.toBeNull();

    // Terminate every backend of the server, again and again, while the load runs.
    const admin = new pg.Client({ connectionString: inject("testDatabase").postgresUrl ?? "" });
    await admin.connect();
    let terminated = 0;
    let faulting = true;
    const killer = (async () => {
      for (let round = 0; round < 25; round++) {
        const { rows } = await admin.query<{ n: string }>(
          "select count(*) filter (where pg_terminate_backend(pid)) as n from pg_stat_activity where application_name = $1 and pid <> pg_backend_pid()",
          [application],
        );
        terminated += Number(rows[0]?.n ?? 0);
        await new Promise((resolve) => setTimeout(resolve, 120));
      }
      faulting = false;
    })();
    const acknowledged: string[] = before ? [before] : [];
    try {
      await Promise.all([killer, load(server, () => !faulting, acknowledged)]);
    } finally {
      await admin.end();
    }
    expect(terminated).toBeGreaterThan(0);
    expect(server.process.exitCode).toBeNull();
    expect(server.process.signalCode).toBeNull();

    // Back to normal: healthy, and the work goes on.
    await waitFor(async () => (await healthz(server)).status === 200, "healthz 200");
    for (const number of numbers.slice(2)) await submit(call, number);
    const after = await upload(server, "after");
    expect(after).not.toBeNull();
    if (after) acknowledged.push(after);
    await waitFor(
      async () => {
        for (const id of acknowledged) {
          if ((await uploadState(server, id)) !== "processed") return false;
        }
        return true;
      },
      "every acknowledged upload processed",
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    await waitFor(() => allConcluded(call, numbers), "the queue to finish", {
      timeoutMs: 90_000,
      intervalMs: 250,
    });
    for (const number of numbers) expect(await stateOf(call, number)).toBe("merged");
    expect(server.process.exitCode).toBeNull();
    expect(server.stderr).not.toMatch(/Unhandled|uncaught/i);
    await server.stop();
  }, 180_000);
});

/** A TCP proxy to PostgreSQL that can be stopped (connections cut, new ones refused) and started. */
class Proxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.targetHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("error", () => undefined);
        socket.on("close", () => {
          this.sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => {
        resolve();
      });
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /** PostgreSQL is "down": every connection is cut and new ones are refused. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
  }
}

onPostgres("PostgreSQL away and back", () => {
  it("/healthz says 503 while the database is away and 200 when it is back; requests meanwhile get 503 + Retry-After", async () => {
    const target = new URL(inject("testDatabase").postgresUrl ?? "");
    const proxy = new Proxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    try {
      const server = await startServer({
        ...env,
        DATABASE_URL: databaseUrl((url) => {
          url.hostname = "127.0.0.1";
          url.port = String(proxy.port);
        }),
      });
      expect((await healthz(server)).status).toBe(200);
      expect(await upload(server, "before")).not.toBeNull();
      // A pull request whose check is running when the database goes away, and ends meanwhile.
      const call = callOn(server);
      const project = await createRepositoryAndQueue(
        call,
        { concurrency: 1, testingTimeoutMinutes: 0 },
        { ...PROJECT_FILES, ".mainline.yml": mainlineYml("sleep 2 && sh test.sh") },
      );
      const pr = await openPullRequest(call, project, 1, { "numbers/p1.txt": "1\n" });
      await submit(call, pr);
      await waitFor(async () => (await stateOf(call, pr)) === "testing", "the check running");

      await proxy.stop();
      await waitFor(async () => (await healthz(server)).status === 503, "healthz 503");
      const down = await healthz(server);
      expect(down.body).toMatchObject({ error: { code: "unavailable" } });
      expect(Number(down.retryAfter)).toBeGreaterThan(0);
      const refused = await request(server, "/v1/whoami", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-token": token },
        body: "{}",
      });
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({ error: { code: "unavailable" } });
      expect(Number(refused.retryAfter)).toBeGreaterThan(0);
      expect(await upload(server, "while down")).toBeNull();
      // A few seconds away (the check ends meanwhile), with the worker, the queue engine and the
      // CI runner polling.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(server.process.exitCode).toBeNull();

      await proxy.start();
      await waitFor(async () => (await healthz(server)).status === 200, "healthz 200 again");
      expect((await post(server.url, "whoami", {}, token)).status).toBe(200);
      const after = await upload(server, "after");
      expect(after).not.toBeNull();
      await waitFor(
        async () => (await uploadState(server, after ?? "")) === "processed",
        "the upload after the outage processed",
      );
      // The check's result reaches the queue: the run is not failed for the outage, it is
      // handed over or run again by its own runner (at its next scan, every 10 s).
      await waitFor(async () => (await stateOf(call, pr)) === "merged", "the pull request merged", {
        timeoutMs: 30_000,
        intervalMs: 200,
      });
      expect(server.process.exitCode).toBeNull();
      await server.stop();
    } finally {
      await proxy.stop();
    }
  }, 120_000);
});

onPostgres("a server that dies while processing uploads", () => {
  it("another server resumes them once the lease (MAINLINE_INGEST_LEASE_SECONDS) runs out, counting them once", async () => {
    const leased = { ...env, MAINLINE_INGEST_LEASE_SECONDS: "2" };
    const first = await startServer(leased);
    // The repository exists from the first upload on; its batches take its advisory lock.
    const warmUp = await upload(first, "warm-up");
    await waitFor(
      async () => (await uploadState(first, warmUp ?? "")) === "processed",
      "the first upload processed",
    );
    const { rows } = await sql<{ id: string }>`select id from repositories`.execute(
      database.handle.db,
    );
    const lockKey = `test-health:${rows[0]?.id ?? ""}`;
    const admin = new pg.Client({ connectionString: inject("testDatabase").postgresUrl ?? "" });
    await admin.connect();
    try {
      // Held here, the lock stops the first server's batch before its final transaction.
      await admin.query("select pg_advisory_lock(hashtext($1))", [lockKey]);
      const id = await upload(first, "interrupted");
      expect(id).not.toBeNull();
      await waitFor(
        async () => (await uploadState(first, id ?? "")) === "processing",
        "the upload claimed by the first server",
      );
      expect(await first.stop("SIGKILL")).toMatchObject({ signal: "SIGKILL" });
      await admin.query("select pg_advisory_unlock(hashtext($1))", [lockKey]);

      const second = await startServer(leased);
      await waitFor(
        async () => (await uploadState(second, id ?? "")) === "processed",
        "the second server to resume the upload",
        { timeoutMs: 20_000, intervalMs: 200 },
      );
      const counted = await sql<{ n: number }>`
          select count(*) as n from test_runs r join uploads u on u.key = r.upload_key
          where u.id = ${id}`.execute(database.handle.db);
      expect(Number(counted.rows[0]?.n)).toBe(1);
      await second.stop();
    } finally {
      await admin.end();
    }
  }, 90_000);
});

onSqlite("SQLite locked beyond busy_timeout", () => {
  it("a write that cannot get the lock answers 503 + Retry-After, changes nothing, and works once the lock is free", async () => {
    const server = await startTestServer({ startWorker: false });
    const body = { repo: REPO, orgUrlSlug: "acme", clientVersion: "test", remoteUrls: [] };
    const other = new BetterSqlite3(path.join(server.database.dataDir, "mainline.db"));
    try {
      other.exec("begin immediate");
      const refused = await server.call("metrics/createBundleUpload", body);
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({ error: { code: "unavailable" } });
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      other.exec("rollback");
      const { rows } = await sql<{ n: number }>`select count(*) as n from uploads`.execute(
        server.services.database.db,
      );
      expect(Number(rows[0]?.n)).toBe(0);
      expect((await server.call("metrics/createBundleUpload", body)).status).toBe(200);
    } finally {
      other.close();
      await server.close();
    }
  }, 60_000);
});
