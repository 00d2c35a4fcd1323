/**
 * What the built-in CI runner stores about its runs: enough to show them (checks, conclusions,
 * log files) and to start again after a crash the runs that had not finished. Implemented over
 * the database by `db/stores/ci-runs.ts`.
 */
import type { CheckConclusion, CiRunRequest } from "./providers.js";

export type CiRunStatus = "queued" | "running" | "passed" | "failed" | "cancelled" | "error";

export interface CiCheckRecord {
  name: string;
  /** `queued`/`running` until it ends, then its conclusion. */
  status: "queued" | "running" | CheckConclusion;
  exitCode: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  /** Relative to the data directory. */
  logPath: string | null;
}

export interface CiRunRecord {
  queueId: string;
  runId: string;
  /** The request as the driver made it (a restarted runner starts the run again from it). */
  request: CiRunRequest;
  status: CiRunStatus;
  checks: CiCheckRecord[];
  /** Set when the run could not start (`config_parsing_failure`, `no_required_statuses`). */
  error: { reason: string; message: string } | null;
  /** Every failing test was quarantined or known flaky (from test health). */
  flakyOnly: boolean;
  createdAt: number;
  finishedAt: number | null;
  /**
   * The runner process working on an unfinished run, while `leaseUntil` (epoch ms) lasts: it
   * renews the lease as it works, so another process's `resume()` leaves the run alone, and
   * takes it over only once the lease ran out (that runner stopped or died).
   */
  owner: string | null;
  leaseUntil: number;
}

export interface CiRunRecords {
  /** Stores a new run; false (and nothing changes) when the run is already known. */
  create(record: CiRunRecord): Promise<boolean>;
  get(queueId: string, runId: string): Promise<CiRunRecord | undefined>;
  /** Replaces the run's status, checks, error, flakyOnly and finishedAt. */
  update(record: CiRunRecord): Promise<void>;
  /** Runs still `queued` or `running`, oldest first. */
  unfinished(): Promise<CiRunRecord[]>;
  /**
   * Takes over an unfinished run whose lease ran out (`leaseUntil < now`); false when another
   * runner holds it or it has finished.
   */
  claim(
    queueId: string,
    runId: string,
    owner: string,
    now: number,
    until: number,
  ): Promise<boolean>;
  /** Extends the leases of every unfinished run `owner` holds. */
  renew(owner: string, until: number): Promise<void>;
  /** Ends `owner`'s leases at once (a graceful stop): the next runner may take the runs. */
  release(owner: string): Promise<void>;
}
