import type { Kysely } from "kysely";
import type { Database } from "../schema.js";
import { leasedCursors } from "../cursors.js";
import type {
  PresenceRecord,
  PresenceRecords,
  TransitionMark,
} from "../../mergequeue/pull-request-presence-records.js";

/**
 * What the git hosts' providers show on pull and merge requests (migrations 0023, 0037): the
 * cursor over `mq_transitions` under a lease (a compare-and-set on its row), and what was last
 * shown per pull request (`pr_presence`).
 */
export class PrPresenceStore implements PresenceRecords {
  constructor(private readonly db: Kysely<Database>) {}

  claimCursor(
    name: string,
    owner: string,
    now: number,
    leaseUntil: number,
  ): Promise<number | undefined> {
    // A new cursor starts after what is stored now: history is not presented again.
    return leasedCursors.claim(this.db, name, owner, now, leaseUntil, async () => {
      const latest = await this.db
        .selectFrom("mqTransitions")
        .select((eb) => eb.fn.max("id").as("maxId"))
        .executeTakeFirst();
      return latest?.maxId ?? 0;
    });
  }

  advanceCursor(name: string, owner: string, lastId: number, now: number): Promise<boolean> {
    return leasedCursors.advance(this.db, name, owner, lastId, now);
  }

  releaseCursor(name: string, owner: string): Promise<void> {
    return leasedCursors.release(this.db, name, owner);
  }

  async transitionsAfter(afterId: number, limit: number): Promise<TransitionMark[]> {
    const rows = await this.db
      .selectFrom("mqTransitions as t")
      .innerJoin("mqEntries as e", "e.id", "t.entryId")
      .select(["t.id", "t.queueId", "e.prNumber", "t.at"])
      .where("t.id", ">", afterId)
      .orderBy("t.id")
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      id: row.id,
      queueId: row.queueId,
      prNumber: row.prNumber,
      at: row.at,
    }));
  }

  async find(queueId: string, prNumber: number): Promise<PresenceRecord | undefined> {
    return this.db
      .selectFrom("prPresence")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("prNumber", "=", prNumber)
      .executeTakeFirst();
  }

  async save(record: PresenceRecord): Promise<void> {
    await this.db
      .insertInto("prPresence")
      .values(record)
      .onConflict((oc) =>
        oc.columns(["queueId", "prNumber"]).doUpdateSet({
          commentId: record.commentId,
          checkRunId: record.checkRunId,
          checkSha: record.checkSha,
          stateLabel: record.stateLabel,
          presented: record.presented,
          updatedAt: record.updatedAt,
        }),
      )
      .execute();
  }
}
