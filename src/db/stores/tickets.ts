import type { Insertable, Kysely, Selectable } from "kysely";
import type {
  BeginIntent,
  ConnectionHealth,
  CreatedTicketRecord,
  RuleRepository,
  StaleTicket,
  TicketConnectionChange,
  TicketConnectionRecord,
  TicketConnectionRecords,
  TicketIntentRecord,
  TicketLinkRecords,
} from "../../notifications/tickets/records.js";
import type { TicketProviderKind } from "../../notifications/tickets/types.js";
import type { LinkedTicketRecords } from "../../testhealth/ports.js";
import type { TestCaseRow } from "../../testhealth/records.js";
import type { DialectName } from "../connection.js";
import { sqlDialect } from "../dialect.js";
import { lookupsChanged } from "../lookup-cache.js";
import type {
  Database,
  TestTicketsTable,
  TicketConnectionsTable,
  TicketIntentsTable,
} from "../schema.js";
import { TEST_SETTINGS_KIND, ticketRuleOf } from "./test-settings.js";
import { writeTicketLink } from "./test-details.js";

/**
 * Tickets (migration 0034): an organization's connections (every read and write scoped by the
 * organization, except the background loop's own by id), the tickets created through them, and
 * the intents of creates under way, begun and ended in transactions that read the test's
 * ticket under a row lock, so that two processes never create two tickets for one test.
 */
