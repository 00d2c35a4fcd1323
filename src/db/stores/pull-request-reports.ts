import type { Kysely } from "kysely";
import type { Database } from "../schema.js";
import type {
  PullRequestHead,
  PullRequestReport,
  PullRequestReportRecords,
  PullRequestUploadMark,
} from "../../testhealth/pull-request-report-records.js";
import { leasedCursors } from "../cursors.js";

/**
 * Test results on pull requests (migration 0032): the cursor over processed uploads that name a
 * pull request, and per pull request the comment that shows them.
 */
export class PullRequestReportStore implements PullRequestReportRecords {
  constructor(private readonly db: Kysely<Database>) {}

  claimCursor(
    name: string,
    owner: string,
    now: number,
    leaseUntil: number,
    start: number,
  ): Promise<number | undefined> {
    return leasedCursors.claim(this.db, name, owner, now, leaseUntil, () => Promise.resolve(start));
  }

  advanceCursor(name: string, owner: string, position: number, now: number): Promise<boolean> {
    return leasedCursors.advance(this.db, name, owner, position, now);
  }

  releaseCursor(name: string, owner: string): Promise<void> {
    return leasedCursors.release(this.db, name, owner);
  }

  async processedAfter(after: number, limit: number): Promise<PullRequestUploadMark[]> {
    const rows = await this.db
      .selectFrom("uploads")
      .select(["repositoryId", "prNumber", "processedAt"])
      .where("prNumber", "is not", null)
      .where("processedAt", ">", after)
      .where("state", "=", "processed")
      .orderBy("processedAt")
      .limit(limit)
      .execute();
    return rows.flatMap((row) =>
      row.prNumber === null || row.processedAt === null
        ? []
        : [
            {
              repositoryId: row.repositoryId,
              prNumber: row.prNumber,
              processedAt: row.processedAt,
            },
          ],
    );
  }

  async head(repositoryId: string, prNumber: number): Promise<PullRequestHead | undefined> {
    const [latest, first] = await Promise.all([
      this.db
        .selectFrom("uploads")
        .select("commitSha")
        .where("repositoryId", "=", repositoryId)
        .where("prNumber", "=", prNumber)
        .where("state", "=", "processed")
        .where("commitSha", "is not", null)
        .orderBy("createdAt", "desc")
        .orderBy("key", "desc")
        .limit(1)
        .executeTakeFirst(),
      this.db
        .selectFrom("uploads")
        .select((eb) => eb.fn.min("createdAt").as("firstAt"))
        .where("repositoryId", "=", repositoryId)
        .where("prNumber", "=", prNumber)
        .executeTakeFirst(),
    ]);
    if (!latest?.commitSha) return undefined;
    return { sha: latest.commitSha, firstUploadAt: first?.firstAt ?? 0 };
  }

  async find(repositoryId: string, prNumber: number): Promise<PullRequestReport | undefined> {
    const row = await this.db
      .selectFrom("githubPrTestReports")
      .selectAll()
      .where("repositoryId", "=", repositoryId)
      .where("prNumber", "=", prNumber)
      .executeTakeFirst();
    return row ? { ...row, unsure: Boolean(row.unsure) } : undefined;
  }

  async save(report: PullRequestReport): Promise<void> {
    const values = {
      commentId: report.commentId,
      headSha: report.headSha,
      presented: report.presented,
      unsure: report.unsure ? 1 : 0,
      updatedAt: report.updatedAt,
    };
    await this.db
      .insertInto("githubPrTestReports")
      .values({ repositoryId: report.repositoryId, prNumber: report.prNumber, ...values })
      .onConflict((oc) => oc.columns(["repositoryId", "prNumber"]).doUpdateSet(values))
      .execute();
  }
}
