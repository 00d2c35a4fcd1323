/**
 * `mainline test`: which failures are quarantined and what the exit code is. Pure. A failed command
 * exits 0 only when its reports were all read, hold a failed test, the upload went through,
 * quarantining is on and every failed test is quarantined; else its own code stands (128 + signal):
 * nothing on our side can turn a failing command into a passing one.
 */
import { constants } from "node:os";

export interface CommandExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface QuarantineConfig {
  isDisabled: boolean;
  testIds: readonly string[];
}

export interface TestRunOutcome {
  command: CommandExit;
  /**
   * What the reports said; null when they were not read (none found, or no context). The ids are
   * only known (and only needed) once the upload went through.
   */
  reports: { failedTestIds: readonly string[]; complete: boolean } | null;
  /** The bundle was stored by the server. */
  uploaded: boolean;
  /** getQuarantineConfig's answer; null when it was not asked or failed. */
  quarantine: QuarantineConfig | null;
}

export interface ExitDecision {
  exitCode: number;
  /** Failed tests found quarantined (also when others were not, so the exit code stands). */
  quarantined: string[];
  /** Failed tests not quarantined. */
  notQuarantined: string[];
  /** Why the exit code is what it is, one sentence; null when the command simply succeeded. */
  reason: string | null;
}

/** 128 + the signal's number, as shells report it; 1 for an unknown signal or no code. */
export function commandExitCode(exit: CommandExit): number {
  if (exit.signal !== null) {
    const number = (constants.signals as Partial<Record<string, number>>)[exit.signal];
    return number === undefined ? 1 : 128 + number;
  }
  return exit.code ?? 1;
}

export function decideExit(outcome: TestRunOutcome): ExitDecision {
  const own = commandExitCode(outcome.command);
  const failedIds = outcome.reports?.failedTestIds ?? [];
  const quarantinedSet = new Set(
    outcome.quarantine === null || outcome.quarantine.isDisabled ? [] : outcome.quarantine.testIds,
  );
  const quarantined = failedIds.filter((id) => quarantinedSet.has(id));
  const notQuarantined = failedIds.filter((id) => !quarantinedSet.has(id));
  const keep = (reason: string): ExitDecision => ({
    exitCode: own,
    quarantined,
    notQuarantined,
    reason,
  });

  if (own === 0) return { exitCode: 0, quarantined, notQuarantined, reason: null };
  if (outcome.command.signal !== null) {
    return keep(`The command was ended by ${outcome.command.signal}.`);
  }
  if (outcome.reports === null) return keep("No test report was read.");
  if (!outcome.reports.complete) {
    return keep("Some test reports could not be read, so not every failure is known.");
  }
  if (!outcome.uploaded) return keep("The results were not uploaded.");
  if (failedIds.length === 0) return keep("The reports hold no failed test.");
  if (outcome.quarantine === null) return keep("The quarantine lookup failed.");
  if (outcome.quarantine.isDisabled) {
    return keep("Quarantining is disabled for this repository.");
  }
  if (notQuarantined.length > 0) {
    return keep(
      `${notQuarantined.length} of ${failedIds.length} failed test(s) are not quarantined.`,
    );
  }
  return {
    exitCode: 0,
    quarantined,
    notQuarantined,
    reason: `All ${failedIds.length} failed test(s) are quarantined.`,
  };
}
