import { mkdirSync } from "node:fs";
import path from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { CamelCasePlugin, Kysely, SqliteDialect, sql, type SqliteDatabase } from "kysely";
import pg from "pg";
import { assertSupportedNode } from "../lib/node-support.js";
import type { Database } from "./schema.js";
import { SqliteCheckpointer } from "./sqlite-checkpointer.js";
import { CurrentSchemaPostgresDialect } from "./postgres-introspector.js";
import { ChangeListener, LookupCache, registerLookupCache } from "./lookup-cache.js";

export type DialectName = "sqlite" | "postgres";

export interface DatabaseHandle {
  db: Kysely<Database>;
  dialect: DialectName;
  /** Where the data lives, for logs: a file path or a URL without its password. */
  location: string;
  close(): Promise<void>;
  /**
   * SQLite files: WAL checkpoints move to a thread of their own from now on (a long-running
   * server calls it; nothing else needs it). No effect on PostgreSQL or an in-memory database.
   */
  checkpointInBackground(): void;
  /**
   * The cache of tokens, repositories and queues. On SQLite it is always on. On PostgreSQL it is
   * off until `listenForChanges()` (a long-running server calls it; a short-lived command reads the
   * database every time).
   */
  lookups: LookupCache;
  /** PostgreSQL: starts listening for other processes' changes, which turns the cache on. */
  listenForChanges(): Promise<void>;
  /**
   * The driver underneath, for bulk writes that the query builder would slow down (ingestion).
   * SQLite's handle may only be used inside `db.connection().execute(...)`, which holds Kysely's
   * connection lock, so that no other query interleaves.
   */
  raw:
    { dialect: "sqlite"; sqlite: BetterSqlite3.Database } | { dialect: "postgres"; pool: pg.Pool };
}

export interface OpenDatabaseOptions {
  /** `postgres://…`, `sqlite:<path>`, or a plain file path; empty means the default file. */
  url: string | undefined;
  dataDir: string;
  /** PostgreSQL only: the schema to use (tests isolate themselves with it). */
  searchPath?: string;
  /** PostgreSQL only: connections opened at most (pg's default, 10, when not given). */
  poolSize?: number;
  /** PostgreSQL only: a connection of the pool was lost (it is replaced; for the log). */
  onConnectionError?: (error: Error) => void;
}

const INT8_OID = 20;
const CONNECT_TIMEOUT_MS = 10_000;
const NUMERIC_OID = 1700;

export function describeDatabaseUrl(options: OpenDatabaseOptions): {
  dialect: DialectName;
  target: string;
} {
  const url = options.url?.trim();
  if (!url) return { dialect: "sqlite", target: path.resolve(options.dataDir, "mainline.db") };
  if (/^postgres(ql)?:\/\//i.test(url)) return { dialect: "postgres", target: url };
  if (url.startsWith("sqlite:")) {
    const file = url.slice("sqlite:".length).replace(/^\/\//, "");
    if (!file) throw new Error("DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data.db");
    return { dialect: "sqlite", target: file === ":memory:" ? file : path.resolve(file) };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new Error(
      `DATABASE_URL must start with postgres:// or sqlite: (got ${redactUrl(url).split("://")[0] ?? ""}://…)`,
    );
  }
  return { dialect: "sqlite", target: path.resolve(url) };
}

export function openDatabase(options: OpenDatabaseOptions): DatabaseHandle {
  // The SQLite driver crashes the process on an older Node: a clear error first, on both dialects.
  assertSupportedNode();
  const { dialect, target } = describeDatabaseUrl(options);
  if (dialect === "postgres") return openPostgres(target, options);
  return openSqlite(target);
}

function openSqlite(file: string): DatabaseHandle {
  if (file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = new BetterSqlite3(file);
  sqlite.pragma("journal_mode = WAL");
  // FULL: a transaction that returned is on disk, even across a power loss (acknowledged = durable).
  sqlite.pragma("synchronous = FULL");
  sqlite.pragma("busy_timeout = 5000");
  sqlite.pragma("foreign_keys = ON");
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withStatementCache(sqlite) }),
    plugins: [new CamelCasePlugin()],
  });
  let checkpointer: SqliteCheckpointer | null = null;
  const closeDb = closeOnce(db);
  // Another connection (another process on the same file) committed since the last look: what
  // is cached may be stale. Reading it costs microseconds (no disk access).
  const dataVersion = sqlite.prepare("PRAGMA data_version").pluck();
  let seenVersion = dataVersion.get();
  let open = true;
  const lookups = new LookupCache(() => {
    if (!open) return false;
    const version = dataVersion.get();
    if (version !== seenVersion) {
      seenVersion = version;
      lookups.changed();
    }
    return true;
  });
  registerLookupCache(db, lookups);
  return {
    db,
    dialect: "sqlite",
    location: file,
    lookups,
    listenForChanges: () => Promise.resolve(),
    close: async () => {
      open = false;
      await closeDb();
      await checkpointer?.stop();
    },
    checkpointInBackground: () => {
      if (checkpointer || file === ":memory:") return;
      checkpointer = new SqliteCheckpointer(file);
      // Only a fallback now: a commit checkpoints by itself once the WAL holds this many pages.
      sqlite.pragma(`wal_autocheckpoint = ${FALLBACK_CHECKPOINT_PAGES}`);
    },
    raw: { dialect: "sqlite", sqlite },
  };
}

