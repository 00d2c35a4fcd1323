import { sql, type Kysely, type Transaction } from "kysely";
import type { RepositoryTestSettings } from "../../testhealth/settings.js";
import type { DialectName } from "../connection.js";
import { sqlDialect } from "../dialect.js";
import { compileTemplate, type QueryTemplate } from "../precompiled.js";
import type { Database } from "../schema.js";
import { TEST_SETTINGS_KIND, TestSettingsStore } from "./test-settings.js";
import { lookupsChanged } from "../lookup-cache.js";
import { emitTestEvents } from "../outbound-emission.js";
import type {
  HistoryRecord,
  OverrideChange,
  RunRecord,
  StoredTestSettings,
  TestCaseRow,
  TicketChange,
} from "../../testhealth/records.js";
import type { TestDetailRecords } from "../../testhealth/ports.js";
import { type Repository, repositoryLookupKey } from "../../organizations/repositories.js";

const REPOSITORY_COLUMNS = ["id", "organizationId", "host", "owner", "name", "createdAt"] as const;

/**
 * A test's page and its writes: run history (processed uploads only, newest first, in a total
 * order so that offset pages never skip or repeat a row), status history, and the two per-test
 * writes (quarantine override, ticket), each in one transaction with its history row.
 */
export class TestDetailsStore implements TestDetailRecords {
  /** `statusHistory`, on every get-test-details: compiled once. */
  private readonly history: QueryTemplate<HistoryRecord>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {
    this.history = compileTemplate(2, (args) =>
      db
        .selectFrom("testStatusHistory")
        .select(["at", "status", "reason", "kind", "actor"])
        .where("testKey", "=", args[0] as unknown as number)
        .orderBy("at", "desc")
        .orderBy("kind", "asc")
        .orderBy("status", "asc")
        .orderBy("reason", "asc")
        .limit(args[1] as unknown as number)
        .compile(),
    );
  }

  /** Runs of processed uploads, newest first; `total` counts them all. */
  async runsPage(
    testKey: number,
    offset: number,
    limit: number,
  ): Promise<{ total: number; runs: RunRecord[] }> {
    const base = this.db
      .selectFrom("testRuns as r")
      .innerJoin("uploads as u", "u.key", "r.uploadKey")
      .where("r.testKey", "=", testKey)
      .where("u.state", "=", "processed");
    const [count, rows] = await Promise.all([
      base.select((eb) => eb.fn.countAll<number | string>().as("n")).executeTakeFirst(),
      base
        .select([
          "r.at",
          "r.status",
          "r.attempt",
          "u.commitSha",
          "u.branch",
          "u.prNumber",
          "r.durationMs",
          "u.id as uploadId",
          "r.failureSummary",
          "r.failureText",
          "u.infrastructureFailure",
        ])
        // A total order: runs of one upload share its time; the columns after the upload tell
        // apart the attempts of one test inside it (rows equal on all of them are identical).
        .orderBy("r.at", "desc")
        .orderBy("r.uploadKey", "desc")
        .orderBy("r.fileIndex", "asc")
        .orderBy("r.attempt", "asc")
        .orderBy("r.status", "asc")
        .orderBy(sql`coalesce(r.duration_ms, -1)`, "asc")
        .orderBy(sql`coalesce(r.failure_signature, '')`, "asc")
        .orderBy(sql`coalesce(r.failure_summary, '')`, "asc")
        .orderBy(sql`coalesce(r.failure_text, '')`, "asc")
        .limit(limit)
        .offset(offset)
        .execute(),
    ]);
    return {
      total: Number(count?.n ?? 0),
      runs: rows.map(({ infrastructureFailure, commitSha, branch, ...run }) => ({
        ...run,
        commitSha: commitSha ?? "",
        branch: branch ?? "",
        excluded: Boolean(infrastructureFailure),
      })),
    };
  }

  /** Status changes, overrides and ticket links, newest first. */
  statusHistory(testKey: number, limit: number): Promise<HistoryRecord[]> {
    return this.history.run(this.db, [testKey, limit]);
  }

