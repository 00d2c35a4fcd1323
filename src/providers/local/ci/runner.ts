/**
 * The built-in CI runner: runs the checks of `.mainline.yml` at the tested commit, on this machine,
 * in a checkout of the run's own, sharing `parallelism` slots, and reports conclusions to the queue
 * driver. A required check that fails decides the run: the others are stopped. A localization run
 * gets the batch run's failed tests in a file and starts its failed checks first (fail first,
 * docs/fail-first.md). Every run is recorded before anything happens, so that a restarted server
 * can `resume()` it. Logs: `{dataDir}/ci/logs/{queueId}/{runId}/{n}-{check}.log`.
 */
import { randomUUID } from "node:crypto";
import { appendFile, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { systemClock, type Clock } from "../../../lib/clock.js";
import { readTail } from "../../../lib/file-tail.js";
import { expandGlobs } from "../../../lib/glob.js";
import type { TransitionReason } from "../../../mergequeue/model.js";
import { failedTestsOf, type FailedTestsSource } from "../../../mergequeue/fail-first.js";
import { failedTestsFileText } from "../../../testhealth/failed-tests-file.js";
import {
  judgeChecks,
  type CheckConclusion,
  type CiProvider,
  type CiResultListener,
  type CiRunRequest,
  type CiRunResult,
  type RequiredStatusesSource,
} from "../../../mergequeue/providers.js";
import type { Workspace, Workspaces } from "./checkouts.js";
import type { CheckDefinition } from "../../../mergequeue/repo-config.js";
import { resolveRunConfig, type FileRead } from "../../../mergequeue/run-config.js";
import { checkEnvironment, type FailFirstEnvironment } from "./environment.js";
import { runCommand } from "./process.js";
import type {
  CiCheckRecord,
  CiRunRecord,
  CiRunRecords,
} from "../../../mergequeue/ci-run-records.js";
import { Slots } from "./slots.js";
import { MINUTE_MS } from "../../../lib/time.js";
import { type OwnedRepoRef } from "../../../organizations/repositories.js";

export interface CiRunnerLogger {
  warn(message: string): void;
  error(message: string, error?: unknown): void;
}

export interface TestResultsInput {
  request: CiRunRequest;
  check: string;
  /** Absolute paths of the JUnit files the check's `junit_paths` matched. */
  files: string[];
  /** The run's checkout: report paths under it count relative to it. */
  root: string;
}

/** Hands a check's JUnit reports to test health; says whether every failure was known flaky. */
export type TestResultsHandler = (input: TestResultsInput) => Promise<{ flakyOnly: boolean }>;

export interface LocalCiRunnerOptions {
  dataDir: string;
  records: CiRunRecords;
  /** The git host's `readFile`. */
  readFile(repo: OwnedRepoRef, sha: string, file: string): Promise<string | undefined>;
  /** Where runs get their working trees (`checkouts.ts`: fresh per run, or pooled). */
  workspaces: Workspaces;
  /** Checks running at once, across all runs. Default 2. */
  parallelism?: number;
  clock?: Clock;
  testResults?: TestResultsHandler;
  logger?: CiRunnerLogger;
  /** This runner in the runs' leases (default: a random id). */
  owner?: string;
  /**
   * How long a run stays this runner's without a renewal (default 30 s). Leases are renewed,
   * and runs whose runner stopped or died taken over, every third of it once `resume()` ran.
   */
  leaseMs?: number;
  /**
   * Whether an error means "the storage is away for now" (the run is started again later, a
   * result handed over again) rather than a failure of the checks. Default: never.
   */
  isStorageUnavailable?: (error: unknown) => boolean;
  /**
   * Where a localization run finds the tests that failed in its batch run (test health); without
   * it the failed-tests file of such a run is empty.
   */
  failedTests?: FailedTestsSource;
  /**
   * How long a localization run waits, before its checks start, for uploads still being
   * processed to name the batch run's failed tests (default 20 s); then it runs with what is known.
   */
  failedTestsWaitMs?: number;
}

/** How often a localization run asks again while the batch run's uploads are being processed. */
const FAILED_TESTS_POLL_MS = 250;

/** Why a run's signal was aborted: a cancelled run is finished; a stopped one is resumed later. */
type AbortReason = "cancel" | "stop";

/** The name of a localization run's failed-tests file, beside its logs. */
const FAILED_TESTS_FILE = "failed-tests.tsv";

type Prepared =
  | {
      ok: true;
      checks: CheckDefinition[];
      required: { statuses: string[]; source: RequiredStatusesSource };
    }
  | { ok: false; error: { reason: TransitionReason; message: string } };

/** A file or directory name made of safe characters only (ids and check names are free text). */
function safeName(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_");
}

function runKey(queueId: string, runId: string): string {
  return JSON.stringify([queueId, runId]);
}

/** Where a run keeps its logs (and a localization run its failed-tests file), data-relative. */
function runDir(request: CiRunRequest): string {
  return path.join("ci", "logs", safeName(request.queueId), safeName(request.runId));
}

/** The checks' records before they run, with their log paths (relative to the data directory). */
function plannedChecks(request: CiRunRequest, checks: CheckDefinition[]): CiCheckRecord[] {
  const logDir = runDir(request);
  return checks.map((check, index) => ({
    name: check.name,
    status: "queued",
    exitCode: null,
    startedAt: null,
    finishedAt: null,
    logPath: path.join(logDir, `${String(index + 1)}-${safeName(check.name)}.log`),
  }));
}

function concluded(check: CiCheckRecord): check is CiCheckRecord & { status: CheckConclusion } {
  return check.status !== "queued" && check.status !== "running";
}

/** A check that ended and did not pass. */
function failing(check: CiCheckRecord): boolean {
  return concluded(check) && check.status !== "success" && check.status !== "skipped";
}

/**
 * The order the checks take the runner's slots in: those a localization run runs first (they
 * failed in its batch run), then the others, each group as `.mainline.yml` lists them.
 */
export function checkOrder(checks: readonly CheckDefinition[], first: readonly string[]): number[] {
  const indexes = checks.map((_, index) => index);
  const early = new Set(first);
  return [
    ...indexes.filter((i) => early.has(checks[i]?.name ?? "")),
    ...indexes.filter((i) => !early.has(checks[i]?.name ?? "")),
  ];
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Writes a run's record in the order its changes were made (checks finish concurrently). */
class RecordWriter {
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly records: CiRunRecords,
    readonly record: CiRunRecord,
  ) {}

  save(): Promise<void> {
    const snapshot = structuredClone(this.record);
    const next = this.chain.then(() => this.records.update(snapshot));
    this.chain = next.catch(() => undefined);
    return next;
  }
}

export class LocalCiRunner implements CiProvider {
  private readonly listeners = new Set<CiResultListener>();
  private readonly active = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private readonly slots: Slots;
  private readonly clock: Clock;
  private readonly owner: string;
  private readonly leaseMs: number;
  private leaseTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  private storageUnavailable(error: unknown): boolean {
    return this.options.isStorageUnavailable?.(error) ?? false;
  }

  constructor(private readonly options: LocalCiRunnerOptions) {
    this.slots = new Slots(options.parallelism ?? 2);
    this.clock = options.clock ?? systemClock;
    this.owner = options.owner ?? randomUUID();
    this.leaseMs = options.leaseMs ?? 30_000;
  }

  /** Records the run and starts it in the background; a run already known is left alone. */
  async start(request: CiRunRequest): Promise<void> {
    const record: CiRunRecord = {
      queueId: request.queueId,
      runId: request.runId,
      request,
      status: "queued",
      checks: [],
      error: null,
      flakyOnly: false,
      createdAt: this.clock.now(),
      finishedAt: null,
      // A stopped runner only records the run: it is free for the next start to take.
      owner: this.stopped ? null : this.owner,
      leaseUntil: this.stopped ? 0 : this.clock.now() + this.leaseMs,
    };
    if (await this.options.records.create(record)) this.launch(record);
  }

  /** Kills the run's checks and records it `cancelled`; emits nothing. */
  async cancel(queueId: string, runId: string): Promise<void> {
    const active = this.active.get(runKey(queueId, runId));
    if (active !== undefined) {
      active.controller.abort("cancel" satisfies AbortReason);
      await active.done;
      return;
    }
    // Left unfinished by an earlier process: make sure `resume()` does not start it again.
    const record = await this.options.records.get(queueId, runId);
    if (record?.status !== "queued" && record?.status !== "running") return;
    await this.options.records.update({
      ...record,
      status: "cancelled",
      finishedAt: this.clock.now(),
    });
  }

  onResult(listener: CiResultListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Starts again, from their stored requests, the unfinished runs no runner holds (an earlier
   * process stopped or died), and from then on renews this runner's leases and takes over the
   * runs of runners that stop renewing theirs.
   */
  async resume(): Promise<void> {
    await this.adoptOrphans();
    if (this.leaseTimer !== null || this.stopped) return;
    this.leaseTimer = setInterval(
      () => {
        void this.keepLeases();
      },
      Math.max(10, Math.floor(this.leaseMs / 3)),
    );
    this.leaseTimer.unref();
  }

  private async keepLeases(): Promise<void> {
    try {
      if (this.active.size > 0) {
        await this.options.records.renew(this.owner, this.clock.now() + this.leaseMs);
      }
      await this.adoptOrphans();
    } catch (error) {
      this.options.logger?.error("ci runner: renewing leases failed", error);
    }
  }

  private async adoptOrphans(): Promise<void> {
    if (this.stopped) return;
    for (const record of await this.options.records.unfinished()) {
      if (this.active.has(runKey(record.queueId, record.runId))) continue;
      const now = this.clock.now();
      const until = now + this.leaseMs;
      // A run of this runner that nothing here executes any more (it failed on a database fault)
      // is started again; its lease is this runner's and renewed with the others, so no other
      // runner would take it.
      const ours = record.owner === this.owner;
      if (
        !ours &&
        !(await this.options.records.claim(record.queueId, record.runId, this.owner, now, until))
      )
        continue;
      this.launch({
        ...record,
        status: "queued",
        checks: [],
        error: null,
        flakyOnly: false,
        finishedAt: null,
        owner: this.owner,
        leaseUntil: until,
      });
    }
  }

  /**
   * Kills the running checks and waits for every run to settle. The runs stay `running` in the
   * records, their leases ended, for the next `resume()` (here or in another process); runs
   * started afterwards only get recorded.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.leaseTimer !== null) clearInterval(this.leaseTimer);
    this.leaseTimer = null;
    const runs = [...this.active.values()];
    for (const run of runs) run.controller.abort("stop" satisfies AbortReason);
    await Promise.all(runs.map((run) => run.done));
    try {
      await this.options.records.release(this.owner);
    } catch (error) {
      // The leases then run out by themselves; stopping must not fail for it.
      this.options.logger?.error("ci runner: ending the leases failed", error);
    }
  }

  /** The absolute path of a check's log, once the run has planned its checks. */
  async logPath(queueId: string, runId: string, check: string): Promise<string | undefined> {
    const record = await this.options.records.get(queueId, runId);
    const logPath = record?.checks.find((c) => c.name === check)?.logPath;
    return logPath == null ? undefined : path.join(this.options.dataDir, logPath);
  }

  /** A check's log as text; undefined when there is none (yet). */
  async readLog(queueId: string, runId: string, check: string): Promise<string | undefined> {
    const file = await this.logPath(queueId, runId, check);
    if (file === undefined) return undefined;
    try {
      return await readFile(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  /** The end of a check's log (its last `bytes`); undefined when there is none (yet). */
  async readLogTail(
    queueId: string,
    runId: string,
    check: string,
    bytes = 64 * 1024,
  ): Promise<string | undefined> {
    const file = await this.logPath(queueId, runId, check);
    return file === undefined ? undefined : readTail(file, bytes);
  }

  private launch(record: CiRunRecord): void {
    const key = runKey(record.queueId, record.runId);
    if (this.stopped || this.active.has(key)) return;
    const controller = new AbortController();
    const done = this.execute(new RecordWriter(this.options.records, record), controller.signal)
      .catch((error: unknown) => {
        this.options.logger?.error(`ci run ${record.runId}: failed`, error);
      })
      .finally(() => this.active.delete(key));
    this.active.set(key, { controller, done });
  }

  private async execute(writer: RecordWriter, signal: AbortSignal): Promise<void> {
    const { record } = writer;
    const { request } = record;
    record.status = "running";
    await writer.save();
    const prepared = await this.prepare(request);
    if (await this.settleIfAborted(writer, signal)) return;
    if (!prepared.ok) {
      const { queueId, runId } = request;
      await this.emit({ queueId, runId, checks: [], error: prepared.error });
      record.status = "error";
      record.error = prepared.error;
      record.finishedAt = this.clock.now();
      await writer.save();
      return;
    }
    record.checks = plannedChecks(request, prepared.checks);
    await writer.save();
    const flakyByCheck = new Map<string, boolean>();
    let workspace: Workspace | undefined;
    // A required check that fails decides the run: the checks still queued or running stop.
    const decision = new AbortController();
    const checkSignal = AbortSignal.any([signal, decision.signal]);
    try {
      const [acquired, failFirst] = await Promise.all([
        this.options.workspaces.acquire(request.repo, request.sha),
        this.failFirstEnvironment(request, signal),
      ]);
      workspace = acquired;
      const workDir = workspace.dir;
      const required = new Set(prepared.required.statuses);
      let decidedBy: string | undefined;
      // Decided before the failed check's slot is free, so that no waiting check starts in it.
      const ended = (check: CheckDefinition, state: CiCheckRecord): void => {
        if (decidedBy !== undefined || signal.aborted) return;
        if (!required.has(check.name) || !failing(state)) return;
        decidedBy = check.name;
        decision.abort("decided");
      };
      // Every check settles before the checkout goes, even when one of them could not start.
      const ran = await Promise.allSettled(
        checkOrder(prepared.checks, request.failFirst?.checks ?? []).map(async (index) => {
          const check = prepared.checks[index] as CheckDefinition;
          await this.runCheck(writer, check, index, workDir, checkSignal, { failFirst, ended });
          const state = record.checks[index];
          if (state === undefined || signal.aborted) return;
          if (
            decidedBy !== undefined &&
            decidedBy !== check.name &&
            state.status === "cancelled" &&
            state.startedAt !== null &&
            state.logPath !== null
          ) {
            const log = path.join(this.options.dataDir, state.logPath);
            await appendFile(
              log,
              `[mainline] stopped: the required check "${decidedBy}" failed, which decided the run\n`,
            );
          }
        }),
      );
      const failed = ran.find((outcome) => outcome.status === "rejected");
      if (failed !== undefined) throw failed.reason;
      // A check stopped half-way has half a report: only what ran to its end goes to test health.
      const whole = prepared.checks.filter((_, index) => {
        const state = record.checks[index];
        return decidedBy === undefined || state?.status !== "cancelled";
      });
      await this.collectTestResults(request, whole, workDir, flakyByCheck, signal);
    } catch (error) {
      if (await this.settleIfAborted(writer, signal)) return;
      // The database went away (recording a check, reporting test results): not the checks'
      // fault. The run stays unfinished and this runner starts it again at its next scan.
      if (this.storageUnavailable(error)) throw error;
      // The checks could not run (checkout failed…): they fail, so the run cannot pass untested.
      this.options.logger?.error(`ci run ${request.runId}: could not run the checks`, error);
      for (const check of record.checks) {
        if (!concluded(check)) check.status = "failure";
      }
      record.error = { reason: "runner_failure", message: errorMessage(error) };
    } finally {
      await workspace?.release();
    }
    if (await this.settleIfAborted(writer, signal)) return;
    await this.finish(writer, prepared, flakyByCheck);
  }

  /** Reads and resolves the configuration; an error result when the run cannot start. */
  private async prepare(request: CiRunRequest): Promise<Prepared> {
    const read = (file: string) => this.readRepoFile(request, file);
    const resolved = await resolveRunConfig(read, request.requiredStatuses, request.sha);
    if (!resolved.ok) return { ok: false, error: resolved.error };
    return { ok: true, checks: resolved.checks, required: resolved.required };
  }

  private async readRepoFile(request: CiRunRequest, file: string): Promise<FileRead> {
    try {
      return { ok: true, text: await this.options.readFile(request.repo, request.sha, file) };
    } catch (error) {
      return {
        ok: false,
        message: `could not read ${file} at ${request.sha}: ${errorMessage(error)}`,
      };
    }
  }

  /**
   * A localization run's failed-tests file (written before its checks start, empty when nothing
   * is known) and the variables that name it; undefined for any other run. Never fails the run:
   * what cannot be read or written is a warning, and the checks run all the same.
   */
  private async failFirstEnvironment(
    request: CiRunRequest,
    signal: AbortSignal,
  ): Promise<FailFirstEnvironment | undefined> {
    const failFirst = request.failFirst;
    if (failFirst === undefined) return undefined;
    const { logger } = this.options;
    let text = "";
    try {
      text = failedTestsFileText(await this.knownFailedTests(request, signal));
    } catch (error) {
      logger?.warn(
        `ci run ${request.runId}: the failed tests of run ${failFirst.fromRunId} could not be read (${errorMessage(error)}); its failed-tests file is empty`,
      );
    }
    const file = path.join(this.options.dataDir, runDir(request), FAILED_TESTS_FILE);
    try {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, text);
    } catch (error) {
      logger?.warn(
        `ci run ${request.runId}: the failed-tests file could not be written (${errorMessage(error)})`,
      );
      return { file: undefined, checks: failFirst.checks };
    }
    return { file, checks: failFirst.checks };
  }

  /**
   * The tests that failed in the batch run, as test health knows them. Its reports were handed
   * over before its result, but may still be being processed: it asks again for a while.
   */
  private async knownFailedTests(request: CiRunRequest, signal: AbortSignal) {
    const { failedTests: source, logger } = this.options;
    const failFirst = request.failFirst;
    if (source === undefined || failFirst === undefined) return [];
    const waitMs = this.options.failedTestsWaitMs ?? 20_000;
    const deadline = Date.now() + waitMs;
    for (;;) {
      const answer = await failedTestsOf(source, request.repo, failFirst);
      if (!answer.waiting || signal.aborted) return answer.tests;
      if (Date.now() >= deadline) {
        logger?.warn(
          `ci run ${request.runId}: uploads of run ${failFirst.fromRunId}'s time are still being processed after ${String(waitMs)} ms; its checks start with the ${String(answer.tests.length)} failed tests known`,
        );
        return answer.tests;
      }
      await new Promise((resolve) => setTimeout(resolve, FAILED_TESTS_POLL_MS));
    }
  }

  private async runCheck(
    writer: RecordWriter,
    check: CheckDefinition,
    index: number,
    workDir: string,
    signal: AbortSignal,
    how: {
      failFirst: FailFirstEnvironment | undefined;
      /** Told of the check's conclusion while it still holds its slot. */
      ended: (check: CheckDefinition, state: CiCheckRecord) => void;
    },
  ): Promise<void> {
    const state = writer.record.checks[index];
    if (state === undefined || state.logPath === null) throw new Error(`no log for ${check.name}`);
    const logPath = path.join(this.options.dataDir, state.logPath);
    if (!(await this.slots.acquire(signal))) {
      state.status = "cancelled";
      return;
    }
    try {
      state.status = "running";
      state.startedAt = this.clock.now();
      await writer.save();
      const outcome = await runCommand({
        command: check.run,
        cwd: workDir,
        env: checkEnvironment(process.env, writer.record.request, check.name, how.failFirst),
        timeoutMs: check.timeoutMinutes * MINUTE_MS,
        logPath,
        signal,
      });
      state.status = outcome.conclusion;
      state.exitCode = outcome.exitCode;
      state.finishedAt = this.clock.now();
      how.ended(check, state);
      await writer.save();
    } finally {
      this.slots.release();
    }
  }

  /** Hands each check's JUnit files to test health; an unanswered check counts as not flaky. */
  private async collectTestResults(
    request: CiRunRequest,
    checks: CheckDefinition[],
    workDir: string,
    flakyByCheck: Map<string, boolean>,
    signal: AbortSignal,
  ): Promise<void> {
    const { testResults, logger } = this.options;
    if (testResults === undefined || signal.aborted) return;
    for (const check of checks) {
      if (check.junitPaths.length === 0) continue;
      const { files } = await expandGlobs(check.junitPaths, workDir);
      // Patterns may say `..` or be absolute; only the checkout's own files are reports.
      const inside = files.filter((file) => file.startsWith(workDir + path.sep));
      if (inside.length === 0) continue;
      try {
        const answer = await testResults({
          request,
          check: check.name,
          files: inside,
          root: workDir,
        });
        flakyByCheck.set(check.name, answer.flakyOnly);
      } catch (error) {
        logger?.error(`ci run ${request.runId}: test results of ${check.name} not taken`, error);
      }
    }
  }

  private async finish(
    writer: RecordWriter,
    prepared: Extract<Prepared, { ok: true }>,
    flakyByCheck: Map<string, boolean>,
  ): Promise<void> {
    const { record } = writer;
    const checks = record.checks
      .filter(concluded)
      .map((check) => ({ name: check.name, conclusion: check.status }));
    const judged = judgeChecks(prepared.required.statuses, checks);
    // Retrying is only worth it when test health vouched for every failing required check.
    const flakyOnly =
      !judged.passed && judged.failing.every((name) => flakyByCheck.get(name) === true);
    // The result is handed over (stored by the queue) before the run counts as finished: a crash
    // in between runs it again on resume, and the queue ignores the repeated result.
    await this.emit({
      queueId: record.queueId,
      runId: record.runId,
      checks,
      requiredStatuses: prepared.required,
      ...(flakyOnly ? { flakyOnly } : {}),
    });
    record.status = record.error !== null ? "error" : judged.passed ? "passed" : "failed";
    record.flakyOnly = flakyOnly;
    record.finishedAt = this.clock.now();
    await writer.save();
  }

  /**
   * True when the run was aborted, after recording that: a cancelled run is finished for good; a
   * stopped one stays `running` for `resume()`.
   */
  private async settleIfAborted(writer: RecordWriter, signal: AbortSignal): Promise<boolean> {
    if (!signal.aborted) return false;
    if ((signal.reason as AbortReason) === "stop") return true;
    const { record } = writer;
    for (const check of record.checks) {
      if (!concluded(check)) check.status = "cancelled";
    }
    record.status = "cancelled";
    record.finishedAt = this.clock.now();
    await writer.save();
    return true;
  }

  /**
   * Hands the result to the listeners (the queue's driver stores it in its inbox). While the
   * database is away the hand-over is retried, so that the run is not recorded finished with
   * its result lost; a runner that stops meanwhile leaves the run unfinished, for the next start.
   */
  private async emit(result: CiRunResult): Promise<void> {
    await Promise.all(
      [...this.listeners].map(async (listener) => {
        for (let wait = 250; ; wait = Math.min(wait * 2, 2_000)) {
          try {
            await listener(result);
            return;
          } catch (error) {
            if (!this.storageUnavailable(error)) {
              this.options.logger?.error(`ci run ${result.runId}: a result listener failed`, error);
              return;
            }
            if (this.stopped) throw error;
            this.options.logger?.warn(
              `ci run ${result.runId}: the database is unavailable; handing the result over again`,
            );
            await new Promise((resolve) => setTimeout(resolve, wait));
          }
        }
      }),
    );
  }
}
