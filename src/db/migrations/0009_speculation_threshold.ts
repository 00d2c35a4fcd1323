import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * A queue's `speculationThresholdPercent` (Mainline's extension, not in Trunk's API): 0..100.
 * Existing queues get 0, which always fills `concurrency`, as Trunk does.
 */
export const speculationThreshold: DialectMigration = {
  async up(db) {
    await db.schema
      .alterTable("merge_queues")
      .addColumn("speculation_threshold_percent", "integer", (c) => c.notNull().defaultTo(sql`0`))
      .execute();
  },

  async down(db) {
    await db.schema
      .alterTable("merge_queues")
      .dropColumn("speculation_threshold_percent")
      .execute();
  },
};
