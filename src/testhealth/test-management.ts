/**
 * The write side of test health that people drive: a test's quarantine override and ticket (each
 * recorded in the test's status history, in the words below), and a repository's settings.
 */
import type { Clock } from "../lib/clock.js";
import { ApiError } from "../lib/errors.js";
import { tokenActor, type Principal } from "../organizations/service.js";
import type { TestDetailRecords } from "./ports.js";
import type { QuarantineOverride } from "./quarantine.js";
import type { StoredTestSettings, TestCaseRow } from "./records.js";
import { applySettingsPatch, isEmptyPatch, type WireTestSettingsPatch } from "./settings-wire.js";
import type { RepositoryQuery, RepositoryScope, TestQueryService } from "./test-queries.js";
import { ticketUrl } from "./tickets.js";

/** How a change of override reads in the test's status history. */
export const OVERRIDE_WORDS: Record<QuarantineOverride, string> = {
  ALWAYS_QUARANTINE: "Override set to ALWAYS_QUARANTINE",
  NEVER_QUARANTINE: "Override set to NEVER_QUARANTINE",
  UNSPECIFIED: "Override removed (UNSPECIFIED): the repository's rule applies",
};

/** How a ticket change reads in the test's status history. */
export function ticketHistoryWords(ticket: string | null, previous: string | null): string {
  if (ticket === null) return `Unlinked ticket ${previous ?? ""}`.trim();
  return previous === null
    ? `Linked ticket ${ticket}`
    : `Linked ticket ${ticket} (replacing ${previous})`;
}

export interface TestManagementDependencies {
  queries: Pick<TestQueryService, "scope" | "test">;
  details: Pick<TestDetailRecords, "setOverride" | "setTicket" | "modifySettings">;
  clock: Clock;
  /** New monitor settings apply to the repository's tests at once, not at their next upload. */
  reclassify(repositoryId: string): void;
  /** Whether the organization has this ticket connection (settings may name only its own). */
  ticketConnectionExists(organizationId: string, connectionId: string): Promise<boolean>;
}

export class TestManagementService {
  constructor(private readonly deps: TestManagementDependencies) {}

  /**
   * Sets a test's override (`UNSPECIFIED` returns it to the repository's rule), keeping who
   * (`actor`, default the token), why and when, and records it in the status history.
   */
  async setOverride(
    principal: Principal,
    request: RepositoryQuery & {
      testId: string;
      override: QuarantineOverride;
      reason: string | null;
      actor: string | null;
    },
  ): Promise<{ scope: RepositoryScope; test: TestCaseRow }> {
    const scope = await this.deps.queries.scope(principal, request);
    const row = await this.deps.queries.test(scope, request.testId);
    const { override, reason } = request;
    const actor = request.actor ?? tokenActor(principal);
    const updated = await this.deps.details.setOverride(
      row.key,
      { override, actor, reason, at: this.deps.clock.now() },
      `${OVERRIDE_WORDS[override]}${reason !== null ? `: ${reason}` : ""}`,
    );
    if (!updated) throw new ApiError("not_found", `No test ${request.testId} in this repository.`);
    return { scope, test: updated };
  }

  /**
   * Links a ticket (an http(s) URL, or an id appended to the repository's ticket base URL) to a
   * test, or unlinks with null; answers the ticket's link (null after an unlink).
   */
  async linkTicket(
    principal: Principal,
    request: RepositoryQuery & { testId: string; ticket: string | null },
  ): Promise<{ test: TestCaseRow; htmlUrl: string | null }> {
    const scope = await this.deps.queries.scope(principal, request);
    const row = await this.deps.queries.test(scope, request.testId);
    const ticket = request.ticket === null ? null : request.ticket.trim();
    const htmlUrl = ticket === null ? null : linkedTicketUrl(ticket, scope.settings.ticketBaseUrl);
    const updated = await this.deps.details.setTicket(
      row.key,
      { ticket, actor: tokenActor(principal), at: this.deps.clock.now() },
      (previous) => ticketHistoryWords(ticket, previous),
    );
    if (!updated) throw new ApiError("not_found", `No test ${request.testId} in this repository.`);
    return { test: updated, htmlUrl };
  }

  /** The repository's test-health settings (the defaults until the first update). */
  async settings(principal: Principal, request: RepositoryQuery): Promise<StoredTestSettings> {
    return (await this.deps.queries.scope(principal, request)).settings;
  }

  /**
   * Applies a partial update and answers the resulting settings; the repository's tests are
   * re-classified with them in the background.
   */
  async updateSettings(
    principal: Principal,
    request: RepositoryQuery & { patch: WireTestSettingsPatch },
  ): Promise<StoredTestSettings> {
    const scope = await this.deps.queries.scope(principal, request);
    if (isEmptyPatch(request.patch)) return scope.settings;
    const connectionId = request.patch.ticket_connection_id;
    if (
      typeof connectionId === "string" &&
      !(await this.deps.ticketConnectionExists(principal.organizationId, connectionId))
    ) {
      throw ApiError.invalid(
        "ticket_connection_id",
        `names no ticket connection of this organization (${connectionId}); mainline tickets list shows them`,
      );
    }
    const updated = await this.deps.details.modifySettings(
      scope.repository.id,
      this.deps.clock.now(),
      (current) => applySettingsPatch(current, request.patch),
    );
    this.deps.reclassify(scope.repository.id);
    return updated;
  }
}

/** A ticket's link: the id itself when it is an http(s) URL, else base URL + id. */
function linkedTicketUrl(ticket: string, ticketBaseUrl: string | null): string {
  const problem = (message: string) =>
    new ApiError("invalid_request", `external_ticket_id ${message}`, [
      { path: "external_ticket_id", message },
    ]);
  if (/^https?:\/\//i.test(ticket)) {
    try {
      const url = new URL(ticket);
      if (!url.host) throw new TypeError("no host");
    } catch {
      throw problem("starts like a URL but is not a valid http(s) URL.");
    }
  }
  const url = ticketUrl(ticket, ticketBaseUrl);
  if (url === null) {
    throw problem(
      `"${ticket}" is not a URL and the repository has no ticket_base_url: set one with update-test-settings (e.g. "https://linear.app/acme/issue/") or pass the ticket's full http(s) URL.`,
    );
  }
  return url;
}
