import { sql, type Insertable, type Kysely, type Selectable } from "kysely";
import type {
  DirectMergeMode,
  MergeMethod,
  OptimizationMode,
  QueueConfiguration,
  QueueMode,
  QueueState,
} from "../../mergequeue/settings.js";
import type {
  MergeQueueRecord,
  MergeQueueRecords,
  QueueListing,
  QueueOverview,
} from "../../mergequeue/records.js";
import type { PrState } from "../../mergequeue/model.js";
import type { DialectName } from "../connection.js";
import { sqlDialect } from "../dialect.js";
import { cachedLookup, lookupsChanged } from "../lookup-cache.js";
import { emitQueueStateEvent } from "../outbound-emission.js";
import { precompile, type PrecompiledQuery } from "../precompiled.js";
import type { Database, MergeQueuesTable } from "../schema.js";
import { type RepoRef, repositoryLookupKey } from "../../organizations/repositories.js";

type ConfigurationColumns = Omit<
  Insertable<MergeQueuesTable>,
  "id" | "repositoryId" | "targetBranch" | "createdAt" | "updatedAt" | "version"
>;

const bit = (value: boolean): number => (value ? 1 : 0);

/** Every column of `merge_queues`, checked by the compiler: none missing, none extra. */
const MERGE_QUEUE_COLUMNS = Object.keys({
  id: true,
  repositoryId: true,
  targetBranch: true,
  state: true,
  mode: true,
  pendingMode: true,
  concurrency: true,
  bisectionConcurrency: true,
  testingTimeoutMinutes: true,
  pendingFailureDepth: true,
  canOptimisticallyMerge: true,
  batch: true,
  batchingMaxWaitTimeMinutes: true,
  batchingMinSize: true,
  mergeMethod: true,
  commentsEnabled: true,
  commandsEnabled: true,
  createPrsForTestingBranches: true,
  statusCheckEnabled: true,
  directMergeMode: true,
  optimizationMode: true,
  requiredStatuses: true,
  extensionEnabled: true,
  enqueueingLabel: true,
  labelCommandsEnabled: true,
  stateLabelsEnabled: true,
  notReadyTimeoutHours: true,
  speculationThresholdPercent: true,
  createdAt: true,
  updatedAt: true,
  version: true,
} satisfies Record<keyof MergeQueuesTable, true>);

const snakeCase = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function toColumns(c: QueueConfiguration): ConfigurationColumns {
  return {
    state: c.state,
    mode: c.mode,
    pendingMode: c.pendingMode,
    concurrency: c.concurrency,
    bisectionConcurrency: c.bisectionConcurrency,
    testingTimeoutMinutes: c.testingTimeoutMinutes,
    pendingFailureDepth: c.pendingFailureDepth,
    canOptimisticallyMerge: bit(c.canOptimisticallyMerge),
    batch: bit(c.batch),
    batchingMaxWaitTimeMinutes: c.batchingMaxWaitTimeMinutes,
    batchingMinSize: c.batchingMinSize,
    mergeMethod: c.mergeMethod,
    commentsEnabled: bit(c.commentsEnabled),
    commandsEnabled: bit(c.commandsEnabled),
    createPrsForTestingBranches: bit(c.createPrsForTestingBranches),
    statusCheckEnabled: bit(c.statusCheckEnabled),
    directMergeMode: c.directMergeMode,
    optimizationMode: c.optimizationMode,
    requiredStatuses: c.requiredStatuses === null ? null : JSON.stringify(c.requiredStatuses),
    extensionEnabled: bit(c.extensionEnabled),
    enqueueingLabel: c.enqueueingLabel,
    labelCommandsEnabled: bit(c.labelCommandsEnabled),
    stateLabelsEnabled: bit(c.stateLabelsEnabled),
    notReadyTimeoutHours: c.notReadyTimeoutHours,
    speculationThresholdPercent: c.speculationThresholdPercent,
  };
}

