import type { Kysely } from "kysely";
import type { Database } from "./schema.js";

/**
 * A worker's position in a durable log (`presence_cursors`), under a lease: one worker at a time
 * follows it, another takes over once the lease has run out. Shared by the workers that follow
 * the queues' transitions and the processed uploads.
 */
export const leasedCursors = {
  /**
   * Takes or renews the lease for `owner` and answers the position; undefined when another owner
   * holds it. A cursor that does not exist yet starts at `initial()`.
   */
  async claim(
    db: Kysely<Database>,
    name: string,
    owner: string,
    now: number,
    leaseUntil: number,
    initial: () => Promise<number>,
  ): Promise<number | undefined> {
    const exists = await db
      .selectFrom("presenceCursors")
      .select("name")
      .where("name", "=", name)
      .executeTakeFirst();
    if (!exists) {
      await db
        .insertInto("presenceCursors")
        .values({
          name,
          lastId: await initial(),
          leaseOwner: null,
          leaseUntil: null,
          updatedAt: now,
        })
        .onConflict((oc) => oc.column("name").doNothing())
        .execute();
    }
    const claimed = await db
      .updateTable("presenceCursors")
      .set({ leaseOwner: owner, leaseUntil })
      .where("name", "=", name)
      .where((eb) =>
        eb.or([
          eb("leaseOwner", "is", null),
          eb("leaseOwner", "=", owner),
          eb("leaseUntil", "<", now),
        ]),
      )
      .returning("lastId")
      .executeTakeFirst();
    return claimed?.lastId;
  },

  /** Moves the cursor, only while `owner` holds its lease; false when it does not any more. */
  async advance(
    db: Kysely<Database>,
    name: string,
    owner: string,
    lastId: number,
    now: number,
  ): Promise<boolean> {
    const result = await db
      .updateTable("presenceCursors")
      .set({ lastId, updatedAt: now })
      .where("name", "=", name)
      .where("leaseOwner", "=", owner)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  },

  /** Lets the lease go (a stopping worker), so that another process takes over at once. */
  async release(db: Kysely<Database>, name: string, owner: string): Promise<void> {
    await db
      .updateTable("presenceCursors")
      .set({ leaseOwner: null, leaseUntil: null })
      .where("name", "=", name)
      .where("leaseOwner", "=", owner)
      .execute();
  },
};
