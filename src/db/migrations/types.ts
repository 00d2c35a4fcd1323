import type { Kysely } from "kysely";
import type { DialectName } from "../connection.js";

/** Column types that differ between the dialects; everything else is portable SQL. */
export interface ColumnTypes {
  bool: "boolean" | "integer";
  bigint: "bigint" | "integer";
  /** An integer primary key the database assigns (SQLite's rowid alias, PostgreSQL's bigserial). */
  autoKey: "bigserial" | "integer";
  /** Floating point. */
  double: "double precision" | "real";
}

export function columnTypes(dialect: DialectName): ColumnTypes {
  return dialect === "postgres"
    ? { bool: "boolean", bigint: "bigint", autoKey: "bigserial", double: "double precision" }
    : { bool: "integer", bigint: "integer", autoKey: "integer", double: "real" };
}

export interface DialectMigration {
  // Migrations must not depend on the current schema type, which changes over time.
  up(db: Kysely<unknown>, types: ColumnTypes): Promise<void>;
  down(db: Kysely<unknown>, types: ColumnTypes): Promise<void>;
}
