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
  /** Tickets: the connection new tickets go to, and when one is created without anyone asking. */
  tickets: TicketSettings;
}

/**
 * The automatic rule: a ticket for each test flaky (and/or broken) for at least `afterHours`,
 * with an owner in CODEOWNERS unless `requireOwner` is off; never for a test with a ticket linked.
 */
export interface TicketRule {
  flaky: boolean;
  broken: boolean;
  afterHours: number;
  requireOwner: boolean;
}

export interface TicketSettings {
  /** A ticket connection of the repository's organization; null: none. */
  connectionId: string | null;
  rule: TicketRule;
}

export function defaultTicketRule(): TicketRule {
  return { flaky: false, broken: false, afterHours: 24, requireOwner: true };
}

export function defaultTestSettings(): RepositoryTestSettings {
  return {
    monitors: structuredClone(DEFAULT_MONITOR_SETTINGS),
    quarantine: { quarantiningEnabled: true, autoQuarantine: true },
    ticketBaseUrl: null,
    pullRequestComments: false,
    tickets: { connectionId: null, rule: defaultTicketRule() },
  };
}
