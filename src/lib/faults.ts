/**
 * Which database failures mean "the database is away for now" rather than "this code is wrong"
 * (lost connection, shutdown, lock timeout, I/O error). A request that meets one is answered 503
 * with `Retry-After`; background work tries again later without counting it against the work.
 */

/** Seconds a client is asked to wait before retrying after a 503. */
export const RETRY_AFTER_SECONDS = 2;

/**
 * PostgreSQL SQLSTATEs: connection exceptions (class 08), operator intervention (57P01
 * admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now), insufficient resources
 * (class 53: too many connections, out of memory, disk full), and the two transaction
 * rollbacks a retry resolves (40001 serialization_failure, 40P01 deadlock_detected).
 */
const PG_RETRYABLE_CLASSES = ["08", "53"];
const PG_RETRYABLE_CODES = new Set(["57P01", "57P02", "57P03", "40001", "40P01"]);

/** Socket errors of a connection to the database server. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/** node-postgres reports a lost connection with plain errors that carry no code. */
const PG_CONNECTION_MESSAGES = [
  "Connection terminated",
  "Client has encountered a connection error and is not queryable",
  "timeout exceeded when trying to connect",
  "Connection ended unexpectedly",
];

/**
 * SQLite result codes (better-sqlite3's `SqliteError.code`, extended codes included): a lock
 * held beyond `busy_timeout`, and I/O failures of the database file.
 */
const SQLITE_RETRYABLE = /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|FULL|PROTOCOL)(_|$)/;

function isRetryable(error: object): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") {
    if (SQLITE_RETRYABLE.test(code)) return true;
    if (NETWORK_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code)) {
      return PG_RETRYABLE_CODES.has(code) || PG_RETRYABLE_CLASSES.includes(code.slice(0, 2));
    }
  }
  const message = (error as { message?: unknown }).message;
  return (
    typeof message === "string" && PG_CONNECTION_MESSAGES.some((text) => message.startsWith(text))
  );
}

/** True when `error` (or an error it wraps) says that the database is unavailable for now. */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    if (isRetryable(current)) return true;
    if (current instanceof AggregateError && current.errors.some((e) => isDatabaseUnavailable(e))) {
      return true;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
