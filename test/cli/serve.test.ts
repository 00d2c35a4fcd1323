import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { createServices } from "../../src/app.js";
import { DEFAULT_DATABASE_POOL_SIZE } from "../../src/config.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";
import {
  freePort,
  runCli,
  startServer,
  stopAllProcesses,
  waitFor,
  type RunningServer,
} from "../helpers/process.js";
import { whoami } from "./support.js";

/** Servers of the running test; stopped after it whatever happened. */
const servers: RunningServer[] = [];
async function serve(...args: Parameters<typeof startServer>): Promise<RunningServer> {
  const server = await startServer(...args);
  servers.push(server);
  return server;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop("SIGKILL")));
});
afterAll(stopAllProcesses);

let database: TestDatabase | undefined;
afterEach(async () => {
  await database?.cleanup();
  database = undefined;
});
async function freshDatabase(): Promise<TestDatabase> {
  database = await createTestDatabase();
  return database;
}

/** Two servers and several CLI processes in a row: each start takes seconds on a loaded machine. */
const PROCESSES_TIMEOUT_MS = 120_000;

const BANNER_TOKEN = /^ {4}(mlt_[A-Za-z0-9_-]{43})$/m;

/** The token of the first-start banner, once the server has printed it. */
async function bannerToken(server: RunningServer): Promise<string> {
  await waitFor(() => BANNER_TOKEN.test(server.stderr), "the first-start banner");
  return BANNER_TOKEN.exec(server.stderr)?.[1] ?? "";
}

describe("first start", () => {
  it(
    "prints the default organization's token once; it works; a restart prints none",
    async () => {
      const { env } = await freshDatabase();
      const first = await serve(env);
      const token = await bannerToken(first);
      expect(first.stderr).toContain('First start: created the organization "default"');
      expect(first.stderr).toContain(`curl -H "x-api-token: ${token}"`);
      expect(first.stderr).toContain(`Dashboard: ${first.url}/ (sign in with this token).`);
      expect(first.stderr).toContain(`${first.url}/v1/whoami`);
      expect(first.stdout).not.toContain(token);
      expect(await whoami(first.url, token)).toBe("default");
      expect((await first.stop()).code).toBe(0);

      const second = await serve(env);
      expect(await whoami(second.url, token)).toBe("default");
      expect((await second.stop()).code).toBe(0);
      // Its output is complete once it has exited.
      expect(second.stderr).not.toContain("First start");
      expect(second.stderr).not.toContain("mlt_");
      expect(second.stdout).not.toContain("mlt_");

      const orgs = await runCli(["org", "list", "--json"], env);
      expect((JSON.parse(orgs.stdout) as { slug: string }[]).map((o) => o.slug)).toEqual([
        "default",
      ]);
    },
    PROCESSES_TIMEOUT_MS,
  );
});

/** A port held by another program (a plain TCP listener) while `use` runs. */
async function withPortTaken<T>(use: (port: number) => Promise<T>): Promise<T> {
  const blocker: Server = createServer();
  await new Promise<void>((resolve, reject) => {
    blocker.once("error", reject);
    blocker.listen(0, "127.0.0.1", resolve);
  });
  const address = blocker.address();
  try {
    if (address === null || typeof address === "string") throw new Error("no port");
    return await use(address.port);
  } finally {
    await new Promise((resolve) => blocker.close(resolve));
  }
}

