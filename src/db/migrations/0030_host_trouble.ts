import type { DialectMigration } from "./types.js";

/**
 * A queue's `host_trouble` (JSON of `HostTrouble`): its git host failed the driver's last step
 * (no provider for it on this server, or errors, or no answer), since when, and when the driver
 * tries again. Written by the lease holder, read by every process (getQueue, the dashboard, and
 * the API refusing commands at once instead of storing them). Null while the host answers.
 */
export const hostTrouble: DialectMigration = {
  async up(db) {
    await db.schema.alterTable("mq_runtime").addColumn("host_trouble", "text").execute();
  },

  async down(db) {
    await db.schema.alterTable("mq_runtime").dropColumn("host_trouble").execute();
  },
};
