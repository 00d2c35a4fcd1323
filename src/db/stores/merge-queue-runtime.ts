import {
  sql,
  type ExpressionBuilder,
  type Kysely,
  type Selectable,
  type Transaction,
} from "kysely";
import {
  compileTemplate,
  precompile,
  type PrecompiledQuery,
  type QueryTemplate,
} from "../precompiled.js";
import type { PrState, RunKind, RunStatus } from "../../mergequeue/model.js";
import type {
  CommandRecord,
  CommandResult,
  DriverCommit,
  DriverState,
  EntryListQuery,
  EntryRecord,
  EntrySummary,
  HostTrouble,
  Lease,
  RunRecord,
  RunTiming,
  QueueDashboardReads,
  RuntimeRecords,
  TransitionRecord,
} from "../../mergequeue/records.js";
import type { DialectName } from "../connection.js";
import { sqlDialect } from "../dialect.js";
import { emitQueueEvents, emitQueueStateEvent } from "../outbound-emission.js";
import {
  type SummaryRow,
  entryRow,
  runRow,
  toCommand,
  toEntry,
  toRun,
  toTransition,
  transitionRow,
} from "../merge-queue-rows.js";
import type { Database, MqEntriesTable, MqRunsTable, MqRuntimeTable } from "../schema.js";

/**
 * An entry of `mq_entries` that is its pull request's latest submission to the queue: no entry of
 * the same pull request has a greater `seq` (one look into `mq_entries_pr_idx`).
 */
function noLaterSubmission(eb: ExpressionBuilder<Database, "mqEntries">) {
  return eb.not(
    eb.exists(
      eb
        .selectFrom("mqEntries as later")
        .select("later.seq")
        .whereRef("later.queueId", "=", "mqEntries.queueId")
        .whereRef("later.prNumber", "=", "mqEntries.prNumber")
        .whereRef("later.seq", ">", "mqEntries.seq"),
    ),
  );
}

/** Rows per multi-row insert: far below either dialect's limit on bound parameters. */
const ROWS_PER_INSERT = 200;
/** Queues whose last parsed snapshot `sharedSnapshot` keeps (all of them are dropped beyond). */
const MAX_PARSED_SNAPSHOTS = 256;

/** The snapshot of a runtime row that a lease created, before the queue's first commit. */
const NO_SNAPSHOT = "null";

function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

/** The last version of each record by key (one statement may not upsert a row twice). */
function lastByKey<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...new Map(items.map((item) => [key(item), item])).values()];
}

/** Why a queue is blocked, in one word for its events. */
function troubleCause(trouble: HostTrouble): string {
  return trouble.state === "rate_limited" ? "rate_limited" : trouble.code;
}

/** The stored host trouble; null when none (only ever written from `HostTrouble`). */
function parseHostTrouble(text: string | null): HostTrouble | null {
  return text === null ? null : (JSON.parse(text) as HostTrouble);
}

// ---- rows ⇄ records (enum and JSON columns are only ever written from the records' types) ------

function toLease(
  row: Pick<Selectable<MqRuntimeTable>, "queueId" | "leaseOwner" | "leaseEpoch" | "leaseExpiresAt">,
): Lease {
  if (row.leaseOwner === null) throw new Error(`queue ${row.queueId}: the lease has no owner`);
  return {
    queueId: row.queueId,
    owner: row.leaseOwner,
    epoch: row.leaseEpoch,
    expiresAt: row.leaseExpiresAt,
  };
}

/** Every record of a step must belong to the queue whose lease fences it. */
function assertOneQueue(step: DriverCommit): void {
  for (const record of [...step.entries, ...step.transitions, ...step.runs]) {
    if (record.queueId !== step.queueId) {
      throw new Error(
        `a commit of queue ${step.queueId} cannot write records of queue ${record.queueId}`,
      );
    }
  }
}