describe("first start that cannot serve", () => {
  it(
    "a taken port: exits non-zero naming the port, shows no token; the next start shows one that works",
    async () => {
      const { env } = await freshDatabase();
      const failed = await withPortTaken((port) =>
        runCli(["serve"], { ...env, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" }),
      );
      expect(failed.timedOut).toBe(false);
      expect(failed.code).not.toBe(0);
      expect(failed.stderr).toMatch(
        /^mainline: Cannot listen on port \d+ on 127\.0\.0\.1: the port is already in use/m,
      );
      expect(failed.stderr + failed.stdout).not.toContain("mlt_");
      expect(failed.stderr).not.toContain("First start");

      const next = await serve(env);
      const token = await bannerToken(next);
      expect(next.stderr).toContain('First start: created the organization "default"');
      expect(await whoami(next.url, token)).toBe("default");
    },
    PROCESSES_TIMEOUT_MS,
  );

  it(
    "a token issued by a start that died before showing it: the next start shows a new one and revokes it",
    async () => {
      const db = await freshDatabase();
      const { organizations } = createServices(db.handle);
      const unshown = await organizations.issueFirstStartToken(Date.now());
      expect(unshown).toBeDefined();

      const next = await serve(db.env);
      const token = await bannerToken(next);
      expect(next.stderr).toContain('First start: the organization "default" has a new token');
      expect(token).not.toBe(unshown?.token);
      expect(await whoami(next.url, token)).toBe("default");
      expect(await whoami(next.url, unshown?.token ?? "")).toBe(401);
      expect((await next.stop()).code).toBe(0);

      const tokens = await runCli(["token", "list", "--org", "default", "--json"], db.env);
      const listed = JSON.parse(tokens.stdout) as { name: string; status?: string }[];
      expect(listed.map((t) => t.name)).toEqual(["first start (not shown yet)", "first start"]);
    },
    PROCESSES_TIMEOUT_MS,
  );
});

// SQLite only: several processes on one PostgreSQL database, test/cli/two-servers.test.ts.
// Only on SQLite: this file runs in the SQLite project alone.
describe("a second serve on one SQLite database", () => {
  it(
    "is refused, naming the serving process, and changes nothing; a SIGKILLed server's lock does not block the next",
    async () => {
      const { env, dataDir } = await freshDatabase();
      const first = await serve(env);
      const token = await bannerToken(first);

      const second = await runCli(
        ["serve"],
        { ...env, PORT: String(await freePort()), HOST: "127.0.0.1", LOG_LEVEL: "info" },
        { timeoutMs: 15_000 },
      );
      expect(second.timedOut).toBe(false);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(
        new RegExp(
          `^mainline: Another mainline serve \\(pid ${String(first.process.pid)}, started [^)]+\\) is serving the SQLite database .*mainline\\.db; nothing was started or changed\\.`,
          "m",
        ),
      );
      expect(second.stderr).toContain("use PostgreSQL (DATABASE_URL=postgres://…)");
      // It opened nothing: no log line, no banner, no token.
      expect(second.stdout).toBe("");
      expect(second.stderr).not.toContain("mlt_");
      // The first serves on, its token unchanged.
      expect(await whoami(first.url, token)).toBe("default");

      // Killed, the first leaves its lock's files behind; the next start serves all the same.
      expect(await first.stop("SIGKILL")).toMatchObject({ signal: "SIGKILL" });
      const holderFile = path.join(dataDir, "mainline.db.serve-lock.pid");
      expect(existsSync(holderFile)).toBe(true);
      const next = await serve(env);
      expect(await whoami(next.url, token)).toBe("default");
      expect(JSON.parse(readFileSync(holderFile, "utf8"))).toMatchObject({
        pid: next.process.pid,
      });
      // Stopped gracefully, it releases the lock.
      expect((await next.stop()).code).toBe(0);
      expect(existsSync(holderFile)).toBe(false);
    },
    PROCESSES_TIMEOUT_MS,
  );
});

describe("bootstrap organization and token", () => {
  it(
    "makes the configured token work for its organization, without a default one, idempotently",
    async () => {
      const { env } = await freshDatabase();
      const token = randomBytes(32).toString("hex");
      const bootstrap = { ...env, MAINLINE_BOOTSTRAP_ORG: "ci", MAINLINE_BOOTSTRAP_TOKEN: token };

      const first = await serve(bootstrap);
      expect(await whoami(first.url, token)).toBe("ci");
      const orgs = await runCli(["org", "list", "--json"], env);
      expect((JSON.parse(orgs.stdout) as { slug: string }[]).map((o) => o.slug)).toEqual(["ci"]);
      expect((await first.stop()).code).toBe(0);
      expect(first.stderr).not.toContain("First start");
      expect(first.stderr).not.toContain(token);

      const again = await serve(bootstrap);
      expect(await whoami(again.url, token)).toBe("ci");
      const tokens = await runCli(["token", "list", "--org", "ci", "--json"], env);
      const listed = JSON.parse(tokens.stdout) as { id: string; name: string | null }[];
      expect(listed.map((t) => t.name)).toEqual(["bootstrap"]);
      expect(tokens.stdout).not.toContain(token);
      expect((await again.stop()).code).toBe(0);

      // A revoked bootstrap token is refused at start rather than silently brought back.
      const revoke = await runCli(["token", "revoke", listed[0]?.id ?? ""], env);
      expect(revoke.code).toBe(0);
      const port = String(await freePort());
      const refused = await runCli(["serve"], { ...bootstrap, PORT: port, LOG_LEVEL: "warn" });
      expect(refused.timedOut).toBe(false);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain("MAINLINE_BOOTSTRAP_TOKEN was revoked");
    },
    PROCESSES_TIMEOUT_MS,
  );
});

describe("configuration errors stop serve at once", () => {
  let env: Record<string, string>;
  let port: string;
  beforeAll(async () => {
    // A database of its own, so that a server started by mistake touches nothing else.
    const own = await createTestDatabase();
    env = own.env;
    port = String(await freePort());
    return () => own.cleanup();
  });

  const serveWith = (extra: Record<string, string>) =>
    runCli(["serve"], { ...env, PORT: port, LOG_LEVEL: "warn", ...extra });

  it.each([
    ["only MAINLINE_BOOTSTRAP_ORG", { MAINLINE_BOOTSTRAP_ORG: "ci" }],
    ["only MAINLINE_BOOTSTRAP_TOKEN", { MAINLINE_BOOTSTRAP_TOKEN: "a".repeat(64) }],
  ])("%s: exit code 2 naming both variables", async (_, extra) => {
    const result = await serveWith(extra);
    expect(result.timedOut).toBe(false);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("MAINLINE_BOOTSTRAP_ORG");
    expect(result.stderr).toContain("MAINLINE_BOOTSTRAP_TOKEN");
    expect(result.stderr).toMatch(/^mainline: Set both/m);
  });

  it("a bootstrap token shorter than 32 characters: exit code 2, clear message", async () => {
    const result = await serveWith({
      MAINLINE_BOOTSTRAP_ORG: "ci",
      MAINLINE_BOOTSTRAP_TOKEN: "a".repeat(31),
    });
    expect(result.timedOut).toBe(false);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      "mainline: MAINLINE_BOOTSTRAP_TOKEN must be at least 32 characters long",
    );
  });

  it("a partial GitHub App, or a key that does not parse: exit code 2, never the key", async () => {
    const partial = await serveWith({ MAINLINE_GITHUB_APP_ID: "12345" });
    expect(partial.timedOut).toBe(false);
    expect(partial.code).toBe(2);
    expect(partial.stderr).toMatch(
      /^mainline: The GitHub App is configured only in part: .*MAINLINE_GITHUB_PRIVATE_KEY, MAINLINE_GITHUB_WEBHOOK_SECRET are missing/m,
    );
    const secretKey = "MIIEpAIBAAKCAQEA1234567890abcdefghijklmnopqrstuvwxyz";
    const broken = await serveWith({
      MAINLINE_GITHUB_APP_ID: "12345",
      MAINLINE_GITHUB_PRIVATE_KEY: `-----BEGIN RSA PRIVATE KEY-----\n${secretKey}\n-----END RSA PRIVATE KEY-----`,
      MAINLINE_GITHUB_WEBHOOK_SECRET: "s",
    });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain(
      "mainline: MAINLINE_GITHUB_PRIVATE_KEY is not a usable private key",
    );
    expect(broken.stderr + broken.stdout).not.toContain(secretKey);
  });

  it("PORT=abc: exit code 2 and a message about PORT", async () => {
    const result = await serveWith({ PORT: "abc" });
    expect(result.timedOut).toBe(false);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'mainline: PORT must be a whole number from 0 to 65535 (got "abc")',
    );
  });
});

