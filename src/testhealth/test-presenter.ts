/**
 * How a test looks in the Flaky Tests API (api.md + docs/contract.md §3 "Other fields"): snake_case,
 * `status.value` lowercase, rates as fractions, `ticket` only when linked. Pure.
 */
import type { TestCaseRow, TestFigures } from "../db/stores/test-views.js";
import { isoTime } from "../lib/clock.js";
import type { RepoRef } from "../organizations/repositories.js";
import { parseCodeowners, type Codeowners } from "./codeowners.js";
import type { HealthStatus } from "./monitors.js";
import {
  quarantineSetting,
  type QuarantineOverride,
  type QuarantineSettings,
} from "./quarantine.js";

export interface PresentationContext {
  orgSlug: string;
  repo: RepoRef;
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
  ticket?: { html_url: string };
}

export interface PresentedFailingTest extends PresentedTest {
  most_common_failures: { summary: string; occurrence_count: number; last_occurrence: string }[];
  failure_rate_last_7d: number;
  failure_rate_last_24h: number;
}

export function repositoryHtmlUrl(repo: PresentationContext["repo"]): string {
  return `https://${repo.host}/${repo.owner}/${repo.name}`;
}

export function testHtmlUrl(context: PresentationContext, id: string): string {
  const repo = `${encodeURIComponent(context.repo.owner)}/${encodeURIComponent(context.repo.name)}`;
  return `${context.baseUrl}/${encodeURIComponent(context.orgSlug)}/flaky-tests/test/${id}?repo=${repo}`;
}

/** A linked id that is an http(s) URL is the link; otherwise the repository's base URL + id. */
export function ticketUrl(ticket: string, ticketBaseUrl: string | null): string | null {
  if (/^https?:\/\//i.test(ticket)) return ticket;
  return ticketBaseUrl === null ? null : `${ticketBaseUrl}${ticket}`;
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
    repository: { html_url: repositoryHtmlUrl(context.repo) },
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
