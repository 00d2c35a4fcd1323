import { DEFAULT_MONITOR_SETTINGS, type MonitorSettings } from "./monitors.js";
import type { QuarantineSettings } from "./quarantine.js";

/** A repository's test-health settings: monitors, quarantine switches, tickets. */
export interface RepositoryTestSettings {
  monitors: MonitorSettings;
  quarantine: QuarantineSettings;
  /** Prefix for ticket ids that are not URLs, e.g. `https://linear.app/acme/issue/`. */
  ticketBaseUrl: string | null;
}

export function defaultTestSettings(): RepositoryTestSettings {
  return {
    monitors: structuredClone(DEFAULT_MONITOR_SETTINGS),
    quarantine: { quarantiningEnabled: true, autoQuarantine: true },
    ticketBaseUrl: null,
  };
}