  /** Sets a test's quarantine override (with who, why, when) and records it in its history. */
  async setOverride(
    testKey: number,
    change: OverrideChange,
    description: string,
  ): Promise<TestCaseRow | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const before = await trx
        .selectFrom("testCases")
        .select("quarantineOverride")
        .where("key", "=", testKey)
        .$call((qb) => sqlDialect(this.dialect).forNoKeyUpdate(qb))
        .executeTakeFirst();
      const row = await trx
        .updateTable("testCases")
        .set({
          quarantineOverride: change.override,
          overrideActor: change.actor,
          overrideReason: change.reason,
          overrideAt: change.at,
        })
        .where("key", "=", testKey)
        .returningAll()
        .executeTakeFirst();
      if (!row) return undefined;
      await trx
        .insertInto("testStatusHistory")
        .values({
          testKey,
          at: change.at,
          status: row.status,
          reason: description,
          kind: "override",
          actor: change.actor,
        })
        .execute();
      await emitTestEvents(
        trx,
        [
          {
            kind: "test_override",
            testKey,
            previous: before?.quarantineOverride ?? "UNSPECIFIED",
            updated: change.override,
            actor: change.actor,
            reason: change.reason,
            at: change.at,
          },
        ],
        change.at,
      );
      return row;
    });
  }

  /**
   * Links (or with null, unlinks) a ticket and records it in the test's history. Linking the
   * ticket already linked (or unlinking when none is) changes and records nothing.
   */
  async setTicket(
    testKey: number,
    change: TicketChange,
    describe: (previous: string | null) => string,
  ): Promise<TestCaseRow | undefined> {
    return this.db
      .transaction()
      .execute((trx) => writeTicketLink(trx, this.dialect, testKey, change, describe));
  }

  /**
   * Read, change, write a repository's settings in one transaction, serialized per repository
   * (an advisory lock on PostgreSQL; SQLite has one writer), so that two partial updates of
   * different fields never lose one another.
   */
  async modifySettings(
    repositoryId: string,
    now: number,
    change: (current: StoredTestSettings) => RepositoryTestSettings,
  ): Promise<StoredTestSettings> {
    const updated = await this.db.transaction().execute(async (trx) => {
      await sqlDialect(this.dialect).lockKey(trx, `test-settings:${repositoryId}`);
      const store = new TestSettingsStore(trx);
      const current = await store.get(repositoryId);
      const next = change(current);
      await store.put(repositoryId, next, now);
      return { ...current, ...next, updatedAt: now };
    });
    // Committed: what this process cached is stale (other processes hear it from the database).
    lookupsChanged(this.db, [TEST_SETTINGS_KIND]);
    return updated;
  }

  /**
   * The test `testId` of the organization's repository named `owner/name` (any host; the test id
   * tells the hosts apart, the first host in order wins if ever two hold it), or of exactly
   * `host/owner/name` when `host` is given. Matching is case-insensitive, as repositories are.
   */
  async findTestByRepositoryName(
    organizationId: string,
    testId: string,
    repo: { owner: string; name: string; host?: string | undefined },
  ): Promise<{ repository: Repository; test: TestCaseRow } | undefined> {
    const owner = repo.owner.toLowerCase();
    const name = repo.name.toLowerCase();
    const repositories = await this.db
      .selectFrom("repositories")
      .select(REPOSITORY_COLUMNS)
      .where("organizationId", "=", organizationId)
      .$if(repo.host !== undefined, (qb) =>
        qb.where("lookupKey", "=", repositoryLookupKey({ host: repo.host ?? "", owner, name })),
      )
      .orderBy("host")
      .orderBy("id")
      .execute();
    for (const repository of repositories) {
      if (repository.owner.toLowerCase() !== owner || repository.name.toLowerCase() !== name) {
        continue;
      }
      const test = await this.db
        .selectFrom("testCases")
        .selectAll()
        .where("repositoryId", "=", repository.id)
        .where("id", "=", testId)
        .executeTakeFirst();
      if (test) return { repository, test };
    }
    return undefined;
  }
}

/**
 * Inside the caller's transaction: links (or with null, unlinks) a ticket and records it in the
 * test's history. Linking the ticket already linked (or unlinking when none is) changes and
 * records nothing. Undefined when there is no such test.
 */
export async function writeTicketLink(
  trx: Transaction<Database>,
  dialect: DialectName,
  testKey: number,
  change: TicketChange,
  describe: (previous: string | null) => string,
): Promise<TestCaseRow | undefined> {
  const current = await trx
    .selectFrom("testCases")
    .selectAll()
    .where("key", "=", testKey)
    .$call((qb) => sqlDialect(dialect).forNoKeyUpdate(qb))
    .executeTakeFirst();
  if (!current) return undefined;
  if (current.ticket === change.ticket) return current;
  const row = await trx
    .updateTable("testCases")
    .set({ ticket: change.ticket, ticketLinkedAt: change.ticket === null ? null : change.at })
    .where("key", "=", testKey)
    .returningAll()
    .executeTakeFirstOrThrow();
  await trx
    .insertInto("testStatusHistory")
    .values({
      testKey,
      at: change.at,
      status: row.status,
      reason: describe(current.ticket),
      kind: "ticket",
      actor: change.actor,
    })
    .execute();
  return row;
}
