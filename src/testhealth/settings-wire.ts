/**
 * A repository's test-health settings on the wire (get-test-settings, update-test-settings):
 * snake_case in, snake_case out, mapped to and from `RepositoryTestSettings`. Pure: the update
 * rule (a partial patch over the current settings), every range and every cross-field rule live
 * here, so that the schema's limits and the checks below cannot drift apart.
 */
import { ApiError, type ErrorDetail } from "../lib/errors.js";
import { PASS_ON_RETRY } from "./classifier.js";
import type {
  BranchScope,
  FailureCountMonitor,
  FailureRateMonitor,
  MonitorClassification,
  MonitorSettings,
} from "./monitors.js";
import type { RepositoryTestSettings, TicketSettings } from "./settings.js";

/** The bounds the request schema publishes and `applySettingsPatch` enforces. */
export const SETTINGS_LIMITS = {
  globs: 50,
  globLength: 255,
  monitors: 20,
  /** `[A-Za-z0-9][A-Za-z0-9._-]*`, the key of the monitor's state. */
  monitorId: /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
  recoveryDays: { min: 1, max: 90 },
  windowHours: { min: 1, max: 720 },
  count: { min: 1, max: 10_000 },
  ticketBaseUrlLength: 2000,
  ticketAfterHours: { min: 0, max: 720 },
  /** A ticket connection's id (`tc_…`). */
  connectionId: /^[A-Za-z0-9_-]{1,100}$/,
} as const;

export const CLASSIFICATIONS = ["flaky", "broken"] as const;
export const NAMED_SCOPES = ["stable", "merge_queue", "any"] as const;

export type WireScope = string | { globs: string[] };

export interface WireFailureRateMonitor {
  id: string;
  enabled: boolean;
  classification: string;
  scope: WireScope;
  window_hours: number;
  activation: number;
  resolution: number;
  min_runs: number;
}

export interface WireFailureCountMonitor {
  id: string;
  enabled: boolean;
  classification: string;
  scope: WireScope;
  failures: number;
  window_hours: number;
  resolution_hours: number;
}

export interface WireTestSettings {
  stable_branches: string[];
  merge_queue_branches: string[];
  pass_on_retry: { enabled: boolean; recovery_days: number };
  failure_rate_monitors: WireFailureRateMonitor[];
  failure_count_monitors: WireFailureCountMonitor[];
  quarantining_enabled: boolean;
  auto_quarantine: boolean;
  ticket_base_url: string | null;
  pull_request_comments: boolean;
  ticket_connection_id: string | null;
  auto_ticket: WireTicketRule;
}

export interface WireTicketRule {
  flaky: boolean;
  broken: boolean;
  after_hours: number;
  require_owner: boolean;
}

/** What update-test-settings takes: any subset; `pass_on_retry` may itself be partial. */
export interface WireTestSettingsPatch {
  stable_branches?: string[];
  merge_queue_branches?: string[];
  pass_on_retry?: { enabled?: boolean; recovery_days?: number };
  failure_rate_monitors?: WireFailureRateMonitor[];
  failure_count_monitors?: WireFailureCountMonitor[];
  quarantining_enabled?: boolean;
  auto_quarantine?: boolean;
  ticket_base_url?: string | null;
  pull_request_comments?: boolean;
  ticket_connection_id?: string | null;
  auto_ticket?: Partial<WireTicketRule>;
}

export const SETTINGS_FIELDS = [
  "stable_branches",
  "merge_queue_branches",
  "pass_on_retry",
  "failure_rate_monitors",
  "failure_count_monitors",
  "quarantining_enabled",
  "auto_quarantine",
  "ticket_base_url",
  "pull_request_comments",
  "ticket_connection_id",
  "auto_ticket",
] as const satisfies readonly (keyof WireTestSettings)[];

function scopeToWire(scope: BranchScope): WireScope {
  return typeof scope === "string" ? scope : { globs: [...scope.globs] };
}

