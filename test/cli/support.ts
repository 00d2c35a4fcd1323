import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { expect, inject } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import {
  startServer,
  stopAllProcesses,
  type CliResult,
  type RunningServer,
} from "../helpers/process.js";

/** What a CLI-generated API token looks like: `mlt_` + 32 random bytes in base64url. */
export const TOKEN_PATTERN = /^mlt_[A-Za-z0-9_-]{43}$/;

export interface HttpAnswer {
  status: number;
  body: unknown;
}

/** `POST <url>/v1/<operation>` with a JSON body and (optionally) an API token. */
export async function post(
  url: string,
  operation: string,
  body: unknown,
  token?: string,
): Promise<HttpAnswer> {
  const response = await fetch(`${url}/v1/${operation}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { "x-api-token": token }),
    },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

/** `post`, expecting 200 (the failure names the operation and shows the answer); its body. */
export async function postOk(
  url: string,
  operation: string,
  body: unknown,
  token: string,
): Promise<Record<string, unknown>> {
  const answer = await post(url, operation, body, token);
  expect(answer.status, `${operation}: ${JSON.stringify(answer.body)}`).toBe(200);
  return answer.body as Record<string, unknown>;
}

/** The organization slug a token authenticates as, or the HTTP status when it does not. */
export async function whoami(url: string, token: string): Promise<string | number> {
  const answer = await post(url, "whoami", {}, token);
  if (answer.status !== 200) return answer.status;
  return (answer.body as { organization: { slug: string } }).organization.slug;
}

export interface EmptyDatabase {
  /** What a child process needs to open it. */
  env: Record<string, string>;
  cleanup(): Promise<void>;
}

/**
 * A database of the dialect under test that has never been migrated (createTestDatabase migrates
 * its databases): an empty data directory, or a new empty PostgreSQL schema.
 */
export async function createEmptyDatabase(): Promise<EmptyDatabase> {
  const { dialect, postgresUrl } = inject("testDatabase");
  const dataDir = mkdtempSync(path.join(tmpdir(), "mainline-cli-"));
  const removeDir = () => {
    rmSync(dataDir, { recursive: true, force: true });
  };
  if (dialect === "sqlite") {
    return {
      env: { MAINLINE_DATA_DIR: dataDir },
      cleanup: () => {
        removeDir();
        return Promise.resolve();
      },
    };
  }
  if (!postgresUrl) throw new Error("no PostgreSQL test database was provided");
  const schema = `s_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  try {
    await admin.query(`create schema ${schema}`);
  } finally {
    await admin.end();
  }
  return {
    env: {
      DATABASE_URL: `${postgresUrl}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
      MAINLINE_DATA_DIR: dataDir,
    },
    cleanup: async () => {
      removeDir();
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      try {
        await client.query(`drop schema if exists ${schema} cascade`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A command that succeeded: exit code 0 and no `mainline: ` error line (warnings may be). */
export function succeeded(result: CliResult): CliResult {
  expect(result.stderr).not.toMatch(/^mainline: (?!warning: )/m);
  expect(result.code).toBe(0);
  return result;
}

/** A command that failed by itself (not killed): a non-zero exit, nothing on stdout; its stderr. */
export function failed(result: CliResult): string {
  expect(result.timedOut).toBe(false);
  expect(result.code).not.toBe(0);
  expect(result.code).not.toBeNull();
  expect(result.stdout).toBe("");
  return result.stderr;
}

export interface BootstrappedServer {
  database: TestDatabase;
  server: RunningServer;
  /** The organization `acme`'s token (MAINLINE_BOOTSTRAP_TOKEN). */
  token: string;
  /** Stops the server (and any process left) and removes the database. */
  close(): Promise<void>;
}

/** `mainline serve` on a fresh database, its organization `acme` bootstrapped with a token. */
export async function serveBootstrapped(
  env: Record<string, string> = {},
): Promise<BootstrappedServer> {
  const database = await createTestDatabase();
  const token = randomBytes(32).toString("hex");
  const server = await startServer({
    ...env,
    ...database.env,
    MAINLINE_BOOTSTRAP_ORG: "acme",
    MAINLINE_BOOTSTRAP_TOKEN: token,
  });
  return {
    database,
    server,
    token,
    close: async () => {
      await server.stop();
      await stopAllProcesses();
      await database.cleanup();
    },
  };
}