/**
 * The merge-queue engine's storage (`RuntimeRecords`): each queue's planner snapshot, fenced by
 * the lease of its single writer, and the entries, transitions, runs and commands the API reads.
 *
 * The lease is a compare-and-set on the queue's `mq_runtime` row (one upsert, atomic on both
 * dialects). A driver step is one durable transaction that first checks the lease epoch, holding
 * the row (`FOR UPDATE` on PostgreSQL; SQLite's single connection serializes): a takeover waits
 * for a step in progress, and a step that started after a takeover writes nothing.
 */
export class MergeQueueRuntimeStore implements RuntimeRecords, QueueDashboardReads {
  private readonly activeSummaryRows: PrecompiledQuery<[queueId: string], SummaryRow>;
  private readonly snapshotText: PrecompiledQuery<[queueId: string], { snapshot: string }>;
  /** `listEntries`' statements by the filters they take (`listEntriesTemplate`). */
  private readonly listTemplates = new Map<string, QueryTemplate<Selectable<MqEntriesTable>>>();
  /** Per queue, the last snapshot text read and what it parsed to (`sharedSnapshot`). */
  private readonly parsedSnapshots = new Map<string, { text: string; snapshot: unknown }>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {
    // getQueue lists every active entry (hundreds in a busy queue) on each call: compiled once,
    // without the readiness (JSON to parse) and without the plugin renaming every row's columns.
    const plain = db.withoutPlugins();
    this.activeSummaryRows = precompile(
      plain,
      (queueId: string) =>
        sql<SummaryRow>`select id as "id", state as "state", pr_number as "prNumber",
          pr_title as "prTitle", pr_sha as "prSha", pr_base_branch as "prBaseBranch",
          pr_author as "prAuthor", state_changed_at as "stateChangedAt",
          priority_value as "priorityValue", used_default_priority as "usedDefaultPriority",
          no_batch as "noBatch", seq as "seq"
          from mq_entries where queue_id = ${queueId} and concluded_at is null
          order by seq`.compile(plain),
      ["$queueId"],
    );
    this.snapshotText = precompile(
      plain,
      (queueId: string) =>
        sql<{
          snapshot: string;
        }>`select snapshot as "snapshot" from mq_runtime where queue_id = ${queueId}`.compile(
          plain,
        ),
      ["$queueId"],
    );
  }

  async acquireLease(
    queueId: string,
    owner: string,
    now: number,
    ttlMs: number,
  ): Promise<Lease | undefined> {
    const expiresAt = now + ttlMs;
    // A new row is a takeover of the lease nobody held (epoch 0), hence epoch 1.
    const row = await this.db
      .insertInto("mqRuntime")
      .values({
        queueId,
        snapshot: NO_SNAPSHOT,
        wakeAt: null,
        leaseOwner: owner,
        leaseEpoch: 1,
        leaseExpiresAt: expiresAt,
        updatedAt: now,
      })
      .onConflict((oc) =>
        oc
          .column("queueId")
          .doUpdateSet((eb) => ({
            leaseOwner: eb.ref("excluded.leaseOwner"),
            leaseExpiresAt: eb.ref("excluded.leaseExpiresAt"),
            // Renewal (the owner, still in time) keeps the epoch; anything else is a takeover.
            leaseEpoch: eb
              .case()
              .when(
                eb.and([
                  eb("mqRuntime.leaseOwner", "=", owner),
                  eb("mqRuntime.leaseExpiresAt", ">", now),
                ]),
              )
              .then(eb.ref("mqRuntime.leaseEpoch"))
              .else(eb("mqRuntime.leaseEpoch", "+", 1))
              .end(),
          }))
          .where((eb) =>
            eb.or([
              eb("mqRuntime.leaseOwner", "is", null),
              eb("mqRuntime.leaseOwner", "=", owner),
              eb("mqRuntime.leaseExpiresAt", "<=", now),
            ]),
          ),
      )
      .returning(["queueId", "leaseOwner", "leaseEpoch", "leaseExpiresAt"])
      .executeTakeFirst();
    return row && toLease(row);
  }