/** The settings as get-test-settings shows them. */
export function toWireSettings(settings: RepositoryTestSettings): WireTestSettings {
  const { monitors } = settings;
  return {
    stable_branches: [...monitors.stableBranches],
    merge_queue_branches: [...monitors.mergeQueueBranches],
    pass_on_retry: {
      enabled: monitors.passOnRetry.enabled,
      recovery_days: monitors.passOnRetry.recoveryDays,
    },
    failure_rate_monitors: monitors.failureRate.map((m) => ({
      id: m.id,
      enabled: m.enabled,
      classification: m.classification,
      scope: scopeToWire(m.scope),
      window_hours: m.windowHours,
      activation: m.activation,
      resolution: m.resolution,
      min_runs: m.minRuns,
    })),
    failure_count_monitors: monitors.failureCount.map((m) => ({
      id: m.id,
      enabled: m.enabled,
      classification: m.classification,
      scope: scopeToWire(m.scope),
      failures: m.failures,
      window_hours: m.windowHours,
      resolution_hours: m.resolutionHours,
    })),
    quarantining_enabled: settings.quarantine.quarantiningEnabled,
    auto_quarantine: settings.quarantine.autoQuarantine,
    ticket_base_url: settings.ticketBaseUrl,
    pull_request_comments: settings.pullRequestComments,
    ticket_connection_id: settings.tickets.connectionId,
    auto_ticket: {
      flaky: settings.tickets.rule.flaky,
      broken: settings.tickets.rule.broken,
      after_hours: settings.tickets.rule.afterHours,
      require_owner: settings.tickets.rule.requireOwner,
    },
  };
}

/** Collects every problem of a patch, so that one answer names them all. */
class Problems {
  readonly details: ErrorDetail[] = [];

  add(path: string, message: string): void {
    this.details.push({ path, message });
  }

  integer(path: string, value: number, bounds: { min: number; max: number }): void {
    if (!Number.isInteger(value) || value < bounds.min || value > bounds.max) {
      this.add(path, `must be a whole number from ${bounds.min} to ${bounds.max}`);
    }
  }

  globs(path: string, globs: readonly string[], allowEmpty: boolean): void {
    if (!allowEmpty && globs.length === 0) this.add(path, "must hold at least one glob");
    if (globs.length > SETTINGS_LIMITS.globs) {
      this.add(path, `must have at most ${SETTINGS_LIMITS.globs} items`);
    }
    globs.forEach((glob, i) => {
      if (glob.trim() === "" || glob.length > SETTINGS_LIMITS.globLength) {
        this.add(
          `${path}[${i}]`,
          `must be a non-blank glob of at most ${SETTINGS_LIMITS.globLength} characters`,
        );
      }
    });
  }
}

function classificationOf(
  problems: Problems,
  path: string,
  value: string,
): MonitorClassification | undefined {
  const lower = value.toLowerCase();
  const found = CLASSIFICATIONS.find((c) => c === lower);
  if (!found) problems.add(path, `must be one of ${CLASSIFICATIONS.join(", ")} (any letter case)`);
  return found;
}

function scopeOf(problems: Problems, path: string, value: WireScope): BranchScope | undefined {
  if (typeof value === "string") {
    const lower = value.toLowerCase();
    const found = NAMED_SCOPES.find((s) => s === lower);
    if (!found) {
      problems.add(
        path,
        `must be one of ${NAMED_SCOPES.join(", ")} (any letter case) or {"globs": [...]}`,
      );
    }
    return found;
  }
  problems.globs(`${path}.globs`, value.globs, false);
  return { globs: [...value.globs] };
}

/** `monitor` is the monitor's path; `seen` maps the ids so far to their monitors' paths. */
function checkId(problems: Problems, monitor: string, id: string, seen: Map<string, string>): void {
  const path = `${monitor}.id`;
  if (!SETTINGS_LIMITS.monitorId.test(id)) {
    problems.add(
      path,
      "must be 1-64 letters, digits, dots, dashes or underscores, starting with a letter or digit",
    );
    return;
  }
  if (id === PASS_ON_RETRY) {
    problems.add(path, `"${PASS_ON_RETRY}" is reserved for the pass-on-retry monitor`);
    return;
  }
  const earlier = seen.get(id);
  if (earlier !== undefined) {
    problems.add(path, `repeats the id "${id}" of ${earlier}; monitor ids must be unique`);
    return;
  }
  seen.set(id, monitor);
}

