/**
 * SQLite is served by one process: a second `mainline serve` on the same database refuses to
 * start, saying which process serves it and what to do instead, and changes nothing; the lock of
 * a server killed with SIGKILL does not block the next start. (Several processes on one
 * PostgreSQL database: test/cli/two-servers.test.ts.)
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import {
  freePort,
  runCli,
  startServer,
  stopAllProcesses,
  waitFor,
  type RunningServer,
} from "../helpers/process.js";
import { whoami } from "./support.js";

const servers: RunningServer[] = [];
let database: TestDatabase | undefined;
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop("SIGKILL")));
  await database?.cleanup();
  database = undefined;
});
afterAll(stopAllProcesses);

const BANNER_TOKEN = /^ {4}(mlt_[A-Za-z0-9_-]{43})$/m;

describe("a second serve on one SQLite database", () => {
  it("is refused, naming the serving process, and changes nothing; a SIGKILLed server's lock does not block the next", async () => {
    database = await createTestDatabase();
    const { env, dataDir } = database;
    const first = await startServer(env);
    servers.push(first);
    await waitFor(() => BANNER_TOKEN.test(first.stderr), "the first-start banner");
    const token = BANNER_TOKEN.exec(first.stderr)?.[1] ?? "";

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
    const orgs = await runCli(["org", "list", "--json"], env);
    expect((JSON.parse(orgs.stdout) as { slug: string }[]).map((o) => o.slug)).toEqual(["default"]);

    // Killed, the first leaves its lock's files behind; the next start serves all the same.
    expect(await first.stop("SIGKILL")).toMatchObject({ signal: "SIGKILL" });
    const holderFile = path.join(dataDir, "mainline.db.serve-lock.pid");
    expect(existsSync(holderFile)).toBe(true);
    const next = await startServer(env);
    servers.push(next);
    expect(await whoami(next.url, token)).toBe("default");
    expect(JSON.parse(readFileSync(holderFile, "utf8"))).toMatchObject({
      pid: next.process.pid,
    });
    // Stopped gracefully, it releases the lock.
    expect((await next.stop()).code).toBe(0);
    expect(existsSync(holderFile)).toBe(false);
  }, 120_000);
});
