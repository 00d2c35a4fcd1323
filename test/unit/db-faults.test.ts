import BetterSqlite3 from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { isDatabaseUnavailable } from "../../src/lib/faults.js";

/** An error as node-postgres reports one from the server (SQLSTATE in `code`). */
function postgresError(code: string, message: string): Error {
  const error = new pg.DatabaseError(message, message.length, "error");
  error.code = code;
  return error;
}

const sqliteError = (code: string, message: string) => new BetterSqlite3.SqliteError(message, code);

describe("database faults a client may retry (503) and those it may not", () => {
  it.each([
    [
      "PostgreSQL shutting down (57P01)",
      postgresError("57P01", "terminating connection due to administrator command"),
    ],
    [
      "PostgreSQL starting up (57P03)",
      postgresError("57P03", "the database system is starting up"),
    ],
    ["a connection exception (08006)", postgresError("08006", "connection failure")],
    ["too many connections (53300)", postgresError("53300", "sorry, too many clients already")],
    ["a serialization failure (40001)", postgresError("40001", "could not serialize access")],
    ["a lost connection", new Error("Connection terminated unexpectedly")],
    [
      "a broken client",
      new Error("Client has encountered a connection error and is not queryable"),
    ],
    ["a connect timeout", new Error("timeout exceeded when trying to connect")],
    [
      "a refused connection",
      Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }),
    ],
    ["SQLite busy beyond busy_timeout", sqliteError("SQLITE_BUSY", "database is locked")],
    ["a SQLite disk I/O error", sqliteError("SQLITE_IOERR_WRITE", "disk I/O error")],
    ["a full disk under SQLite", sqliteError("SQLITE_FULL", "database or disk is full")],
    [
      "a wrapped cause",
      new Error("step failed", {
        cause: sqliteError("SQLITE_BUSY_SNAPSHOT", "database is locked"),
      }),
    ],
  ])("%s: unavailable", (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ["a unique violation (23505)", postgresError("23505", "duplicate key value")],
    ["a syntax error (42601)", postgresError("42601", "syntax error at or near")],
    ["a SQLite constraint", sqliteError("SQLITE_CONSTRAINT_UNIQUE", "UNIQUE constraint failed")],
    ["a SQLite logic error", sqliteError("SQLITE_ERROR", "no such table: x")],
    ["a plain error", new Error("boom")],
    ["a file-system error", Object.assign(new Error("EPERM"), { code: "EPERM" })],
    ["not an error", "Connection terminated"],
    ["nothing", undefined],
  ])("%s: not unavailable (500 if unexpected)", (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
