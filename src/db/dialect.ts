import {
  sql,
  type Kysely,
  type RawBuilder,
  type SelectQueryBuilder,
  type Transaction,
} from "kysely";
import type { DialectName } from "./connection.js";
import type { Database } from "./schema.js";

/**
 * Every SQL fragment that differs between SQLite and PostgreSQL, side by side: stores build
 * their queries once and ask this module for the parts that differ, instead of branching on the
 * dialect themselves. The SQL each store method sends, for both dialects, is checked in under
 * `src/db/queries/` (`npm run sql:snapshots` rewrites it).
 */
export interface SqlDialect {
  readonly name: DialectName;
  /** Boolean literals as boolean columns hold them: BOOLEAN on PostgreSQL, 0/1 on SQLite. */
  readonly true: RawBuilder<unknown>;
  readonly false: RawBuilder<unknown>;
  /** The larger of two values (`greatest` on PostgreSQL, the two-argument scalar `max` on SQLite). */
  greatest(a: RawBuilder<unknown>, b: RawBuilder<unknown>): RawBuilder<number>;
  /** The smallest of values that are never null (`least` on PostgreSQL, scalar `min` on SQLite). */
  least(...values: RawBuilder<unknown>[]): RawBuilder<number>;
  /** A cast to a floating-point number (`double precision` on PostgreSQL, `real` on SQLite). */
  double(value: RawBuilder<unknown>): RawBuilder<number>;
  /**
   * A JSON array of `value` over a group. PostgreSQL orders it by `orderBy`; SQLite aggregates in
   * its scan order, the same for every aggregate of one group, so arrays read together line up.
   */
  jsonArrayAgg(value: RawBuilder<unknown>, orderBy: RawBuilder<unknown>): RawBuilder<unknown>;
  /**
   * Whether a `WITH` may hold inserts (data-modifying CTEs): PostgreSQL's can, so that writes to
   * two tables go in one statement (one round trip, no explicit transaction); SQLite's cannot.
   */
  readonly writesInWith: boolean;
  /** The physical row address, for batched deletes (`ctid` on PostgreSQL, `rowid` on SQLite). */
  readonly rowAddress: RawBuilder<unknown>;
  /** `FOR UPDATE` (of `of`) on PostgreSQL; SQLite has a single writer and needs no row locks. */
  forUpdate<DB, TB extends keyof DB, O>(
    query: SelectQueryBuilder<DB, TB, O>,
    of?: Parameters<SelectQueryBuilder<DB, TB, O>["forUpdate"]>[0],
  ): SelectQueryBuilder<DB, TB, O>;
  /** `FOR UPDATE SKIP LOCKED` on PostgreSQL (workers claiming rows pass each other's claims). */
  forUpdateSkipLocked<DB, TB extends keyof DB, O>(
    query: SelectQueryBuilder<DB, TB, O>,
  ): SelectQueryBuilder<DB, TB, O>;
  /** `FOR NO KEY UPDATE` on PostgreSQL (does not block inserts referencing the row). */
  forNoKeyUpdate<DB, TB extends keyof DB, O>(
    query: SelectQueryBuilder<DB, TB, O>,
  ): SelectQueryBuilder<DB, TB, O>;
  /**
   * Serializes the rest of the transaction `trx` with every other transaction taking the same
   * `key`: an advisory lock on PostgreSQL, released at commit; nothing on SQLite, whose single
   * writer already serializes write transactions.
   */
  lockKey(trx: Transaction<Database>, key: string): Promise<void>;
  /**
   * One transaction whose commit does not wait for the disk: for writes that can be redone from
   * what is already durable (the ingestion worker's claims and derived data, all recomputed from
   * a stored bundle). A power loss can undo the last of these transactions, never break the
   * database. Acknowledged writes (an upload's bundle received) never use it. PostgreSQL sets
   * `synchronous_commit = off` for it; SQLite holds the connection, lowers `synchronous` to
   * NORMAL around it and restores FULL after, so no other write commits under the relaxed setting
   * (inside `work` use only the transaction it is given).
   */
  relaxedTransaction<T>(
    db: Kysely<Database>,
    work: (trx: Transaction<Database>) => Promise<T>,
  ): Promise<T>;
}

const postgres: SqlDialect = {
  name: "postgres",
  true: sql`true`,
  false: sql`false`,
  greatest: (a, b) => sql<number>`greatest(${a}, ${b})`,
  least: (...values) => sql<number>`least(${sql.join(values)})`,
  double: (value) => sql<number>`cast(${value} as double precision)`,
  jsonArrayAgg: (value, orderBy) => sql`json_agg(${value} order by ${orderBy})`,
  writesInWith: true,
  rowAddress: sql.raw("ctid"),
  forUpdate: (query, of) => query.forUpdate(of),
  forUpdateSkipLocked: (query) => query.forUpdate().skipLocked(),
  forNoKeyUpdate: (query) => query.forNoKeyUpdate(),
  lockKey: async (trx, key) => {
    await sql`select pg_advisory_xact_lock(hashtext(${key}))`.execute(trx);
  },
  relaxedTransaction: (db, work) =>
    db.transaction().execute(async (trx) => {
      await sql`set local synchronous_commit = off`.execute(trx);
      return work(trx);
    }),
};

const sqlite: SqlDialect = {
  name: "sqlite",
  true: sql`1`,
  false: sql`0`,
  greatest: (a, b) => sql<number>`max(${a}, ${b})`,
  least: (...values) => sql<number>`min(${sql.join(values)})`,
  double: (value) => sql<number>`cast(${value} as real)`,
  jsonArrayAgg: (value) => sql`json_group_array(${value})`,
  writesInWith: false,
  rowAddress: sql.raw("rowid"),
  forUpdate: (query) => query,
  forUpdateSkipLocked: (query) => query,
  forNoKeyUpdate: (query) => query,
  lockKey: () => Promise.resolve(),
  relaxedTransaction: (db, work) =>
    db.connection().execute(async (connection) => {
      await sql`pragma synchronous = NORMAL`.execute(connection);
      try {
        return await connection.transaction().execute(work);
      } finally {
        await sql`pragma synchronous = FULL`.execute(connection);
      }
    }),
};

export function sqlDialect(name: DialectName): SqlDialect {
  return name === "postgres" ? postgres : sqlite;
}