export class TicketStore
  implements TicketConnectionRecords, TicketLinkRecords, LinkedTicketRecords
{
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  // ---- connections ----------------------------------------------------------------------------

  async createConnection(record: TicketConnectionRecord): Promise<void> {
    await this.db.insertInto("ticketConnections").values(connectionRow(record)).execute();
  }

  async listConnections(organizationId: string): Promise<TicketConnectionRecord[]> {
    const rows = await this.db
      .selectFrom("ticketConnections")
      .selectAll()
      .where("organizationId", "=", organizationId)
      .orderBy("createdAt")
      .orderBy("id")
      .execute();
    return rows.map(toConnection);
  }

  async findConnection(
    organizationId: string,
    id: string,
  ): Promise<TicketConnectionRecord | undefined> {
    const row = await this.db
      .selectFrom("ticketConnections")
      .selectAll()
      .where("organizationId", "=", organizationId)
      .where("id", "=", id)
      .executeTakeFirst();
    return row && toConnection(row);
  }

  async updateConnection(
    organizationId: string,
    id: string,
    change: TicketConnectionChange,
    now: number,
  ): Promise<TicketConnectionRecord | undefined> {
    const { labels, ...rest } = change;
    const row = await this.db
      .updateTable("ticketConnections")
      .set({
        ...rest,
        ...(labels === undefined ? {} : { labels: JSON.stringify(labels) }),
        updatedAt: now,
      })
      .where("organizationId", "=", organizationId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    return row && toConnection(row);
  }

  async deleteConnection(organizationId: string, id: string): Promise<boolean> {
    const deleted = await this.db.transaction().execute(async (trx) => {
      const result = await trx
        .deleteFrom("ticketConnections")
        .where("organizationId", "=", organizationId)
        .where("id", "=", id)
        .executeTakeFirst();
      if (result.numDeletedRows === 0n) return false;
      await trx
        .updateTable("repositoryTestSettings")
        .set({ ticketConnectionId: null })
        .where("ticketConnectionId", "=", id)
        .execute();
      return true;
    });
    // Settings are cached: those that named the connection name none now.
    if (deleted) lookupsChanged(this.db, [TEST_SETTINGS_KIND]);
    return deleted;
  }

  async recordHealth(id: string, health: Partial<ConnectionHealth>): Promise<void> {
    await this.db.updateTable("ticketConnections").set(health).where("id", "=", id).execute();
  }

  // ---- created tickets and intents ------------------------------------------------------------

  async createdTicket(testKey: number): Promise<CreatedTicketRecord | undefined> {
    const row = await this.db
      .selectFrom("testTickets as k")
      .innerJoin("testCases as c", "c.key", "k.testKey")
      .selectAll("k")
      .where("k.testKey", "=", testKey)
      .whereRef("c.ticket", "=", "k.url")
      .executeTakeFirst();
    return row && toCreated(row);
  }

  async beginIntent(
    intent: TicketIntentRecord,
    expectedTicket: string | null,
    now: number,
  ): Promise<BeginIntent> {
    return this.db.transaction().execute(async (trx): Promise<BeginIntent> => {
      const test = await trx
        .selectFrom("testCases")
        .select("ticket")
        .where("key", "=", intent.testKey)
        .$call((qb) => sqlDialect(this.dialect).forNoKeyUpdate(qb))
        .executeTakeFirst();
      if (!test || test.ticket !== expectedTicket) return { outcome: "changed" };
      const held = await trx
        .selectFrom("ticketIntents")
        .selectAll()
        .where("testKey", "=", intent.testKey)
        .executeTakeFirst();
      if (held) {
        if (held.leaseUntil > now) return { outcome: "busy" };
        const resumed = await trx
          .updateTable("ticketIntents")
          .set({ leaseUntil: intent.leaseUntil, actor: intent.actor })
          .where("testKey", "=", intent.testKey)
          .returningAll()
          .executeTakeFirstOrThrow();
        return { outcome: "resumed", intent: toIntent(resumed) };
      }
      await trx.insertInto("ticketIntents").values(intent).execute();
      return { outcome: "begun", intent };
    });
  }

  async completeIntent(
    created: CreatedTicketRecord,
    history: { words: string; actor: string; at: number },
  ): Promise<TestCaseRow | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const row = await writeTicketLink(
        trx,
        this.dialect,
        created.testKey,
        { ticket: created.url, actor: history.actor, at: history.at },
        () => history.words,
      );
      if (!row) return undefined;
      const values = createdRow(created);
      await trx
        .insertInto("testTickets")
        .values(values)
        .onConflict((oc) => oc.column("testKey").doUpdateSet(values))
        .execute();
      await trx.deleteFrom("ticketIntents").where("testKey", "=", created.testKey).execute();
      return row;
    });
  }

  async releaseIntent(testKey: number, lastError: string, attempts: number): Promise<void> {
    await this.db
      .updateTable("ticketIntents")
      .set({ leaseUntil: 0, lastError, attempts })
      .where("testKey", "=", testKey)
      .execute();
  }

  async abandonIntent(testKey: number): Promise<void> {
    await this.db.deleteFrom("ticketIntents").where("testKey", "=", testKey).execute();
  }

  async expiredIntents(now: number, limit: number): Promise<TicketIntentRecord[]> {
    const rows = await this.db
      .selectFrom("ticketIntents")
      .selectAll()
      .where("leaseUntil", "<=", now)
      .orderBy("leaseUntil")
      .orderBy("testKey")
      .limit(limit)
      .execute();
    return rows.map(toIntent);
  }

  // ---- the loop's reads -----------------------------------------------------------------------

  async ruleRepositories(): Promise<RuleRepository[]> {
    const rows = await this.db
      .selectFrom("repositoryTestSettings as s")
      .innerJoin("repositories as r", "r.id", "s.repositoryId")
      .select(["s.repositoryId", "r.organizationId", "s.ticketConnectionId", "s.ticketRule"])
      .where("s.ticketConnectionId", "is not", null)
      .where("s.ticketRule", "is not", null)
      .orderBy("s.repositoryId")
      .execute();
    return rows.flatMap((row) => {
      const rule = ticketRuleOf(row.ticketRule);
      if (row.ticketConnectionId === null || (!rule.flaky && !rule.broken)) return [];
      return [
        {
          repositoryId: row.repositoryId,
          organizationId: row.organizationId,
          connectionId: row.ticketConnectionId,
          rule,
        },
      ];
    });
  }

  async ruleCandidates(
    repositoryId: string,
    statuses: readonly string[],
    changedBefore: number,
    page: { offset: number; limit: number },
  ): Promise<TestCaseRow[]> {
    if (statuses.length === 0) return [];
    return this.db
      .selectFrom("testCases as c")
      .selectAll("c")
      .where("c.repositoryId", "=", repositoryId)
      .where("c.status", "in", [...statuses])
      .where("c.statusChangedAt", "<=", changedBefore)
      .where("c.ticket", "is", null)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom("ticketIntents as i")
              .select("i.testKey")
              .whereRef("i.testKey", "=", "c.key"),
          ),
        ),
      )
      .orderBy("c.statusChangedAt")
      .orderBy("c.key")
      .limit(page.limit)
      .offset(page.offset)
      .execute();
  }

  async staleTickets(before: number, limit: number): Promise<StaleTicket[]> {
    const rows = await this.db
      .selectFrom("testTickets as k")
      .innerJoin("testCases as c", "c.key", "k.testKey")
      .innerJoin("ticketConnections as t", "t.id", "k.connectionId")
      .select([
        "k.testKey",
        "t.organizationId",
        "t.id as connectionId",
        "k.url",
        "k.key",
        "k.externalId",
      ])
      .whereRef("c.ticket", "=", "k.url")
      .where((eb) =>
        eb.or([eb("k.stateCheckedAt", "is", null), eb("k.stateCheckedAt", "<", before)]),
      )
      .orderBy("k.stateCheckedAt")
      .orderBy("k.testKey")
      .limit(limit)
      .execute();
    return rows;
  }

  async recordState(
    testKey: number,
    url: string,
    state: { name: string; open: boolean },
    at: number,
  ): Promise<void> {
    await this.db
      .updateTable("testTickets")
      .set({ stateName: state.name, stateOpen: state.open ? 1 : 0, stateCheckedAt: at })
      .where("testKey", "=", testKey)
      .where("url", "=", url)
      .execute();
  }
}

function connectionRow(record: TicketConnectionRecord): Insertable<TicketConnectionsTable> {
  return { ...record, labels: JSON.stringify(record.labels) };
}

function toConnection(row: Selectable<TicketConnectionsTable>): TicketConnectionRecord {
  return {
    ...row,
    kind: row.kind as TicketProviderKind,
    labels: JSON.parse(row.labels) as string[],
  };
}

function createdRow(record: CreatedTicketRecord): Insertable<TestTicketsTable> {
  return { ...record, stateOpen: record.stateOpen === null ? null : record.stateOpen ? 1 : 0 };
}

function toCreated(row: Selectable<TestTicketsTable>): CreatedTicketRecord {
  return {
    ...row,
    stateOpen: row.stateOpen === null ? null : Boolean(row.stateOpen),
  };
}

function toIntent(row: Selectable<TicketIntentsTable>): TicketIntentRecord {
  return {
    ...row,
    source: row.source === "rule" ? "rule" : "manual",
  };
}
