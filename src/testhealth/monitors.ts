/**
 * Health monitors and their settings. Pure data and rules: which runs a monitor looks at, and the
 * defaults a repository starts with.
 */
export type HealthStatus = "healthy" | "flaky" | "broken";
export type MonitorClassification = Exclude<HealthStatus, "healthy">;

/** Which branches a monitor watches: the repository's stable or merge-queue branches, or globs. */
export type BranchScope = "stable" | "merge_queue" | "any" | { globs: string[] };

export interface PassOnRetryMonitor {
  enabled: boolean;
  /** Days without a new detection after which the monitor resolves. */
  recoveryDays: number;
}

export interface FailureRateMonitor {
  id: string;
  enabled: boolean;
  classification: MonitorClassification;
  scope: BranchScope;
  windowHours: number;
  /** Fractions 0..1: activate at or above `activation`, resolve below `resolution`. */
  activation: number;
  resolution: number;
  minRuns: number;
}

export interface FailureCountMonitor {
  id: string;
  enabled: boolean;
  classification: MonitorClassification;
  scope: BranchScope;
  /** Activates at `failures` or more failures within the window. */
  failures: number;
  windowHours: number;
  /** Resolves after this long without a failure (at least the window). */
  resolutionHours: number;
}

export interface MonitorSettings {
  /** Globs (`*` matches anything, `/` included; `?` one character). */
  stableBranches: string[];
  mergeQueueBranches: string[];
  passOnRetry: PassOnRetryMonitor;
  failureRate: FailureRateMonitor[];
  failureCount: FailureCountMonitor[];
}

export const DEFAULT_MONITOR_SETTINGS: Readonly<MonitorSettings> = Object.freeze({
  stableBranches: ["main", "master"],
  mergeQueueBranches: ["mainline-merge/*", "trunk-merge/*", "gh-readonly-queue/*", "gtmq_*"],
  passOnRetry: { enabled: true, recoveryDays: 7 },
  failureRate: [
    {
      id: "broken-on-stable",
      enabled: true,
      classification: "broken",
      scope: "stable",
      windowHours: 24,
      activation: 0.9,
      resolution: 0.5,
      minRuns: 5,
    },
    {
      id: "flaky-on-stable",
      enabled: true,
      classification: "flaky",
      scope: "stable",
      windowHours: 24,
      activation: 0.2,
      resolution: 0.1,
      minRuns: 10,
    },
    {
      id: "flaky-in-merge-queue",
      enabled: true,
      classification: "flaky",
      scope: "merge_queue",
      windowHours: 12,
      activation: 0.15,
      resolution: 0.05,
      minRuns: 5,
    },
  ],
  failureCount: [],
} satisfies MonitorSettings);

const globCache = new Map<string, RegExp>();

/** Trunk's branch globs: `*` is any text (slashes too), `?` one character, the rest literal. */
export function branchGlob(glob: string): RegExp {
  let compiled = globCache.get(glob);
  if (!compiled) {
    const source = glob
      .split("")
      .map((ch) => (ch === "*" ? ".*" : ch === "?" ? "." : ch.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
      .join("");
    compiled = new RegExp(`^${source}$`);
    globCache.set(glob, compiled);
  }
  return compiled;
}

export function matchesAny(branch: string, globs: readonly string[]): boolean {
  return globs.some((glob) => branchGlob(glob).test(branch));
}

export function inScope(branch: string, scope: BranchScope, settings: MonitorSettings): boolean {
  if (scope === "any") return true;
  if (scope === "stable") return matchesAny(branch, settings.stableBranches);
  if (scope === "merge_queue") return matchesAny(branch, settings.mergeQueueBranches);
  return matchesAny(branch, scope.globs);
}
