import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * A queue's `issued_below`: every id the planner may have handed out (to a test run, an entry, a
 * bisection group) is below it. A step writes it before it acts on the ids its plan issued (a test
 * branch, a CI run, a merge), so that a step whose commit then fails never hands the same id to
 * another run. Existing queues get 0: their snapshot's counter is all there is.
 */
export const issuedIds: DialectMigration = {
  async up(db) {
    await db.schema
      .alterTable("mq_runtime")
      .addColumn("issued_below", "integer", (c) => c.notNull().defaultTo(sql`0`))
      .execute();
  },

  async down(db) {
    await db.schema.alterTable("mq_runtime").dropColumn("issued_below").execute();
  },
};