  async releaseLease(queueId: string, owner: string, epoch: number): Promise<void> {
    await this.db
      .updateTable("mqRuntime")
      .set({ leaseExpiresAt: 0 })
      .where("queueId", "=", queueId)
      .where("leaseOwner", "=", owner)
      .where("leaseEpoch", "=", epoch)
      .execute();
  }

  async loadSnapshot(
    queueId: string,
  ): Promise<{ snapshot: unknown; wakeAt: number | null } | undefined> {
    const { snapshot, wakeAt } = await this.loadDriverState(queueId);
    return snapshot === undefined ? undefined : { snapshot, wakeAt };
  }

  async loadDriverState(queueId: string): Promise<DriverState> {
    const row = await this.db
      .selectFrom("mqRuntime")
      .select(["snapshot", "wakeAt", "issuedBelow", "hostTrouble"])
      .where("queueId", "=", queueId)
      .executeTakeFirst();
    if (!row) return { snapshot: undefined, wakeAt: null, issuedBelow: 0, hostTrouble: null };
    // A row created by a lease before any commit holds no snapshot.
    const snapshot = (JSON.parse(row.snapshot) as unknown) ?? undefined;
    return {
      snapshot,
      wakeAt: row.wakeAt,
      issuedBelow: row.issuedBelow,
      hostTrouble: parseHostTrouble(row.hostTrouble),
    };
  }