function rateMonitor(
  problems: Problems,
  path: string,
  m: WireFailureRateMonitor,
  seen: Map<string, string>,
): FailureRateMonitor | undefined {
  const before = problems.details.length;
  checkId(problems, path, m.id, seen);
  const classification = classificationOf(problems, `${path}.classification`, m.classification);
  const scope = scopeOf(problems, `${path}.scope`, m.scope);
  problems.integer(`${path}.window_hours`, m.window_hours, SETTINGS_LIMITS.windowHours);
  problems.integer(`${path}.min_runs`, m.min_runs, SETTINGS_LIMITS.count);
  const activationOk = Number.isFinite(m.activation) && m.activation > 0 && m.activation <= 1;
  if (!activationOk) {
    problems.add(`${path}.activation`, "must be a fraction greater than 0 and at most 1");
  }
  if (!Number.isFinite(m.resolution) || m.resolution < 0 || m.resolution > 1) {
    problems.add(`${path}.resolution`, "must be a fraction from 0 to 1");
  } else if (activationOk && m.resolution > m.activation) {
    problems.add(
      `${path}.resolution`,
      `must be at most the activation threshold (${m.activation}): a monitor resolves below it`,
    );
  }
  if (problems.details.length > before || !classification || !scope) return undefined;
  return {
    id: m.id,
    enabled: m.enabled,
    classification,
    scope,
    windowHours: m.window_hours,
    activation: m.activation,
    resolution: m.resolution,
    minRuns: m.min_runs,
  };
}

function countMonitor(
  problems: Problems,
  path: string,
  m: WireFailureCountMonitor,
  seen: Map<string, string>,
): FailureCountMonitor | undefined {
  const before = problems.details.length;
  checkId(problems, path, m.id, seen);
  const classification = classificationOf(problems, `${path}.classification`, m.classification);
  const scope = scopeOf(problems, `${path}.scope`, m.scope);
  problems.integer(`${path}.failures`, m.failures, SETTINGS_LIMITS.count);
  problems.integer(`${path}.window_hours`, m.window_hours, SETTINGS_LIMITS.windowHours);
  problems.integer(`${path}.resolution_hours`, m.resolution_hours, SETTINGS_LIMITS.windowHours);
  if (
    Number.isInteger(m.window_hours) &&
    Number.isInteger(m.resolution_hours) &&
    m.resolution_hours < m.window_hours
  ) {
    problems.add(
      `${path}.resolution_hours`,
      `must be at least window_hours (${m.window_hours}): failures inside the window keep the monitor active`,
    );
  }
  if (problems.details.length > before || !classification || !scope) return undefined;
  return {
    id: m.id,
    enabled: m.enabled,
    classification,
    scope,
    failures: m.failures,
    windowHours: m.window_hours,
    resolutionHours: m.resolution_hours,
  };
}

function ticketBaseUrlOf(problems: Problems, value: string | null): string | null {
  if (value === null) return null;
  const path = "ticket_base_url";
  if (value.length > SETTINGS_LIMITS.ticketBaseUrlLength) {
    problems.add(path, `must be at most ${SETTINGS_LIMITS.ticketBaseUrlLength} characters long`);
    return null;
  }
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol) || !/^https?:\/\//i.test(value) || !url.host) {
    problems.add(
      path,
      'must be an http(s) URL, e.g. "https://linear.app/acme/issue/", or null to remove it',
    );
    return null;
  }
  return value;
}

/**
 * The settings after a patch: absent fields stay as they are, present ones replace the current
 * value whole (lists included); `pass_on_retry` merges field by field. Throws `invalid_request`
 * naming every problem (ranges, `resolution <= activation`, unique monitor ids, ticket URL...).
 */
