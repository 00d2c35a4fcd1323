import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { openMigratedDatabase } from "../../src/app.js";
import type { SchemaTemplate } from "./postgres-schemas.js";

/**
 * The project (vitest.config.ts) chooses the database its storage and HTTP tests run on: none for
 * `unit`, SQLite for `sqlite`, PostgreSQL for the `postgres` projects, where a throwaway database
 * is created for the project's run and dropped after it; each test file then works in a schema of
 * its own inside it.
 *
 * A test's fresh database is a copy of one migrated here once per run (`template`): SQLite's
 * file, or PostgreSQL's schema as `pg_dump` writes it (a single script); migrating each anew cost
 * 0.1–0.3 s a test. Without `pg_dump`, each test database is migrated as before.
 */
declare module "vitest" {
  export interface ProvidedContext {
    testDatabase: {
      dialect: "sqlite" | "postgres" | "none";
      postgresUrl: string | null;
      /** A migrated SQLite file to copy, or a PostgreSQL schema's script and the name in it. */
      template: { sqliteFile: string } | SchemaTemplate | null;
    };
    /** What child processes run: the built `dist/` when it is up to date, else the sources. */
    cliEntry: "dist" | "sources";
  }
}

const exec = promisify(execFile);

const ADMIN_URL =
  process.env.MAINLINE_TEST_PG_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export default async function setup(
  project: TestProject,
): Promise<(() => Promise<void>) | undefined> {
  project.provide("cliEntry", await cliEntry());
  // The files that never touch a database run once, in a project of their own, where a database
  // asked for is an error (vitest.config.ts, DATABASE_FREE).
  if (project.name === "unit") {
    project.provide("testDatabase", { dialect: "none", postgresUrl: null, template: null });
    return undefined;
  }
  const dialect = project.name.startsWith("postgres") ? "postgres" : "sqlite";
  if (dialect === "sqlite") {
    const dir = mkdtempSync(path.join(tmpdir(), "mainline-template-"));
    // Closed, its log is folded into the file: the file alone is the whole database.
    await (await openMigratedDatabase({ url: undefined, dataDir: dir })).close();
    const sqliteFile = path.join(dir, "mainline.db");
    project.provide("testDatabase", { dialect, postgresUrl: null, template: { sqliteFile } });
    return () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    };
  }
  const name = `mainline_test_${Date.now()}_${randomBytes(3).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(
      `the ${project.name} tests need PostgreSQL, which is not reachable at ${ADMIN_URL}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const template = await postgresTemplate(url.toString());
  project.provide("testDatabase", { dialect, postgresUrl: url.toString(), template });
  return async () => {
    const cleanup = new pg.Client({ connectionString: ADMIN_URL });
    await cleanup.connect();
    await cleanup.query(`drop database if exists ${name} with (force)`);
    await cleanup.end();
  };
}

/**
 * A schema migrated once in the run's database, as the script `pg_dump` writes of it (its
 * structure and its rows: the migrations' own); null when `pg_dump` cannot be run.
 */
async function postgresTemplate(postgresUrl: string): Promise<SchemaTemplate | null> {
  const schema = `mainline_template_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const dataDir = mkdtempSync(path.join(tmpdir(), "mainline-template-"));
  try {
    await (
      await openMigratedDatabase({ url: postgresUrl, dataDir, searchPath: schema, poolSize: 1 })
    ).close();
    const { stdout } = await exec(
      "pg_dump",
      ["--dbname", postgresUrl, "--schema", schema, "--inserts", "--no-owner", "--no-privileges"],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    // psql's meta-commands (`\restrict`) are not SQL.
    const script = stdout
      .split("\n")
      .filter((line) => !line.startsWith("\\"))
      .join("\n");
    return { schema, script };
  } catch {
    return null;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * `dist/` when it was built from the sources as they are (scripts/build.mjs --check: `npm ci`
 * builds it): child processes then start as `npm start` runs them, without compiling on the fly.
 */
async function cliEntry(): Promise<"dist" | "sources"> {
  const root = path.resolve(import.meta.dirname, "../..");
  return exec(process.execPath, [path.join(root, "scripts/build.mjs"), "--check"], {
    cwd: root,
  }).then(
    () => "dist" as const,
    () => "sources" as const,
  );
}
