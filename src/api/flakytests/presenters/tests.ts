/**
 * How a test looks in the Flaky Tests API: snake_case, `status.value` lowercase, rates as
 * fractions, `ticket` only when linked. Pure.
 */
import type { TestCaseRow, TestFigures } from "../../../testhealth/records.js";
import { ticketUrl } from "../../../testhealth/tickets.js";
import { isoTime } from "../../../lib/clock.js";
import { LOCAL_HOST } from "../../../organizations/repositories.js";
import { urls } from "../../../web/urls.js";
import { parseCodeowners, type Codeowners } from "../../../testhealth/codeowners.js";
import type { HealthStatus } from "../../../testhealth/monitors.js";
import {
  quarantineSetting,
  type QuarantineOverride,
  type QuarantineSettings,
} from "../../../testhealth/quarantine.js";
import { PASS_ON_RETRY, type MonitorStates } from "../../../testhealth/classifier.js";
import type { MonitorClassification, MonitorSettings } from "../../../testhealth/monitors.js";
import type { HistoryRecord, StoredTestSettings } from "../../../testhealth/records.js";
import type { RepositoryScope, TestDetails } from "../../../testhealth/test-queries.js";
import type {
  PresentedHistoryEntry,
  PresentedMonitorState,
  PresentedQuarantine,
} from "../test-detail-schemas.js";
import type { QuarantinedTestSchema } from "../test-schemas.js";
import type { Static } from "typebox";

export interface PresentationContext {
  orgSlug: string;
  repo: { host: string; owner: string; name: string };
  /** The service's public base URL, without a trailing slash. */
  baseUrl: string;
  quarantine: QuarantineSettings;
  ticketBaseUrl: string | null;
  codeowners: Codeowners | null;
}

export interface PresentedStatus {
  value: HealthStatus;
  reason: string;
  timestamp: string;
}

export interface PresentedTest {
  id: string;
  repository: { html_url: string };
  html_url: string;
  name: string;
  variant: string;
  status: PresentedStatus;
  codeowners: string[];
  pull_requests_impacted_last_7d: number;
  quarantined: boolean;
  file_path: string;
  parent: string;
  classname: string;
  ticket?: PresentedTicket;
}

/** A linked ticket: its link; with get-test-details, the key and state of a created one. */
export interface PresentedTicket {
  html_url: string;
  key?: string;
  state?: { name: string; open: boolean; checked_at: string } | null;
}

export interface PresentedFailingTest extends PresentedTest {
  most_common_failures: { summary: string; occurrence_count: number; last_occurrence: string }[];
  failure_rate_last_7d: number;
  failure_rate_last_24h: number;
}

/**
 * The repository's page: on its host (`https://github.com/acme/app`), or, for a repository of the
 * local git host, which has no web pages of its own, its test-health page on this server.
 */
export function repositoryHtmlUrl(
  context: Pick<PresentationContext, "repo" | "orgSlug" | "baseUrl">,
): string {
  const { repo } = context;
  if (repo.host.toLowerCase() === LOCAL_HOST) {
    return `${context.baseUrl}${urls.repository(context.orgSlug, repo)}`;
  }
  return `https://${repo.host}/${repo.owner}/${repo.name}`;
}

export function testHtmlUrl(context: PresentationContext, id: string): string {
  const repo = `${encodeURIComponent(context.repo.owner)}/${encodeURIComponent(context.repo.name)}`;
  return `${context.baseUrl}/${encodeURIComponent(context.orgSlug)}/flaky-tests/test/${id}?repo=${repo}`;
}

export function statusOf(row: TestCaseRow): PresentedStatus {
  return {
    value: row.status as HealthStatus,
    reason: row.statusReason || (row.status === "healthy" ? "No monitor is active." : ""),
    timestamp: isoTime(row.statusChangedAt),
  };
}

export function isQuarantined(row: TestCaseRow, settings: QuarantineSettings): boolean {
  return (
    quarantineSetting(
      settings,
      row.quarantineOverride as QuarantineOverride,
      row.status as HealthStatus,
    ) !== null
  );
}

export function presentTest(
  row: TestCaseRow,
  figures: TestFigures,
  context: PresentationContext,
): PresentedTest {
  const ticket = row.ticket === null ? null : ticketUrl(row.ticket, context.ticketBaseUrl);
  return {
    id: row.id,
    repository: { html_url: repositoryHtmlUrl(context) },
    html_url: testHtmlUrl(context, row.id),
    name: row.name,
    variant: row.variant,
    status: statusOf(row),
    codeowners: row.file && context.codeowners ? context.codeowners.ownersOf(row.file) : [],
    pull_requests_impacted_last_7d: figures.prsImpacted7d,
    quarantined: isQuarantined(row, context.quarantine),
    file_path: row.file ?? "",
    parent: row.parent ?? "",
    classname: row.classname ?? "",
    ...(ticket !== null ? { ticket: { html_url: ticket } } : {}),
  };
}

export function presentFailingTest(
  row: TestCaseRow,
  figures: TestFigures,
  context: PresentationContext,
): PresentedFailingTest {
  return {
    ...presentTest(row, figures, context),
    most_common_failures: figures.mostCommonFailures.map((group) => ({
      summary: group.summary,
      occurrence_count: group.occurrenceCount,
      last_occurrence: isoTime(group.lastOccurrence),
    })),
    failure_rate_last_7d: figures.failureRate7d,
    failure_rate_last_24h: figures.failureRate24h,
  };
}