function toRecord(row: Selectable<MergeQueuesTable>): MergeQueueRecord {
  return {
    id: row.id,
    repositoryId: row.repositoryId,
    targetBranch: row.targetBranch,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    version: row.version,
    configuration: {
      // Enum columns are only ever written from validated domain values.
      state: row.state as QueueState,
      mode: row.mode as QueueMode,
      pendingMode: row.pendingMode as QueueMode | null,
      concurrency: row.concurrency,
      bisectionConcurrency: row.bisectionConcurrency,
      testingTimeoutMinutes: row.testingTimeoutMinutes,
      pendingFailureDepth: row.pendingFailureDepth,
      canOptimisticallyMerge: Boolean(row.canOptimisticallyMerge),
      batch: Boolean(row.batch),
      batchingMaxWaitTimeMinutes: row.batchingMaxWaitTimeMinutes,
      batchingMinSize: row.batchingMinSize,
      mergeMethod: row.mergeMethod as MergeMethod,
      commentsEnabled: Boolean(row.commentsEnabled),
      commandsEnabled: Boolean(row.commandsEnabled),
      createPrsForTestingBranches: Boolean(row.createPrsForTestingBranches),
      statusCheckEnabled: Boolean(row.statusCheckEnabled),
      directMergeMode: row.directMergeMode as DirectMergeMode,
      optimizationMode: row.optimizationMode as OptimizationMode,
      requiredStatuses:
        row.requiredStatuses === null ? null : (JSON.parse(row.requiredStatuses) as string[]),
      extensionEnabled: Boolean(row.extensionEnabled),
      enqueueingLabel: row.enqueueingLabel,
      labelCommandsEnabled: Boolean(row.labelCommandsEnabled),
      stateLabelsEnabled: Boolean(row.stateLabelsEnabled),
      notReadyTimeoutHours: row.notReadyTimeoutHours,
      speculationThresholdPercent: row.speculationThresholdPercent,
    },
  };
}

/** Merge queues (one per repository and target branch) and their settings. */
export class MergeQueueStore implements MergeQueueRecords {
  private readonly queueByAddress: PrecompiledQuery<
    [organizationId: string, lookupKey: string, targetBranch: string],
    Selectable<MergeQueuesTable>
  >;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {
    // The hottest read (getQueue): SQLite answers in the camelCase of the row type, so rows
    // need no mapping by the CamelCasePlugin.
    const plain = db.withoutPlugins();
    const columns = sql.raw(
      MERGE_QUEUE_COLUMNS.map((column) => `mq.${snakeCase(column)} as "${column}"`).join(", "),
    );
    this.queueByAddress = precompile(
      plain,
      (organizationId: string, lookupKey: string, targetBranch: string) =>
        sql<Selectable<MergeQueuesTable>>`select ${columns} from merge_queues mq
          inner join repositories r on r.id = mq.repository_id
          where r.organization_id = ${organizationId} and r.lookup_key = ${lookupKey}
          and mq.target_branch = ${targetBranch}`.compile(plain),
      ["$organizationId", "$lookupKey", "$targetBranch"],
    );
  }

  /**
   * The queue of `targetBranch` in an organization's repository: cached. `fresh`: as committed
   * before the call by any process (on PostgreSQL the cache first hears the announcements
   * committed before it, ADR 0017; SQLite's cache sees another process's change at once).
   */
  async find(
    organizationId: string,
    repo: RepoRef,
    targetBranch: string,
    options: { fresh?: boolean } = {},
  ): Promise<MergeQueueRecord | undefined> {
    const lookupKey = repositoryLookupKey(repo);
    const row = await cachedLookup(
      this.db,
      "mergeQueue",
      `${organizationId}\u0000${lookupKey}\u0000${targetBranch}`,
      async () => (await this.queueByAddress(organizationId, lookupKey, targetBranch))[0],
      options,
    );
    // A record of its own each time: callers may change theirs.
    return row && toRecord(row);
  }

