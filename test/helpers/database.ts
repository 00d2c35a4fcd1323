import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { KyselyPlugin } from "kysely";
import { inject } from "vitest";
import { openMigratedDatabase } from "../../src/app.js";
import type { DatabaseHandle } from "../../src/db/connection.js";
import { giveBackSchema, takeSchema } from "./postgres-schemas.js";

export const TEST_DIALECT = inject("testDatabase").dialect;

export interface TestDatabase {
  handle: DatabaseHandle;
  /** What a child process needs to open the same database: DATABASE_URL (+ data dir). */
  env: Record<string, string>;
  dataDir: string;
  /** PostgreSQL: the schema this database lives in (its search_path); undefined on SQLite. */
  schema?: string;
  cleanup(): Promise<void>;
}

/**
 * A fresh, migrated database of the dialect under test: a SQLite file in a temporary directory
 * (a copy of the run's migrated one), or a schema of the run's throwaway PostgreSQL database
 * (postgres-schemas.ts).
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const { dialect, postgresUrl, template } = inject("testDatabase");
  // The project a file runs in (vitest.config.ts) says which database it must get.
  const project = process.env.MAINLINE_TEST_PROJECT;
  const expected = project?.startsWith("postgres") ? "postgres" : "sqlite";
  if (project !== undefined && project !== "unit" && dialect !== expected) {
    throw new Error(`the ${project} project was given ${dialect}, not ${expected}`);
  }
  if (dialect === "none") {
    throw new Error(
      "this test file uses a database: take it out of DATABASE_FREE in vitest.config.ts",
    );
  }
  const dataDir = mkdtempSync(path.join(tmpdir(), "mainline-test-"));
  if (dialect === "sqlite") {
    // A copy of the run's migrated file (global-setup.ts); opening it finds nothing to migrate.
    if (template && "sqliteFile" in template) {
      copyFileSync(template.sqliteFile, path.join(dataDir, "mainline.db"));
    }
    const handle = await openMigratedDatabase({ url: undefined, dataDir });
    return {
      handle,
      dataDir,
      env: { MAINLINE_DATA_DIR: dataDir },
      cleanup: async () => {
        await handle.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  if (!postgresUrl) throw new Error("no PostgreSQL test database was provided");
  const schema = await takeSchema(postgresUrl, template && "script" in template ? template : null);
  const childUrl = `${postgresUrl}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const handle = await openMigratedDatabase({
    url: postgresUrl,
    dataDir,
    searchPath: schema,
    poolSize: 4,
  });
  // Given to another process, the schema is never used again: that process may outlive the test.
  let shared = false;
  return {
    handle,
    dataDir,
    schema,
    get env() {
      shared = true;
      return { DATABASE_URL: childUrl, MAINLINE_DATA_DIR: dataDir };
    },
    cleanup: async () => {
      await handle.close();
      rmSync(dataDir, { recursive: true, force: true });
      if (!shared) await giveBackSchema(postgresUrl, schema);
    },
  };
}

/**
 * A Kysely plugin that records every statement sent through it (its operation tree as JSON), for
 * tests that count a read's round trips: `db.withPlugin(recorder.plugin)`.
 */
export function statementRecorder(): { plugin: KyselyPlugin; statements: string[] } {
  const statements: string[] = [];
  return {
    statements,
    plugin: {
      transformQuery: (args) => {
        statements.push(JSON.stringify(args.node));
        return args.node;
      },
      transformResult: (args) => Promise.resolve(args.result),
    },
  };
}
