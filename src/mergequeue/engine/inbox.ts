/**
 * The engine's command inbox: commands are stored before anyone acts on them (an acknowledged
 * command survives a crash), commands handed in together are stored together (the shared group
 * writer), and a caller waiting for the driver gets its answer from a step of this process as
 * soon as that step's commit returned, else from the stored answer.
 */
import type { Clock } from "../../lib/clock.js";
import { GroupWriter } from "../../lib/group-writer.js";
import type { QueueCommand } from "../model.js";
import type { CiRunResult } from "../providers.js";
import type { CommandResult, RuntimeRecords } from "../records.js";

/** A CI result on its way through the command inbox (so that the lease holder applies it). */
interface CiResultCommand {
  type: "ci_result";
  result: CiRunResult;
}

/**
 * The commands answered once stored (`accept`): a submission the API checked against what the git
 * host has stored, and impacted targets, which the planner never refuses (targets for a pull
 * request it does not hold are kept for when it is submitted).
 */
export type AcceptedCommand = Extract<
  QueueCommand,
  { type: "submit" } | { type: "set_impacted_targets" }
>;

/**
 * An accepted command as stored: the driver applies it whatever it finds now; a pull request
 * closed or merged meanwhile shows as such in its timeline instead of refusing the submission.
 */
type Acknowledged = AcceptedCommand & { acknowledged: true };

export type InboxPayload = QueueCommand | Acknowledged | CiResultCommand;

export interface InboxOptions {
  /** How long `execute` waits for the queue's driver to apply a command. */
  commandTimeoutMs: number;
  /** When a stored answer is first read if no step of this process handed it over. */
  answerPollMs: number;
}

export interface InboxDeps {
  runtime: Pick<RuntimeRecords, "enqueueCommands" | "command">;
  clock: Clock;
  /** Wakes a queue's driver: a step now, or right after the one in progress. */
  kick(queueId: string): void;
}

/** A command on its way into the inbox. */
interface Incoming {
  queueId: string;
  payload: InboxPayload;
  /** Set when the caller waits for the driver's answer. */
  answer: ((result: CommandResult) => void) | null;
}

/** At most this many commands in one inbox transaction. */
const INBOX_BATCH = 200;

export class CommandInbox {
  /** Callers of `execute` waiting in this process, by command id: answered at the commit. */
  private readonly waiters = new Map<number, (result: CommandResult) => void>();
  /**
   * Answers a step of this process gave while commands were being stored, to commands with no
   * waiter yet: a step can read a command once it is committed, before the store has handed its
   * id back (on PostgreSQL the insert's answer may still be on its way while a step on another
   * connection reads it). Taken by the write as it sets the waiters.
   */
  private readonly earlyAnswers = new Map<number, CommandResult>();
  /** Whether an inbox transaction is under way. */
  private writing = false;
  /**
   * Commands handed in during one turn of the event loop are stored in one transaction (one wait
   * for the disk for all of them); a group that fails is stored again one by one, so that a
   * command that cannot be stored (its queue was just deleted) fails alone.
   */
  private readonly writer = new GroupWriter<Incoming, number>({
    write: (batch) => this.write(batch),
    take: (waiting) => Math.min(waiting.length, INBOX_BATCH),
    aloneOnFailure: true,
  });

  constructor(
    private readonly deps: InboxDeps,
    private readonly options: InboxOptions,
  ) {}

  /**
   * Stores a command and answers what the queue's driver said; the stored answer is read only
   * when no step of this process hands it over in time (another process drives the queue, or a
   * kick was lost).
   */
  async execute(queueId: string, command: QueueCommand): Promise<CommandResult> {
    let answer!: (result: CommandResult) => void;
    const answered = new Promise<CommandResult>((resolve) => {
      answer = resolve;
    });
    const id = await this.store(queueId, command, answer);
    try {
      const result = await this.waitForAnswer(queueId, id, answered, this.options.commandTimeoutMs);
      if (result) return result;
      throw new Error(`the merge queue did not apply command ${id} in time`);
    } finally {
      this.waiters.delete(id);
    }
  }

  /**
   * Stores a command and returns once it is durable, without waiting for the driver: reads show
   * it until the driver has applied it (they look at the queue's pending commands).
   */
  async accept(queueId: string, command: AcceptedCommand): Promise<void> {
    await this.store(queueId, { ...command, acknowledged: true }, null);
  }

  /** Stores a command nobody waits on (a change on the git host, a CI result); answers its id. */
  enqueue(queueId: string, payload: InboxPayload): Promise<number> {
    return this.store(queueId, payload, null);
  }

  /** Hands the answers a step of this process committed to their callers. */
  answer(applied: readonly { id: number; result: CommandResult }[]): void {
    for (const { id, result } of applied) {
      const waiter = this.waiters.get(id);
      if (waiter) {
        waiter(result);
        this.waiters.delete(id);
      } else if (this.writing) {
        // Perhaps one of this process's, its store not yet returned (see `earlyAnswers`).
        this.earlyAnswers.set(id, result);
      }
    }
  }

  /** Resolves once every command handed in so far is stored (or has failed). */
  drained(): Promise<void> {
    return this.writer.idle();
  }

  /** Stores a command with those handed in alongside it; resolves with its id once durable. */
  private store(
    queueId: string,
    payload: InboxPayload,
    answer: ((result: CommandResult) => void) | null,
  ): Promise<number> {
    return this.writer.write({ queueId, payload, answer });
  }

  /** One inbox transaction; sets the waiters and wakes the queues' drivers before answering. */
  private async write(batch: readonly Incoming[]): Promise<number[]> {
    this.writing = true;
    try {
      const ids = await this.deps.runtime.enqueueCommands(
        batch.map(({ queueId, payload }) => ({ queueId, payload })),
        this.deps.clock.now(),
      );
      batch.forEach(({ answer }, i) => {
        const id = ids[i] as number;
        if (answer) this.waiters.set(id, answer);
        // Applied already: handed over once the caller has its id (after its continuation).
        const early = this.earlyAnswers.get(id);
        if (early !== undefined) {
          setImmediate(() => {
            this.waiters.get(id)?.(early);
            this.waiters.delete(id);
          });
        }
      });
      for (const queueId of new Set(batch.map((c) => c.queueId))) this.deps.kick(queueId);
      return ids;
    } finally {
      this.writing = false;
      this.earlyAnswers.clear();
    }
  }

  /**
   * A stored command's answer: handed over by a step of this process, else read from the store
   * (another process drives the queue, or a kick was lost), or null after `timeoutMs`.
   */
  private async waitForAnswer(
    queueId: string,
    id: number,
    answered: Promise<CommandResult>,
    timeoutMs: number,
  ): Promise<CommandResult | null> {
    const deadline = Date.now() + timeoutMs;
    const { answerPollMs } = this.options;
    for (let wait = answerPollMs; ; wait = Math.min(wait * 2, Math.max(answerPollMs, 1000))) {
      let timer: NodeJS.Timeout | undefined;
      const result = await Promise.race([
        answered,
        new Promise<null>((resolve) => {
          timer = setTimeout(resolve, wait, null);
        }),
      ]);
      clearTimeout(timer);
      if (result) return result;
      const record = await this.deps.runtime.command(id);
      if (record?.result) return record.result;
      if (Date.now() > deadline) return null;
      this.deps.kick(queueId);
    }
  }
}