  /**
   * Every queue of an organization, or of one of its repositories (matched case-insensitively),
   * ordered by repository and branch.
   */
  listForOrganization(organizationId: string, repo?: RepoRef): Promise<QueueListing[]> {
    return this.listQueues({ organizationId, repo });
  }

  /**
   * Every queue of an organization with its state and its active pull requests per state: two
   * statements whatever the number of queues (the active entries through their partial index).
   */
  async overview(organizationId: string): Promise<QueueOverview[]> {
    const queues = await this.db
      .selectFrom("mergeQueues")
      .innerJoin("repositories", "repositories.id", "mergeQueues.repositoryId")
      .select([
        "mergeQueues.id",
        "mergeQueues.targetBranch",
        "mergeQueues.state",
        "mergeQueues.mode",
        "repositories.id as repositoryId",
        "repositories.organizationId",
        "repositories.host",
        "repositories.owner",
        "repositories.name",
      ])
      .where("repositories.organizationId", "=", organizationId)
      .orderBy("repositories.lookupKey")
      .orderBy("mergeQueues.targetBranch")
      .execute();
    if (queues.length === 0) return [];
    const counts = await this.db
      .selectFrom("mqEntries")
      .select(["queueId", "state", (eb) => eb.fn.countAll<number | string>().as("n")])
      .where(
        "queueId",
        "in",
        queues.map((q) => q.id),
      )
      .where("concludedAt", "is", null)
      .groupBy(["queueId", "state"])
      .execute();
    return queues.map((q) => {
      const active: QueueOverview["active"] = {};
      for (const c of counts) if (c.queueId === q.id) active[c.state as PrState] = Number(c.n);
      return {
        id: q.id,
        repo: {
          organizationId: q.organizationId,
          repositoryId: q.repositoryId,
          host: q.host,
          owner: q.owner,
          name: q.name,
        },
        targetBranch: q.targetBranch,
        state: q.state as QueueState,
        mode: q.mode as QueueMode,
        active,
      };
    });
  }

  /**
   * Every queue of repositories on one git host (`local`), across organizations, or of one such
   * repository of one organization: what the host's change watcher serves.
   */
  listForHost(host: string, repo?: RepoRef & { organizationId: string }): Promise<QueueListing[]> {
    return this.listQueues(
      repo ? { host, repo, organizationId: repo.organizationId } : { host, repo },
    );
  }

  private async listQueues(filter: {
    organizationId?: string;
    host?: string;
    repo: RepoRef | undefined;
  }): Promise<QueueListing[]> {
    let query = this.db
      .selectFrom("mergeQueues")
      .innerJoin("repositories", "repositories.id", "mergeQueues.repositoryId")
      .select([
        "mergeQueues.id",
        "mergeQueues.targetBranch",
        "repositories.organizationId",
        "repositories.host",
        "repositories.owner",
        "repositories.name",
      ]);
    if (filter.organizationId !== undefined) {
      query = query.where("repositories.organizationId", "=", filter.organizationId);
    }
    if (filter.host !== undefined) query = query.where("repositories.host", "=", filter.host);
    if (filter.repo) {
      query = query.where("repositories.lookupKey", "=", repositoryLookupKey(filter.repo));
    }
    const rows = await query
      .orderBy("repositories.lookupKey")
      .orderBy("mergeQueues.targetBranch")
      .execute();
    return rows.map((row) => ({
      id: row.id,
      targetBranch: row.targetBranch,
      repo: {
        organizationId: row.organizationId,
        host: row.host,
        owner: row.owner,
        name: row.name,
      },
    }));
  }

  /** Inserts a new queue; false when the repository already has a queue for that branch. */
  async insert(queue: Omit<MergeQueueRecord, "version" | "updatedAt">): Promise<boolean> {
    const inserted = await this.db
      .insertInto("mergeQueues")
      .values({
        id: queue.id,
        repositoryId: queue.repositoryId,
        targetBranch: queue.targetBranch,
        createdAt: queue.createdAt,
        updatedAt: queue.createdAt,
        ...toColumns(queue.configuration),
      })
      .onConflict((oc) => oc.columns(["repositoryId", "targetBranch"]).doNothing())
      .returning("id")
      .executeTakeFirst();
    lookupsChanged(this.db);
    return inserted !== undefined;
  }