const STATEMENT_CACHE_SIZE = 500;
/** 64 MiB of 4 KiB pages: far beyond what the background checkpoints let the WAL reach. */
const FALLBACK_CHECKPOINT_PAGES = 16_384;

/**
 * Kysely's SQLite driver prepares every query anew, which costs more than running it; queries
 * repeat (the builder emits the same SQL text for the same shape), so prepared statements are
 * kept, least recently used first out. A statement still being iterated is never handed out twice.
 */
function withStatementCache(sqlite: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => {
      cache.clear();
      sqlite.close();
    },
    prepare: (text: string) => {
      const cached = cache.get(text);
      if (cached && !cached.busy) {
        cache.delete(text);
        cache.set(text, cached);
        return cached;
      }
      const statement = sqlite.prepare(text);
      cache.set(text, statement);
      if (cache.size > STATEMENT_CACHE_SIZE) {
        const oldest = cache.keys().next();
        if (!oldest.done) cache.delete(oldest.value);
      }
      return statement;
    },
  };
}

function openPostgres(url: string, options: OpenDatabaseOptions): DatabaseHandle {
  // BIGINT (epoch ms, counts) and NUMERIC fit in a double for every value we store.
  const types = new pg.TypeOverrides();
  types.setTypeParser(INT8_OID, Number);
  types.setTypeParser(NUMERIC_OID, Number);
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    types,
    // How the service's sessions show in pg_stat_activity (an application_name in the URL wins).
    application_name: "mainline",
    // A request that gets no connection (the database does not answer, or the pool stays busy)
    // fails (503) instead of waiting forever.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // A connection silently dropped by the network is noticed (and replaced) in minutes, not hours.
    keepAlive: true,
    ...(options.searchPath ? { options: `-c search_path=${options.searchPath}` } : {}),
  });
  // A connection can die at any moment (pg_terminate_backend, a restart of PostgreSQL, the
  // network). Its client then emits `error`, which would end the process if nobody listened:
  // the pool listens on idle clients (and replaces them), and every client carries a listener
  // of its own for the time it is checked out; the query in progress, if any, fails by itself
  // (a 503 for a request) and the broken client is not returned to the pool.
  pool.on("error", () => undefined);
  pool.on("connect", (client) => {
    client.on("error", (error) => options.onConnectionError?.(error));
  });
  const db = new Kysely<Database>({
    dialect: new CurrentSchemaPostgresDialect({ pool }),
    plugins: [new CamelCasePlugin()],
  });
  // Off until a listener hears every other process's changes.
  const lookups = new LookupCache(() => false);
  registerLookupCache(db, lookups);
  let listener: ChangeListener | null = null;
  const closeDb = closeOnce(db);
  return {
    db,
    dialect: "postgres",
    location: redactUrl(url),
    lookups,
    listenForChanges: async () => {
      if (listener) return;
      listener = new ChangeListener(lookups, {
        client: {
          connectionString: url,
          application_name: "mainline",
          connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
          ...(options.searchPath ? { options: `-c search_path=${options.searchPath}` } : {}),
        },
        ...(options.onConnectionError ? { onError: options.onConnectionError } : {}),
      });
      await listener.start();
    },
    close: async () => {
      await listener?.stop();
      await closeDb();
    },
    checkpointInBackground: () => undefined,
    raw: { dialect: "postgres", pool },
  };
}

/** Closing twice is harmless (shutdown paths may overlap). */
function closeOnce(db: Kysely<Database>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= db.destroy());
}

export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
}

export async function pingDatabase(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db);
}
