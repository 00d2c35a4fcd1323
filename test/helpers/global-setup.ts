import { randomBytes } from "node:crypto";
import pg from "pg";
import type { TestProject } from "vitest/node";

/**
 * The project (vitest.config.ts) chooses the database its storage and HTTP tests run on: none for
 * `unit`, SQLite for `sqlite`, PostgreSQL for the `postgres` projects, where a throwaway database
 * is created for the project's run and dropped after it; each test file then works in a schema of
 * its own inside it.
 */
declare module "vitest" {
  export interface ProvidedContext {
    testDatabase: { dialect: "sqlite" | "postgres" | "none"; postgresUrl: string | null };
  }
}

const ADMIN_URL =
  process.env.MAINLINE_TEST_PG_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export default async function setup(
  project: TestProject,
): Promise<(() => Promise<void>) | undefined> {
  // The files that never touch a database run once, in a project of their own, where a database
  // asked for is an error (vitest.config.ts, DATABASE_FREE).
  if (project.name === "unit") {
    project.provide("testDatabase", { dialect: "none", postgresUrl: null });
    return undefined;
  }
  const dialect = project.name.startsWith("postgres") ? "postgres" : "sqlite";
  if (dialect === "sqlite") {
    project.provide("testDatabase", { dialect, postgresUrl: null });
    return undefined;
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
  project.provide("testDatabase", { dialect, postgresUrl: url.toString() });
  return async () => {
    const cleanup = new pg.Client({ connectionString: ADMIN_URL });
    await cleanup.connect();
    await cleanup.query(`drop database if exists ${name} with (force)`);
    await cleanup.end();
  };
}