  /**
   * Read, decide, write, as one transaction holding the queue's row: concurrent writers of the
   * same queue wait for each other instead of failing (`FOR UPDATE` on PostgreSQL; SQLite has a
   * single writer). `decide` may throw to refuse the change, which then leaves everything as it
   * was. Undefined when there is no such queue.
   */
  async modify(
    organizationId: string,
    repo: RepoRef,
    targetBranch: string,
    now: number,
    decide: (current: MergeQueueRecord) => QueueConfiguration,
    actor: string | null = null,
  ): Promise<MergeQueueRecord | undefined> {
    try {
      return await this.modifyInTransaction(organizationId, repo, targetBranch, now, decide, actor);
    } finally {
      lookupsChanged(this.db);
    }
  }

  private modifyInTransaction(
    organizationId: string,
    repo: RepoRef,
    targetBranch: string,
    now: number,
    decide: (current: MergeQueueRecord) => QueueConfiguration,
    actor: string | null,
  ): Promise<MergeQueueRecord | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const row = await this.selectByAddress(
        trx,
        organizationId,
        repositoryLookupKey(repo),
        targetBranch,
      )
        .$call((qb) => sqlDialect(this.dialect).forUpdate(qb, "mergeQueues"))
        .executeTakeFirst();
      if (!row) return undefined;
      const current = toRecord(row);
      const updated = await trx
        .updateTable("mergeQueues")
        .set({ ...toColumns(decide(current)), updatedAt: now, version: current.version + 1 })
        .where("id", "=", current.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      const record = toRecord(updated);
      if (record.configuration.state !== current.configuration.state) {
        const facts = {
          kind: "queue_state" as const,
          queueId: current.id,
          previous: current.configuration.state,
          state: record.configuration.state,
          actor,
          at: now,
        };
        await emitQueueStateEvent(trx, current.id, facts, now);
      }
      return record;
    });
  }

  async findById(id: string): Promise<MergeQueueRecord | undefined> {
    const row = await this.db
      .selectFrom("mergeQueues")
      .selectAll()
      .where("id", "=", id)
      .executeTakeFirst();
    return row && toRecord(row);
  }

  /** The engine's own settings changes (a mode switch that finished). */
  async setConfiguration(
    id: string,
    configuration: QueueConfiguration,
    now: number,
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const before = await trx
        .selectFrom("mergeQueues")
        .select("state")
        .where("id", "=", id)
        .$call((qb) => sqlDialect(this.dialect).forUpdate(qb, "mergeQueues"))
        .executeTakeFirst();
      await trx
        .updateTable("mergeQueues")
        .set((eb) => ({
          ...toColumns(configuration),
          updatedAt: now,
          version: eb("version", "+", 1),
        }))
        .where("id", "=", id)
        .execute();
      if (before && before.state !== configuration.state) {
        const facts = {
          kind: "queue_state" as const,
          queueId: id,
          previous: before.state,
          state: configuration.state,
          actor: null,
          at: now,
        };
        await emitQueueStateEvent(trx, id, facts, now);
      }
    });
    lookupsChanged(this.db);
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom("mergeQueues").where("id", "=", id).executeTakeFirst();
    lookupsChanged(this.db);
    return result.numDeletedRows > 0n;
  }

  private selectByAddress(
    db: Kysely<Database>,
    organizationId: string,
    lookupKey: string,
    targetBranch: string,
  ) {
    return db
      .selectFrom("mergeQueues")
      .innerJoin("repositories", "repositories.id", "mergeQueues.repositoryId")
      .selectAll("mergeQueues")
      .where("repositories.organizationId", "=", organizationId)
      .where("repositories.lookupKey", "=", lookupKey)
      .where("mergeQueues.targetBranch", "=", targetBranch);
  }
}