const codeownersCache = new Map<string, Codeowners>();

/** CODEOWNERS texts repeat for every request; parse each text once (a small bounded cache). */
export function cachedCodeowners(text: string | null): Codeowners | null {
  if (text === null) return null;
  let parsed = codeownersCache.get(text);
  if (!parsed) {
    if (codeownersCache.size >= 64) codeownersCache.clear();
    parsed = parseCodeowners(text);
    codeownersCache.set(text, parsed);
  }
  return parsed;
}

/** How the tests of a request's repository are presented: its links, settings and owners. */
export function presentationOf(scope: RepositoryScope, baseUrl: string): PresentationContext {
  const { repository, settings } = scope;
  return {
    orgSlug: scope.principal.organizationSlug,
    repo: { host: repository.host, owner: repository.owner, name: repository.name },
    baseUrl,
    quarantine: settings.quarantine,
    ticketBaseUrl: settings.ticketBaseUrl,
    codeowners: cachedCodeowners(settings.codeowners),
  };
}

export function presentQuarantinedTest(
  row: TestCaseRow,
  quarantinedAt: number,
  context: PresentationContext,
): Static<typeof QuarantinedTestSchema> {
  const setting = quarantineSetting(
    context.quarantine,
    row.quarantineOverride as QuarantineOverride,
    row.status as HealthStatus,
  );
  return {
    name: row.name,
    parent: row.parent,
    file: row.file,
    classname: row.classname,
    codeowners: row.file && context.codeowners ? context.codeowners.ownersOf(row.file) : [],
    quarantined_at: isoTime(quarantinedAt),
    status_last_updated_at: isoTime(row.statusChangedAt),
    test_case_id: row.id,
    variant: row.variant,
    quarantine_setting: setting ?? "AUTO_QUARANTINE",
    status: row.status.toUpperCase(),
  };
}

export interface PresentedTestDetails {
  test: PresentedFailingTest & { quarantine: PresentedQuarantine };
  status_history: PresentedHistoryEntry[];
  monitors: PresentedMonitorState[];
}

/** Everything get-test-details answers (also what the test's HTML page shows). */
export function presentTestDetails(
  details: TestDetails,
  settings: StoredTestSettings,
  context: PresentationContext,
): PresentedTestDetails {
  const { row, figures, history } = details;
  const test = presentFailingTest(row, figures, context);
  if (test.ticket && details.ticket) {
    const { key, stateName, stateOpen, stateCheckedAt } = details.ticket;
    test.ticket = {
      html_url: details.ticket.url,
      key,
      state:
        stateName === null || stateOpen === null || stateCheckedAt === null
          ? null
          : { name: stateName, open: stateOpen, checked_at: isoTime(stateCheckedAt) },
    };
  }
  return {
    test: { ...test, quarantine: presentQuarantine(row, settings.quarantine) },
    status_history: history.map(presentHistoryEntry),
    monitors: presentMonitorStates(row, settings.monitors),
  };
}

export function presentQuarantine(
  row: TestCaseRow,
  settings: QuarantineSettings,
): PresentedQuarantine {
  const override = row.quarantineOverride as QuarantineOverride;
  return {
    setting: quarantineSetting(settings, override, row.status as HealthStatus),
    override,
    override_actor: row.overrideActor,
    override_reason: row.overrideReason,
    override_at: row.overrideAt === null ? null : isoTime(row.overrideAt),
  };
}

export function presentHistoryEntry(entry: HistoryRecord): PresentedHistoryEntry {
  return {
    status: entry.status,
    reason: entry.reason,
    at: isoTime(entry.at),
    kind: entry.kind,
    actor: entry.actor,
  };
}

/**
 * The monitors' states stored on the test: pass-on-retry first, then the configured monitors in
 * the settings' order, then states of monitors no longer configured (by id).
 */
export function presentMonitorStates(
  row: TestCaseRow,
  settings: MonitorSettings,
): PresentedMonitorState[] {
  let states: MonitorStates;
  try {
    states = JSON.parse(row.monitorStates) as MonitorStates;
  } catch {
    states = {};
  }
  const configured = new Map<string, MonitorClassification>([
    [PASS_ON_RETRY, "flaky"],
    ...settings.failureRate.map((m) => [m.id, m.classification] as const),
    ...settings.failureCount.map((m) => [m.id, m.classification] as const),
  ]);
  const order = [...configured.keys()];
  const ids = Object.keys(states).sort((a, b) => {
    const ia = order.indexOf(a);
    const ib = order.indexOf(b);
    if (ia !== -1 || ib !== -1) return (ia === -1 ? Infinity : ia) - (ib === -1 ? Infinity : ib);
    return a < b ? -1 : a > b ? 1 : 0;
  });
  return ids.flatMap((id) => {
    const state = states[id];
    if (!state) return [];
    return [
      {
        id,
        classification: configured.get(id) ?? null,
        active: state.active,
        reason: state.reason,
        changed_at: isoTime(state.changedAt),
      },
    ];
  });
}
