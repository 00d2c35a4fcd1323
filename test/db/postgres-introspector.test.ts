/**
 * The tables Kysely sees on PostgreSQL (its migrator asks before it takes its lock): only the
 * current schema's, read without looking anything up again by name, so that another schema's
 * schema changes at the same moment cannot make a migration of ours fail. Kysely's own
 * introspector, run beside the same changes, fails: the test below shows it, so that it means
 * something.
 */
import { Kysely, PostgresDialect, PostgresIntrospector, sql } from "kysely";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { CurrentSchemaIntrospector } from "../../src/db/postgres-introspector.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";

let database: TestDatabase;
beforeEach(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await database.cleanup();
});

/** Another schema of the same database, whose table is renamed and dropped over and over. */
async function churnElsewhere(until: () => boolean): Promise<number> {
  const admin = new pg.Client({ connectionString: inject("testDatabase").postgresUrl ?? "" });
  await admin.connect();
  const schema = `churn_${String(process.pid)}_${String(Date.now())}`;
  let rounds = 0;
  try {
    await admin.query(`create schema ${schema}`);
    while (!until()) {
      await admin.query(`create table ${schema}.t (id serial primary key, payload text)`);
      await admin.query(`alter table ${schema}.t rename column payload to body`);
      await admin.query(`drop table ${schema}.t`);
      rounds += 1;
    }
  } finally {
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.end();
  }
  return rounds;
}

/**
 * Reads the tables up to `times` times while another schema changes (stopping at the first error
 * when asked: Kysely's own read scans every schema of the run's database, slow when the suite has
 * made many); the errors met.
 */
async function introspectUnderChurn(
  read: () => Promise<unknown>,
  times: number,
  { stopAtError = false }: { stopAtError?: boolean } = {},
): Promise<string[]> {
  let done = false;
  const errors: string[] = [];
  const churn = churnElsewhere(() => done);
  try {
    for (let i = 0; i < times && !(stopAtError && errors.length > 0); i++) {
      await read().catch((error: unknown) => errors.push((error as Error).message));
    }
  } finally {
    done = true;
    expect(await churn).toBeGreaterThan(0);
  }
  return errors;
}

describe(`the tables Kysely sees on ${TEST_DIALECT}`, () => {
  it("are ours (the current schema's on PostgreSQL), with their columns, Kysely's own tables only when asked", async () => {
    const db = database.handle.db;
    const tables = await db.introspection.getTables();
    const names = tables.map((t) => t.name);
    expect(names).toContain("organizations");
    expect(names).toContain("merge_queues");
    expect(names).not.toContain("kysely_migration");
    const organizations = tables.find((t) => t.name === "organizations");
    const slug = organizations?.columns.find((c) => c.name === "slug");
    expect([slug?.dataType.toLowerCase(), slug?.isNullable]).toEqual(["text", false]);
    const withKysely = await db.introspection.getTables({ withInternalKyselyTables: true });
    expect(withKysely.map((t) => t.name)).toContain("kysely_migration");
    if (TEST_DIALECT === "sqlite") return;

    const { schema } = database;
    expect(new Set(tables.map((t) => t.schema))).toEqual(new Set([schema]));

    // An auto-incrementing column, by identity and by serial.
    await sql`create table intro_a (id integer generated always as identity, n integer)`.execute(
      db,
    );
    await sql`create table intro_b (id serial, n integer default 3)`.execute(db);
    const created = (await db.introspection.getTables()).filter((t) => t.name.startsWith("intro_"));
    expect(
      created.map((t) => [
        t.name,
        t.columns.map((c) => [c.name, c.isAutoIncrementing, c.hasDefaultValue]),
      ]),
    ).toEqual([
      [
        "intro_a",
        [
          ["id", true, false],
          ["n", false, false],
        ],
      ],
      [
        "intro_b",
        [
          ["id", true, true],
          ["n", false, true],
        ],
      ],
    ]);
  });

  // PostgreSQL only: SQLite has no schemas to share a database with.
  if (TEST_DIALECT !== "postgres") return;

  it("are read without failing while another schema's tables change; Kysely's own read fails", async () => {
    const { postgresUrl } = inject("testDatabase");
    const schema = database.schema ?? "";
    const pool = new pg.Pool({
      connectionString: postgresUrl ?? "",
      options: `-c search_path=${schema}`,
      max: 1,
    });
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    try {
      const ours = new CurrentSchemaIntrospector(db);
      expect(await introspectUnderChurn(() => ours.getTables(), 300)).toEqual([]);
      const kyselys = new PostgresIntrospector(db);
      const errors = await introspectUnderChurn(() => kyselys.getTables(), 300, {
        stopAtError: true,
      });
      expect(errors.length).toBeGreaterThan(0);
      expect(errors[0]).toMatch(/does not exist/);
    } finally {
      await db.destroy();
    }
    // Kysely's read scans every schema of the run's database: slow once the suite made many.
  }, 120_000);
});
