import { Migrator, type Kysely, type Migration, type MigrationResultSet } from "kysely";
import type { DatabaseHandle } from "./connection.js";
import { initial } from "./migrations/0001_initial.js";
import { columnTypes, type DialectMigration } from "./migrations/types.js";
import type { Database } from "./schema.js";

/** Every migration, in order. Names sort lexically; never rename or edit a released one. */
const MIGRATIONS: Record<string, DialectMigration> = {
  "0001_initial": initial,
};

export interface MigrationReport {
  applied: string[];
}

/**
 * Brings the schema up to date. Safe to run from several processes at once: Kysely's migrator
 * holds a lock row while it works.
 */
export async function migrateToLatest(handle: DatabaseHandle): Promise<MigrationReport> {
  const types = columnTypes(handle.dialect);
  const migrations: Record<string, Migration> = {};
  for (const [name, migration] of Object.entries(MIGRATIONS)) {
    migrations[name] = {
      up: (db) => migration.up(db, types),
      down: (db) => migration.down(db, types),
    };
  }
  const migrator = new Migrator({
    db: handle.db as unknown as Kysely<unknown>,
    provider: { getMigrations: () => Promise.resolve(migrations) },
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === "Error")?.migrationName;
    const cause = result.error instanceof Error ? result.error.message : String(result.error);
    throw new Error(`Migration ${failed ?? "(unknown)"} failed: ${cause}`, {
      cause: result.error,
    });
  }
  return {
    applied: (result.results ?? [])
      .filter((r) => r.status === "Success")
      .map((r) => r.migrationName),
  };
}

export type { Database };