describe("graceful shutdown", () => {
  it.each(["SIGTERM", "SIGINT"] as const)(
    "%s: exits 0 within a few seconds and logs the shutdown, a silent connection open",
    async (signal) => {
      const { env } = await freshDatabase();
      const server = await serve(env, { logLevel: "info" });
      expect(await whoami(server.url, "not-a-token")).toBe(401);
      // A connection that never sends a byte, as a browser preconnects one: the server must not
      // wait for it (it would until its grace ran out, and exit 1).
      const { hostname, port } = new URL(server.url);
      const silent = connect(Number(port), hostname);
      silent.on("error", () => undefined);
      await new Promise<void>((resolve) => silent.once("connect", resolve));
      const closedByServer = new Promise<void>((resolve) => {
        silent.once("close", () => {
          resolve();
        });
      });
      const started = Date.now();
      // stop() sends the signal and kills the process only if it is still running 5 s later.
      expect(await server.stop(signal, 5_000)).toEqual({ code: 0, signal: null });
      expect(Date.now() - started).toBeLessThan(5_000);
      await closedByServer;
      const logs = server.stdout
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { msg: string; signal?: string });
      const shuttingDown = logs.findIndex((l) => l.msg.startsWith("shutting down"));
      expect(shuttingDown).toBeGreaterThanOrEqual(0);
      expect(logs[shuttingDown]?.signal).toBe(signal);
      // "stopped" comes last: after the requests in flight and the database were closed.
      expect(logs.at(-1)?.msg).toBe("stopped");
      // The port is closed: nothing answers any more.
      await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    },
  );
});

