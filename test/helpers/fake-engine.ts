/**
 * Stand-ins for the merge-queue engine's storage and command bus, for tests of the pull-request
 * service, its presenters and its routes without the engine: records are set by hand, commands
 * are recorded and answered as scripted.
 */
import type { QueueCommand } from "../../src/mergequeue/model.js";
import type {
  CommandBus,
  PullRequestServiceDeps,
} from "../../src/mergequeue/pull-request-service.js";
import type {
  CommandResult,
  EntryListQuery,
  EntryRecord,
  RunRecord,
  TransitionRecord,
} from "../../src/mergequeue/records.js";

type RuntimeReads = PullRequestServiceDeps["runtime"];

/** The read side of a RuntimeStore over plain arrays, with the store's documented semantics. */
export class FakeRuntime implements RuntimeReads {
  entries: EntryRecord[] = [];
  transitionRecords: TransitionRecord[] = [];
  runs: RunRecord[] = [];
  /** Entry ids whose full history was asked for (to check what metrics read). */
  readonly historyReads: string[] = [];

  latestEntry(queueId: string, prNumber: number): Promise<EntryRecord | undefined> {
    const matching = this.entries.filter((e) => e.queueId === queueId && e.prNumber === prNumber);
    return Promise.resolve(matching.sort((a, b) => b.seq - a.seq)[0]);
  }

  latestEntryByBranch(queueId: string, headBranch: string): Promise<EntryRecord | undefined> {
    const matching = this.entries
      .filter((e) => e.queueId === queueId && e.prHeadBranch === headBranch)
      .sort(
        (a, b) => Number(a.concludedAt !== null) - Number(b.concludedAt !== null) || b.seq - a.seq,
      );
    return Promise.resolve(matching[0]);
  }

  activeEntries(queueId: string): Promise<EntryRecord[]> {
    return Promise.resolve(
      this.entries
        .filter((e) => e.queueId === queueId && e.concludedAt === null)
        .sort((a, b) => a.seq - b.seq),
    );
  }

  listEntries(queueId: string, query: EntryListQuery): Promise<EntryRecord[]> {
    return Promise.resolve(
      this.entries
        .filter(
          (e) =>
            e.queueId === queueId &&
            (query.state === undefined || e.state === query.state) &&
            (query.concludedSince === undefined ||
              (e.concludedAt !== null && e.concludedAt >= query.concludedSince)) &&
            (query.afterSeq === undefined || e.seq > query.afterSeq),
        )
        .sort((a, b) => a.seq - b.seq)
        .slice(0, query.take),
    );
  }

  transitions(entryId: string): Promise<TransitionRecord[]> {
    this.historyReads.push(entryId);
    return Promise.resolve(this.transitionRecords.filter((t) => t.entryId === entryId));
  }

  run(queueId: string, runId: string): Promise<RunRecord | undefined> {
    return Promise.resolve(this.runs.find((r) => r.queueId === queueId && r.id === runId));
  }

  transitionsSince(queueId: string, since: number): Promise<TransitionRecord[]> {
    return Promise.resolve(
      this.transitionRecords.filter((t) => t.queueId === queueId && t.at >= since),
    );
  }
}

/** Records every command; answers `{ok: true}` unless told otherwise. */
export class RecordingBus implements CommandBus {
  readonly executed: { queueId: string; command: QueueCommand }[] = [];
  answer: CommandResult = { ok: true };

  execute(queueId: string, command: QueueCommand): Promise<CommandResult> {
    this.executed.push({ queueId, command });
    return Promise.resolve(this.answer);
  }
}

let entryCounter = 0;

/** An entry of `queueId` with sensible defaults: a pending, mergeable PR submitted at `at`. */
export function entryRecord(
  queueId: string,
  overrides: Partial<EntryRecord> & { prNumber: number },
): EntryRecord {
  entryCounter += 1;
  const at = overrides.submittedAt ?? 1_000_000;
  return {
    id: `entry-${entryCounter}`,
    queueId,
    prTitle: `PR ${overrides.prNumber}`,
    prSha: "a".repeat(40),
    prHeadBranch: `feature/${overrides.prNumber}`,
    prBaseBranch: "main",
    prAuthor: "alice",
    state: "pending",
    stateChangedAt: at,
    submittedAt: at,
    concludedAt: null,
    priorityValue: 100,
    usedDefaultPriority: true,
    noBatch: false,
    seq: entryCounter,
    readiness: {
      mergeability: "mergeable",
      baseBranchMatches: true,
      requiresImpactedTargets: false,
      impactedTargets: null,
    },
    lastReason: "ready",
    ...overrides,
  };
}

/** A transition of `entry`, by the queue unless an actor is given. */
export function transition(
  entry: Pick<EntryRecord, "id" | "queueId">,
  at: number,
  from: TransitionRecord["from"],
  to: TransitionRecord["to"],
  extra: Partial<TransitionRecord> = {},
): TransitionRecord {
  return {
    entryId: entry.id,
    queueId: entry.queueId,
    at,
    from,
    to,
    reason: extra.reason ?? "ready",
    actor: extra.actor ?? { kind: "queue" },
    runId: extra.runId ?? null,
    detail: extra.detail ?? null,
  };
}
