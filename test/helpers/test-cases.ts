import type { Kysely } from "kysely";
import type { Database } from "../../src/db/schema.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";

/** Organization `o1` (slug acme) and its repository h/o/n; answers the repository's id. */
export async function seedRepository(db: Kysely<Database>): Promise<string> {
  await new OrganizationStore(db).ensure({ id: "o1", slug: "acme", createdAt: 1 });
  return (await new RepositoryStore(db).ensure("o1", { host: "h", owner: "o", name: "n" }, 1)).id;
}

/** A healthy test named after its id, first seen at `at`; `values` override any column. */
export async function insertTestCase(
  db: Kysely<Database>,
  repositoryId: string,
  id: string,
  at: number,
  values: Record<string, unknown> = {},
): Promise<number> {
  const row = await db
    .insertInto("testCases")
    .values({
      repositoryId,
      id,
      name: id,
      classname: null,
      parent: null,
      file: null,
      variant: "",
      status: "healthy",
      statusReason: "",
      statusChangedAt: at,
      monitorStates: "{}",
      monitorsActive: 0,
      quarantineOverride: "UNSPECIFIED",
      firstSeenAt: at,
      ...values,
    })
    .returning("key")
    .executeTakeFirstOrThrow();
  return row.key;
}