// SQLite has one connection; the pool is PostgreSQL's.
if (TEST_DIALECT === "postgres") {
  describe("MAINLINE_DATABASE_POOL_SIZE", () => {
    /** Connections the server holds after 40 requests at once that each need the database. */
    async function connectionsAfterBurst(extra: Record<string, string>): Promise<number> {
      const { env, handle } = await freshDatabase();
      const name = `mainline-pool-${randomBytes(6).toString("hex")}`;
      const url = new URL(env.DATABASE_URL ?? "");
      url.searchParams.set("application_name", name);
      const server = await serve({ ...env, ...extra, DATABASE_URL: url.toString() });
      // Unknown tokens are looked up every time (nothing to cache): one query each.
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => whoami(server.url, `mlt_unknown_${String(i)}`)),
      );
      expect(answers.every((status) => status === 401)).toBe(true);
      // The pool keeps idle connections for seconds: what it opened is still there.
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity where application_name = ${name}`.execute(
        handle.db,
      );
      return rows[0]?.n ?? 0;
    }

    it(
      "caps the PostgreSQL connections a server opens; the default opens more",
      async () => {
        // The pool's, and one more that listens for other processes' changes (ADR 0017).
        const capped = await connectionsAfterBurst({ MAINLINE_DATABASE_POOL_SIZE: "2" });
        expect(capped).toBeGreaterThanOrEqual(2);
        expect(capped).toBeLessThanOrEqual(3);
        await Promise.all(servers.splice(0).map((server) => server.stop("SIGKILL")));
        await database?.cleanup();
        database = undefined;
        const byDefault = await connectionsAfterBurst({});
        expect(byDefault).toBeGreaterThan(3);
        expect(byDefault).toBeLessThanOrEqual(DEFAULT_DATABASE_POOL_SIZE + 1);
      },
      PROCESSES_TIMEOUT_MS,
    );
  });
}
