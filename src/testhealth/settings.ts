import { DEFAULT_MONITOR_SETTINGS, type MonitorSettings } from "./monitors.js";
import type { QuarantineSettings } from "./quarantine.js";

/** A repository's test-health settings: monitors, quarantine switches, tickets. */
export interface RepositoryTestSettings {
  monitors: MonitorSettings;
  quarantine: QuarantineSettings;
  /** Prefix for ticket ids that are not URLs, e.g. `https://linear.app/acme/issue/`. */
  ticketBaseUrl: string | null;
  /**
   * A comment on each pull request (GitHub) whose CI uploaded failing tests, saying of each
   * whether it is known flaky, quarantined, broken on the stable branch or new. Off by default.
   */
  pullRequestComments: boolean;
}

export function defaultTestSettings(): RepositoryTestSettings {
  return {
    monitors: structuredClone(DEFAULT_MONITOR_SETTINGS),
    quarantine: { quarantiningEnabled: true, autoQuarantine: true },
    ticketBaseUrl: null,
    pullRequestComments: false,
  };
}
