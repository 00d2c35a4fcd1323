/**
 * Rows of the merge queue's runtime tables and the records they hold, both ways: one place for
 * the column mapping (JSON columns, 0/1 booleans) that the store's reads and writes share.
 */
import type { Insertable, Selectable } from "kysely";
import type { Actor, PrState, RunKind, RunStatus } from "../mergequeue/model.js";
import type {
  CommandRecord,
  CommandResult,
  EntryRecord,
  EntrySummary,
  RunRecord,
  TransitionRecord,
} from "../mergequeue/records.js";
import type { MqCommandsTable, MqEntriesTable, MqRunsTable, MqTransitionsTable } from "./schema.js";

const bit = (value: boolean): number => (value ? 1 : 0);

export function entryRow(entry: EntryRecord): Insertable<MqEntriesTable> {
  return {
    id: entry.id,
    queueId: entry.queueId,
    seq: entry.seq,
    prNumber: entry.prNumber,
    prTitle: entry.prTitle,
    prSha: entry.prSha,
    prHeadBranch: entry.prHeadBranch,
    prBaseBranch: entry.prBaseBranch,
    prAuthor: entry.prAuthor,
    state: entry.state,
    stateChangedAt: entry.stateChangedAt,
    submittedAt: entry.submittedAt,
    concludedAt: entry.concludedAt,
    priorityValue: entry.priorityValue,
    usedDefaultPriority: bit(entry.usedDefaultPriority),
    noBatch: bit(entry.noBatch),
    readiness: JSON.stringify(entry.readiness),
    lastReason: entry.lastReason,
  };
}

export type SummaryRow = Omit<EntrySummary, "state" | "usedDefaultPriority" | "noBatch"> & {
  state: string;
  usedDefaultPriority: number | boolean;
  noBatch: number | boolean;
};

export function toEntry(row: Selectable<MqEntriesTable>): EntryRecord {
  return {
    id: row.id,
    queueId: row.queueId,
    prNumber: row.prNumber,
    prTitle: row.prTitle,
    prSha: row.prSha,
    prHeadBranch: row.prHeadBranch,
    prBaseBranch: row.prBaseBranch,
    prAuthor: row.prAuthor,
    state: row.state as PrState,
    stateChangedAt: row.stateChangedAt,
    submittedAt: row.submittedAt,
    concludedAt: row.concludedAt,
    priorityValue: row.priorityValue,
    usedDefaultPriority: Boolean(row.usedDefaultPriority),
    noBatch: Boolean(row.noBatch),
    seq: row.seq,
    readiness: JSON.parse(row.readiness) as EntryRecord["readiness"],
    lastReason: row.lastReason,
  };
}

export function transitionRow(transition: TransitionRecord): Insertable<MqTransitionsTable> {
  return {
    queueId: transition.queueId,
    entryId: transition.entryId,
    at: transition.at,
    fromState: transition.from,
    toState: transition.to,
    reason: transition.reason,
    actor: JSON.stringify(transition.actor),
    runId: transition.runId,
    detail: transition.detail,
  };
}

export function toTransition(row: Selectable<MqTransitionsTable>): TransitionRecord {
  return {
    entryId: row.entryId,
    queueId: row.queueId,
    at: row.at,
    from: row.fromState as PrState | null,
    to: row.toState as PrState,
    reason: row.reason,
    actor: JSON.parse(row.actor) as Actor,
    runId: row.runId,
    detail: row.detail,
  };
}

export function runRow(run: RunRecord): Insertable<MqRunsTable> {
  return {
    queueId: run.queueId,
    id: run.id,
    kind: run.kind,
    status: run.status,
    baseSha: run.baseSha,
    testBranch: run.testBranch,
    testBranchSha: run.testBranchSha,
    prs: JSON.stringify(run.prs),
    unit: JSON.stringify(run.unit),
    requiredStatuses: JSON.stringify(run.requiredStatuses),
    requiredStatusesSource: run.requiredStatusesSource,
    checks: JSON.stringify(run.checks),
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    failFirst: run.failFirst ? JSON.stringify(run.failFirst) : null,
  };
}

export function toRun(row: Selectable<MqRunsTable>): RunRecord {
  return {
    id: row.id,
    queueId: row.queueId,
    kind: row.kind as RunKind,
    status: row.status as RunStatus,
    baseSha: row.baseSha,
    testBranch: row.testBranch,
    testBranchSha: row.testBranchSha,
    prs: JSON.parse(row.prs) as RunRecord["prs"],
    unit: JSON.parse(row.unit) as string[],
    requiredStatuses: JSON.parse(row.requiredStatuses) as string[],
    requiredStatusesSource: row.requiredStatusesSource as RunRecord["requiredStatusesSource"],
    checks: JSON.parse(row.checks) as RunRecord["checks"],
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    ...(row.failFirst == null
      ? {}
      : { failFirst: JSON.parse(row.failFirst) as NonNullable<RunRecord["failFirst"]> }),
  };
}

export function toCommand(row: Selectable<MqCommandsTable>): CommandRecord {
  return {
    id: row.id,
    queueId: row.queueId,
    payload: JSON.parse(row.payload) as unknown,
    createdAt: row.createdAt,
    appliedAt: row.appliedAt,
    result: row.result === null ? null : (JSON.parse(row.result) as CommandResult),
  };
}
