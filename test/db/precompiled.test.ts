import type { Kysely } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { QueryTemplate, markers, precompile } from "../../src/db/precompiled.js";
import type { Database } from "../../src/db/schema.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";

let database: TestDatabase;
let db: Kysely<Database>;
beforeEach(async () => {
  database = await createTestDatabase();
  db = database.handle.db;
  await db
    .insertInto("organizations")
    .values([
      { id: "o1", slug: "acme", createdAt: 1 },
      { id: "o2", slug: "globex", createdAt: 2 },
    ])
    .execute();
});
afterEach(async () => {
  await database.cleanup();
});

describe(`precompiled queries on ${TEST_DIALECT}`, () => {
  it("runs with new parameters each time and shapes rows like the builder", async () => {
    const bySlug = precompile(
      db,
      (slug: string) =>
        db
          .selectFrom("organizations")
          .select(["id", "createdAt"])
          .where("slug", "=", slug)
          .compile(),
      ["$slug"],
    );
    expect(await bySlug("acme")).toEqual([{ id: "o1", createdAt: 1 }]);
    expect(await bySlug("globex")).toEqual([{ id: "o2", createdAt: 2 }]);
    expect(await bySlug("nobody")).toEqual([]);
  });

  it("refuses a query whose parameters are not its arguments in order", () => {
    const swapped = (a: string, b: string) =>
      db
        .selectFrom("organizations")
        .select("id")
        .where("slug", "=", b)
        .where("id", "=", a)
        .compile();
    expect(() => precompile(db, swapped, ["$a", "$b"])).toThrow(/in order/);
    const twice = (a: string) =>
      db
        .selectFrom("organizations")
        .select("id")
        .where("slug", "=", a)
        .where("id", "=", a)
        .compile();
    expect(() => precompile(db, twice, ["$a"])).toThrow(/in order/);
    const constant = (a: string) =>
      db
        .selectFrom("organizations")
        .select("id")
        .where("slug", "=", a)
        .where("createdAt", ">", 0)
        .compile();
    expect(() => precompile(db, constant, ["$a"])).toThrow(/in order/);
  });

  it("runs a template with its arguments in their places, constants kept, a marker used twice", async () => {
    const [slug, after] = markers(2) as [string, string];
    const template = new QueryTemplate(
      db
        .selectFrom("organizations")
        .select(["id", "createdAt"])
        .where((eb) =>
          eb.or([
            eb.and([eb("slug", "=", slug), eb("createdAt", ">", after as unknown as number)]),
            eb.and([eb("id", "=", "o1"), eb("createdAt", ">", after as unknown as number)]),
          ]),
        )
        .orderBy("id")
        .compile(),
      [slug, after],
    );
    expect(await template.run(db, ["globex", 0])).toEqual([
      { id: "o1", createdAt: 1 },
      { id: "o2", createdAt: 2 },
    ]);
    expect(await template.run(db, ["globex", 1])).toEqual([{ id: "o2", createdAt: 2 }]);
    expect(await template.run(db, ["nobody", 1])).toEqual([]);
    await db.transaction().execute(async (trx) => {
      expect(await template.run(trx, ["acme", 0])).toEqual([{ id: "o1", createdAt: 1 }]);
    });
    const [unused] = markers(1) as [string];
    const without = db.selectFrom("organizations").select("id").where("slug", "=", "acme");
    expect(() => new QueryTemplate(without.compile(), [unused])).toThrow(/missing/);
  });
});