export function applySettingsPatch(
  current: RepositoryTestSettings,
  patch: WireTestSettingsPatch,
): RepositoryTestSettings {
  const problems = new Problems();
  const monitors: MonitorSettings = structuredClone(current.monitors);

  if (patch.stable_branches !== undefined) {
    problems.globs("stable_branches", patch.stable_branches, true);
    monitors.stableBranches = [...patch.stable_branches];
  }
  if (patch.merge_queue_branches !== undefined) {
    problems.globs("merge_queue_branches", patch.merge_queue_branches, true);
    monitors.mergeQueueBranches = [...patch.merge_queue_branches];
  }
  if (patch.pass_on_retry !== undefined) {
    const { enabled, recovery_days } = patch.pass_on_retry;
    if (enabled !== undefined) monitors.passOnRetry.enabled = enabled;
    if (recovery_days !== undefined) {
      problems.integer("pass_on_retry.recovery_days", recovery_days, SETTINGS_LIMITS.recoveryDays);
      monitors.passOnRetry.recoveryDays = recovery_days;
    }
  }

  // Ids are unique across both lists (they key the monitors' states); a list not in the patch
  // keeps its current ids, which the other list must not reuse.
  const seen = new Map<string, string>();
  const rateList = patch.failure_rate_monitors;
  const countList = patch.failure_count_monitors;
  if (rateList === undefined) {
    monitors.failureRate.forEach((m, i) => seen.set(m.id, `failure_rate_monitors[${i}]`));
  } else {
    if (rateList.length > SETTINGS_LIMITS.monitors) {
      problems.add("failure_rate_monitors", `must have at most ${SETTINGS_LIMITS.monitors} items`);
    }
    monitors.failureRate = rateList.flatMap(
      (m, i) => rateMonitor(problems, `failure_rate_monitors[${i}]`, m, seen) ?? [],
    );
  }
  if (countList === undefined) {
    monitors.failureCount.forEach((m, i) => {
      const path = `failure_count_monitors[${i}]`;
      const earlier = seen.get(m.id);
      if (earlier !== undefined) {
        problems.add(
          `${earlier}.id`,
          `repeats the id "${m.id}" of ${path}; monitor ids must be unique`,
        );
      }
    });
  } else {
    if (countList.length > SETTINGS_LIMITS.monitors) {
      problems.add("failure_count_monitors", `must have at most ${SETTINGS_LIMITS.monitors} items`);
    }
    monitors.failureCount = countList.flatMap(
      (m, i) => countMonitor(problems, `failure_count_monitors[${i}]`, m, seen) ?? [],
    );
  }

  const ticketBaseUrl =
    patch.ticket_base_url !== undefined
      ? ticketBaseUrlOf(problems, patch.ticket_base_url)
      : current.ticketBaseUrl;

  const tickets = ticketSettingsOf(problems, current.tickets, patch);

  if (problems.details.length > 0) {
    const [first] = problems.details;
    const more = problems.details.length - 1;
    throw new ApiError(
      "invalid_request",
      `Invalid settings: ${first?.path ?? "body"} ${first?.message ?? "is invalid"}${
        more > 0 ? ` (and ${more} more problem${more > 1 ? "s" : ""})` : ""
      }.`,
      problems.details,
    );
  }
  return {
    monitors,
    quarantine: {
      quarantiningEnabled: patch.quarantining_enabled ?? current.quarantine.quarantiningEnabled,
      autoQuarantine: patch.auto_quarantine ?? current.quarantine.autoQuarantine,
    },
    ticketBaseUrl,
    pullRequestComments: patch.pull_request_comments ?? current.pullRequestComments,
    tickets,
  };
}

/** `ticket_connection_id` replaces; `auto_ticket` merges field by field. */
function ticketSettingsOf(
  problems: Problems,
  current: TicketSettings,
  patch: WireTestSettingsPatch,
): TicketSettings {
  let connectionId = current.connectionId;
  if (patch.ticket_connection_id !== undefined) {
    connectionId = patch.ticket_connection_id;
    if (connectionId !== null && !SETTINGS_LIMITS.connectionId.test(connectionId)) {
      problems.add("ticket_connection_id", "must be a ticket connection's id (tc_…) or null");
    }
  }
  const rule = { ...current.rule };
  const wire = patch.auto_ticket;
  if (wire !== undefined) {
    if (wire.flaky !== undefined) rule.flaky = wire.flaky;
    if (wire.broken !== undefined) rule.broken = wire.broken;
    if (wire.require_owner !== undefined) rule.requireOwner = wire.require_owner;
    if (wire.after_hours !== undefined) {
      problems.integer(
        "auto_ticket.after_hours",
        wire.after_hours,
        SETTINGS_LIMITS.ticketAfterHours,
      );
      rule.afterHours = wire.after_hours;
    }
  }
  const touched = wire !== undefined || patch.ticket_connection_id !== undefined;
  if (touched && (rule.flaky || rule.broken) && connectionId === null) {
    problems.add(
      "auto_ticket",
      "needs a ticket connection: set ticket_connection_id too (mainline tickets list shows them)",
    );
  }
  return { connectionId, rule };
}

/** Whether a patch names any setting at all (an empty one changes nothing and writes nothing). */
export function isEmptyPatch(patch: WireTestSettingsPatch): boolean {
  return SETTINGS_FIELDS.every((field) => patch[field] === undefined);
}
