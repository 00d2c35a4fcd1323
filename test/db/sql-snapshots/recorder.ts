import type BetterSqlite3 from "better-sqlite3";
import {
  CamelCasePlugin,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryResult,
} from "kysely";
import type pg from "pg";
import type { DatabaseHandle, DialectName } from "../../../src/db/connection.js";
import type { Database } from "../../../src/db/schema.js";
import { LookupCache } from "../../../src/db/lookup-cache.js";

/**
 * A database that runs nothing: every statement a store sends is compiled by the dialect's own
 * query compiler (as in production, CamelCasePlugin included) and written down, and answered
 * with the rows the scenario chooses (none by default). Transactions show as `begin`/`commit`.
 */
export interface RecordedQuery {
  sql: string;
  parameters: readonly unknown[];
}

/** Rows to answer a statement with (by its SQL and its position in the call), or undefined. */
export type Answer = (sql: string, index: number) => Record<string, unknown>[] | undefined;

export interface Recorder {
  handle: DatabaseHandle;
  db: Kysely<Database>;
  /** Starts a new call: clears the record and sets how statements are answered. */
  start(answer?: Answer): void;
  queries(): RecordedQuery[];
}

export function createRecorder(dialect: DialectName): Recorder {
  let recorded: RecordedQuery[] = [];
  let answer: Answer = () => undefined;
  const run = (query: { sql: string; parameters: readonly unknown[] }): QueryResult<never> => {
    const index = recorded.length;
    recorded.push({ sql: query.sql, parameters: [...query.parameters] });
    const rows = answer(query.sql, index) ?? [];
    return { rows: rows as never[], numAffectedRows: BigInt(rows.length || 1) };
  };
  const connection: DatabaseConnection = {
    executeQuery: <R>(query: CompiledQuery) => Promise.resolve(run(query) as QueryResult<R>),
    streamQuery: () => {
      throw new Error("the recorder does not stream");
    },
  };
  const mark = (sql: string) => {
    recorded.push({ sql, parameters: [] });
    return Promise.resolve();
  };
  const driver: Driver = {
    init: () => Promise.resolve(),
    acquireConnection: () => Promise.resolve(connection),
    beginTransaction: () => mark("begin"),
    commitTransaction: () => mark("commit"),
    rollbackTransaction: () => mark("rollback"),
    releaseConnection: () => Promise.resolve(),
    destroy: () => Promise.resolve(),
  };
  const kyselyDialect: Dialect =
    dialect === "postgres"
      ? {
          createAdapter: () => new PostgresAdapter(),
          createDriver: () => driver,
          createQueryCompiler: () => new PostgresQueryCompiler(),
          createIntrospector: (db) => new PostgresIntrospector(db),
        }
      : {
          createAdapter: () => new SqliteAdapter(),
          createDriver: () => driver,
          createQueryCompiler: () => new SqliteQueryCompiler(),
          createIntrospector: (db) => new SqliteIntrospector(db),
        };
  const db = new Kysely<Database>({ dialect: kyselyDialect, plugins: [new CamelCasePlugin()] });
  // The SQLite ingestion path writes runs through better-sqlite3's prepared statements.
  const sqlite = {
    prepare: (text: string) => ({
      run: (values: readonly unknown[]) => run({ sql: text, parameters: values }),
    }),
  } as unknown as BetterSqlite3.Database;
  const handle: DatabaseHandle = {
    db,
    dialect,
    location: "recorder",
    close: () => db.destroy(),
    checkpointInBackground: () => undefined,
    // No cache: every lookup is recorded as the query it is.
    lookups: new LookupCache(() => false),
    listenForChanges: () => Promise.resolve(),
    raw:
      dialect === "postgres" ? { dialect, pool: null as unknown as pg.Pool } : { dialect, sqlite },
  };
  return {
    handle,
    db,
    start: (next) => {
      recorded = [];
      answer = next ?? (() => undefined);
    },
    queries: () => recorded,
  };
}
