import type { Kysely, Transaction } from "kysely";
import type { DialectName } from "./connection.js";
import { sqlDialect } from "./dialect.js";
import type { Database } from "./schema.js";

/**
 * One transaction whose commit does not wait for the disk: for writes that can be redone from
 * what is already durable (the ingestion worker's claims and derived data, all recomputed from
 * a stored bundle). A power loss can undo the last of these transactions, never break the
 * database: SQLite keeps WAL consistency with `synchronous = NORMAL`, PostgreSQL with
 * `synchronous_commit = off`. Acknowledged writes (an upload's bundle received) never use it.
 *
 * On SQLite the connection is held throughout, so no other write commits under the relaxed
 * setting. Inside `work` use only the transaction it is given (the connection is taken).
 */
export function relaxedTransaction<T>(
  db: Kysely<Database>,
  dialect: DialectName,
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  return sqlDialect(dialect).relaxedTransaction(db, work);
}