  async recordHostTrouble(
    queueId: string,
    epoch: number,
    trouble: HostTrouble | null,
    refused: readonly { id: number; result: CommandResult }[],
    now: number,
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const before = await trx
        .selectFrom("mqRuntime")
        .select("hostTrouble")
        .where("queueId", "=", queueId)
        .where("leaseEpoch", "=", epoch)
        .$call((qb) => sqlDialect(this.dialect).forUpdate(qb, "mqRuntime"))
        .executeTakeFirst();
      if (!before) return false;
      const result = await trx
        .updateTable("mqRuntime")
        .set({ hostTrouble: trouble === null ? null : JSON.stringify(trouble) })
        .where("queueId", "=", queueId)
        .where("leaseEpoch", "=", epoch)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      const previous = parseHostTrouble(before.hostTrouble);
      if ((previous === null) !== (trouble === null)) {
        const outage = trouble ?? previous;
        await emitQueueStateEvent(
          trx,
          queueId,
          {
            kind: "queue_host",
            queueId,
            blocked: trouble !== null,
            cause: trouble === null ? null : troubleCause(trouble),
            message: trouble?.message ?? null,
            since: outage?.since ?? now,
            at: now,
          },
          now,
        );
      }
      for (const { id, result: answer } of refused) {
        await trx
          .updateTable("mqCommands")
          .set({ appliedAt: now, result: JSON.stringify(answer) })
          .where("id", "=", id)
          .where("queueId", "=", queueId)
          .where("appliedAt", "is", null)
          .execute();
      }
      return true;
    });
  }

  async hostTrouble(queueId: string): Promise<HostTrouble | null> {
    const row = await this.db
      .selectFrom("mqRuntime")
      .select("hostTrouble")
      .where("queueId", "=", queueId)
      .executeTakeFirst();
    return parseHostTrouble(row?.hostTrouble ?? null);
  }

  async issueIds(queueId: string, epoch: number, below: number): Promise<boolean> {
    const result = await this.db
      .updateTable("mqRuntime")
      .set((eb) => ({
        issuedBelow: eb
          .case()
          .when("mqRuntime.issuedBelow", "<", below)
          .then(eb.val(below))
          .else(eb.ref("mqRuntime.issuedBelow"))
          .end(),
      }))
      .where("queueId", "=", queueId)
      .where("leaseEpoch", "=", epoch)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async sharedSnapshot(queueId: string): Promise<unknown> {
    const [row] = await this.snapshotText(queueId);
    if (!row) return undefined;
    // The text is read each time (another process may have committed); only an unchanged text
    // reuses what it parsed to. A long snapshot compares far faster than it parses.
    const cached = this.parsedSnapshots.get(queueId);
    if (cached?.text === row.snapshot) return cached.snapshot ?? undefined;
    const snapshot = JSON.parse(row.snapshot) as unknown;
    if (this.parsedSnapshots.size >= MAX_PARSED_SNAPSHOTS) this.parsedSnapshots.clear();
    this.parsedSnapshots.set(queueId, { text: row.snapshot, snapshot });
    // A row created by a lease before any commit holds no snapshot.
    return snapshot ?? undefined;
  }

  async commit(step: DriverCommit): Promise<boolean> {
    assertOneQueue(step);
    return this.db.transaction().execute(async (trx) => {
      const runtime = await trx
        .selectFrom("mqRuntime")
        .select("leaseEpoch")
        .where("queueId", "=", step.queueId)
        .$call((qb) => sqlDialect(this.dialect).forUpdate(qb))
        .executeTakeFirst();
      if (runtime?.leaseEpoch !== step.epoch) return false;
      await trx
        .updateTable("mqRuntime")
        .set({
          snapshot: JSON.stringify(step.snapshot ?? null),
          wakeAt: step.wakeAt,
          updatedAt: step.now,
        })
        .where("queueId", "=", step.queueId)
        .execute();
      await this.upsertEntries(trx, step.queueId, step.entries);
      for (const batch of chunks(step.transitions, ROWS_PER_INSERT)) {
        await trx.insertInto("mqTransitions").values(batch.map(transitionRow)).execute();
      }
      await emitQueueEvents(
        trx,
        step.queueId,
        step.transitions,
        new Map(step.entries.map((entry) => [entry.id, entry.prNumber])),
        step.now,
        step.runs,
      );
      await this.upsertRuns(trx, step.runs);
      // One statement per distinct answer (most commands share `{"ok":true}`).
      const byResult = new Map<string, number[]>();
      for (const { id, result } of step.appliedCommands) {
        const text = JSON.stringify(result);
        byResult.set(text, [...(byResult.get(text) ?? []), id]);
      }
      for (const [result, ids] of byResult) {
        for (const batch of chunks(ids, ROWS_PER_INSERT)) {
          await trx
            .updateTable("mqCommands")
            .set({ appliedAt: step.now, result })
            .where("id", "in", batch)
            .where("queueId", "=", step.queueId)
            .execute();
        }
      }
      return true;
    });
  }

  async enqueueCommand(queueId: string, payload: unknown, now: number): Promise<number> {
    const row = await this.db
      .insertInto("mqCommands")
      .values({ queueId, payload: JSON.stringify(payload), createdAt: now })
      .returning("id")
      .executeTakeFirstOrThrow();
    return row.id;
  }

  async enqueueCommands(
    commands: readonly { queueId: string; payload: unknown }[],
    now: number,
  ): Promise<number[]> {
    if (commands.length === 0) return [];
    const rows = (batch: readonly { queueId: string; payload: unknown }[]) =>
      batch.map(({ queueId, payload }) => ({
        queueId,
        payload: JSON.stringify(payload),
        createdAt: now,
      }));
    // One statement (one round trip, one wait for the disk, no transaction) for the usual
    // handful; a long list in one transaction of such statements.
    return commands.length <= ROWS_PER_INSERT
      ? insertCommands(this.db, rows(commands))
      : this.db.transaction().execute(async (trx) => {
          const ids: number[] = [];
          for (const batch of chunks(commands, ROWS_PER_INSERT)) {
            ids.push(...(await insertCommands(trx, rows(batch))));
          }
          return ids;
        });
  }

  async pendingCommands(queueId: string, limit: number): Promise<CommandRecord[]> {
    const rows = await this.db
      .selectFrom("mqCommands")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("appliedAt", "is", null)
      .orderBy("id")
      .limit(limit)
      .execute();
    return rows.map(toCommand);
  }

  async command(id: number): Promise<CommandRecord | undefined> {
    const row = await this.db
      .selectFrom("mqCommands")
      .selectAll()
      .where("id", "=", id)
      .executeTakeFirst();
    return row && toCommand(row);
  }

  async dueQueues(now: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom("mqCommands")
      .select("queueId")
      .where("appliedAt", "is", null)
      .union(this.db.selectFrom("mqRuntime").select("queueId").where("wakeAt", "<=", now))
      .execute();
    return rows.map((r) => r.queueId).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  async latestEntry(queueId: string, prNumber: number): Promise<EntryRecord | undefined> {
    const row = await this.db
      .selectFrom("mqEntries")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("prNumber", "=", prNumber)
      .orderBy("seq", "desc")
      .limit(1)
      .executeTakeFirst();
    return row && toEntry(row);
  }

  async latestEntryByBranch(queueId: string, headBranch: string): Promise<EntryRecord | undefined> {
    const row = await this.db
      .selectFrom("mqEntries")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("prHeadBranch", "=", headBranch)
      .orderBy((eb) => eb.case().when("concludedAt", "is", null).then(0).else(1).end())
      .orderBy("seq", "desc")
      .limit(1)
      .executeTakeFirst();
    return row && toEntry(row);
  }

  async activeEntries(queueId: string): Promise<EntryRecord[]> {
    const rows = await this.db
      .selectFrom("mqEntries")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("concludedAt", "is", null)
      .orderBy("seq")
      .execute();
    return rows.map(toEntry);
  }

  async activeSummaries(queueId: string): Promise<EntrySummary[]> {
    const rows = await this.activeSummaryRows(queueId);
    return rows.map((row) => ({
      ...row,
      state: row.state as PrState,
      usedDefaultPriority: Boolean(row.usedDefaultPriority),
      noBatch: Boolean(row.noBatch),
    }));
  }

  async listEntries(queueId: string, query: EntryListQuery): Promise<EntryRecord[]> {
    const args: unknown[] = [queueId];
    if (query.state !== undefined) args.push(query.state);
    if (query.concludedSince !== undefined) args.push(query.concludedSince);
    if (query.afterSeq !== undefined) args.push(query.afterSeq);
    args.push(query.take);
    const rows = await this.listEntriesTemplate(query).run(this.db, args);
    return rows.map(toEntry);
  }

  /**
   * listPullRequests' statement for the filters `query` has (one of 32 shapes), compiled once:
   * its arguments are the queue, then the filters present in this order, then the page size.
   */
  private listEntriesTemplate(query: EntryListQuery): QueryTemplate<Selectable<MqEntriesTable>> {
    const newest = query.order === "newest";
    const latestOnly = query.latestOnly === true;
    const shape = [
      query.state !== undefined,
      query.concludedSince !== undefined,
      query.afterSeq !== undefined,
      newest,
      latestOnly,
    ]
      .map((present) => (present ? "1" : "0"))
      .join("");
    let template = this.listTemplates.get(shape);
    if (!template) {
      const present = [query.state, query.concludedSince, query.afterSeq].filter(
        (value) => value !== undefined,
      ).length;
      template = compileTemplate(present + 2, (args) => {
        let next = 1;
        // The markers stand where the values go; the template binds the values in their place.
        const arg = (): never => args[next++] as never;
        let select = this.db
          .selectFrom("mqEntries")
          .selectAll()
          .where("queueId", "=", args[0] as string);
        if (query.state !== undefined) select = select.where("state", "=", arg());
        if (query.concludedSince !== undefined) {
          select = select.where("concludedAt", ">=", arg());
        }
        if (query.afterSeq !== undefined) select = select.where("seq", ">", arg());
        if (latestOnly) select = select.where(noLaterSubmission);
        return select
          .orderBy("seq", newest ? "desc" : "asc")
          .limit(arg())
          .compile();
      });
      this.listTemplates.set(shape, template);
    }
    return template;
  }

  async transitions(entryId: string): Promise<TransitionRecord[]> {
    const rows = await this.db
      .selectFrom("mqTransitions")
      .selectAll()
      .where("entryId", "=", entryId)
      .orderBy("id")
      .execute();
    return rows.map(toTransition);
  }

  async pullRequestTransitions(queueId: string, prNumber: number): Promise<TransitionRecord[]> {
    const rows = await this.db
      .selectFrom("mqTransitions as t")
      .innerJoin("mqEntries as e", "e.id", "t.entryId")
      .selectAll("t")
      .where("e.queueId", "=", queueId)
      .where("e.prNumber", "=", prNumber)
      .orderBy("t.id")
      .execute();
    return rows.map(toTransition);
  }

  async run(queueId: string, runId: string): Promise<RunRecord | undefined> {
    const row = await this.db
      .selectFrom("mqRuns")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("id", "=", runId)
      .executeTakeFirst();
    return row && toRun(row);
  }

  async runOnTestBranch(
    queueId: string,
    testBranch: string,
    sha?: string,
  ): Promise<RunRecord | undefined> {
    let query = this.db
      .selectFrom("mqRuns")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("testBranch", "=", testBranch);
    if (sha !== undefined) query = query.where("testBranchSha", "=", sha);
    const row = await query.orderBy("startedAt", "desc").limit(1).executeTakeFirst();
    return row && toRun(row);
  }

  async transitionsSince(queueId: string, since: number): Promise<TransitionRecord[]> {
    const rows = await this.db
      .selectFrom("mqTransitions")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("at", ">=", since)
      .orderBy("id")
      .execute();
    return rows.map(toTransition);
  }

  /** The id of the queue's newest transition (0 when none): it changes whenever a PR moves. */
  async latestTransitionId(queueId: string): Promise<number> {
    const row = await this.db
      .selectFrom("mqTransitions")
      .select("id")
      .where("queueId", "=", queueId)
      .orderBy("at", "desc")
      .orderBy("id", "desc")
      .limit(1)
      .executeTakeFirst();
    return row ? row.id : 0;
  }

  /** The entries that concluded last, newest first. */
  async recentlyConcluded(queueId: string, limit: number): Promise<EntryRecord[]> {
    const rows = await this.db
      .selectFrom("mqEntries")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("concludedAt", "is not", null)
      .where(noLaterSubmission)
      .orderBy("concludedAt", "desc")
      .orderBy("seq", "desc")
      .limit(limit)
      .execute();
    return rows.map(toEntry);
  }

  /** The transitions to `failed` of these entries (what failed, in words), in one statement. */
  async failures(queueId: string, entryIds: readonly string[]): Promise<TransitionRecord[]> {
    if (entryIds.length === 0) return [];
    const rows = await this.db
      .selectFrom("mqTransitions")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("entryId", "in", [...entryIds])
      .where("toState", "=", "failed")
      .orderBy("id")
      .execute();
    return rows.map(toTransition);
  }

  /** Several runs of a queue by id, in one statement (unknown ids are left out). */
  async runsByIds(queueId: string, runIds: readonly string[]): Promise<RunRecord[]> {
    if (runIds.length === 0) return [];
    const rows = await this.db
      .selectFrom("mqRuns")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("id", "in", [...runIds])
      .execute();
    return rows.map(toRun);
  }

  /** When and how the queue's runs started since a time ended (no checks, no PRs), newest first. */
  async runTimings(queueId: string, since: number, limit: number): Promise<RunTiming[]> {
    const rows = await this.db
      .selectFrom("mqRuns")
      .select(["kind", "status", "startedAt", "finishedAt"])
      .where("queueId", "=", queueId)
      .where("startedAt", ">=", since)
      .orderBy("startedAt", "desc")
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      kind: row.kind as RunKind,
      status: row.status as RunStatus,
      startedAt: row.startedAt,
      finishedAt: row.finishedAt,
    }));
  }

  /**
   * Inserts or rewrites entries by id. Entry ids are unique across queues: an id that another
   * queue already uses is refused (the transaction rolls back) rather than moved to this queue.
   */
  private async upsertEntries(
    trx: Transaction<Database>,
    queueId: string,
    entries: readonly EntryRecord[],
  ): Promise<void> {
    for (const batch of chunks(
      lastByKey(entries, (e) => e.id),
      ROWS_PER_INSERT,
    )) {
      const written = await trx
        .insertInto("mqEntries")
        .values(batch.map(entryRow))
        .onConflict((oc) =>
          oc
            .column("id")
            .doUpdateSet(
              (eb) =>
                ({
                  queueId: eb.ref("excluded.queueId"),
                  seq: eb.ref("excluded.seq"),
                  prNumber: eb.ref("excluded.prNumber"),
                  prTitle: eb.ref("excluded.prTitle"),
                  prSha: eb.ref("excluded.prSha"),
                  prHeadBranch: eb.ref("excluded.prHeadBranch"),
                  prBaseBranch: eb.ref("excluded.prBaseBranch"),
                  prAuthor: eb.ref("excluded.prAuthor"),
                  state: eb.ref("excluded.state"),
                  stateChangedAt: eb.ref("excluded.stateChangedAt"),
                  submittedAt: eb.ref("excluded.submittedAt"),
                  concludedAt: eb.ref("excluded.concludedAt"),
                  priorityValue: eb.ref("excluded.priorityValue"),
                  usedDefaultPriority: eb.ref("excluded.usedDefaultPriority"),
                  noBatch: eb.ref("excluded.noBatch"),
                  readiness: eb.ref("excluded.readiness"),
                  lastReason: eb.ref("excluded.lastReason"),
                }) satisfies Record<Exclude<keyof MqEntriesTable, "id">, unknown>,
            )
            .where("mqEntries.queueId", "=", queueId),
        )
        .returning("id")
        .execute();
      if (written.length !== batch.length) {
        const mine = new Set(written.map((r) => r.id));
        const taken = batch.filter((e) => !mine.has(e.id)).map((e) => e.id);
        throw new Error(`entry ids already used by another queue: ${taken.join(", ")}`);
      }
    }
  }

  /** Inserts or rewrites runs by (queue, id). */
  private async upsertRuns(trx: Transaction<Database>, runs: readonly RunRecord[]): Promise<void> {
    for (const batch of chunks(
      lastByKey(runs, (r) => r.id),
      ROWS_PER_INSERT,
    )) {
      await trx
        .insertInto("mqRuns")
        .values(batch.map(runRow))
        .onConflict((oc) =>
          oc.columns(["queueId", "id"]).doUpdateSet(
            (eb) =>
              ({
                kind: eb.ref("excluded.kind"),
                status: eb.ref("excluded.status"),
                baseSha: eb.ref("excluded.baseSha"),
                testBranch: eb.ref("excluded.testBranch"),
                testBranchSha: eb.ref("excluded.testBranchSha"),
                prs: eb.ref("excluded.prs"),
                unit: eb.ref("excluded.unit"),
                requiredStatuses: eb.ref("excluded.requiredStatuses"),
                requiredStatusesSource: eb.ref("excluded.requiredStatusesSource"),
                checks: eb.ref("excluded.checks"),
                startedAt: eb.ref("excluded.startedAt"),
                finishedAt: eb.ref("excluded.finishedAt"),
                failFirst: eb.ref("excluded.failFirst"),
              }) satisfies Record<Exclude<keyof MqRunsTable, "queueId" | "id">, unknown>,
          ),
        )
        .execute();
    }
  }
}

/**
 * Inserts commands in one statement and answers their ids in the order of `rows`: ids are
 * assigned in the order of the rows (a sequence, an autoincrement), whatever order RETURNING
 * lists them in.
 */
async function insertCommands(
  db: Kysely<Database>,
  rows: { queueId: string; payload: string; createdAt: number }[],
): Promise<number[]> {
  const inserted = await db.insertInto("mqCommands").values(rows).returning("id").execute();
  if (inserted.length !== rows.length) {
    throw new Error(`${String(rows.length)} commands sent, ${String(inserted.length)} stored`);
  }
  return inserted.map(({ id }) => id).sort((a, b) => a - b);
}
