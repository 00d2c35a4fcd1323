import { Type, type Static } from "typebox";
import type { Services } from "../../app.js";
import { TestDetailsStore } from "../../db/stores/test-details.js";
import type { StoredTestSettings } from "../../db/stores/test-settings.js";
import type { TestCaseRow, TestFigures } from "../../db/stores/test-views.js";
import { isoTime } from "../../lib/clock.js";
import { ApiError } from "../../lib/errors.js";
import type { QuarantineOverride } from "../../testhealth/quarantine.js";
import {
  applySettingsPatch,
  isEmptyPatch,
  toWireSettings,
  type WireTestSettingsPatch,
} from "../../testhealth/settings-wire.js";
import {
  isQuarantined,
  presentFailingTest,
  ticketUrl,
  type PresentationContext,
  type PresentedFailingTest,
} from "./presenters/tests.js";
import { COMMON_ERRORS, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { flakyTestsContext } from "./context.js";
import { OrgRepoFields } from "./schemas.js";
import {
  GetTestDetailsBody,
  LinkTicketBody,
  LinkTicketResponse,
  ListTestRunsBody,
  ListTestRunsResponse,
  SetOverrideBody,
  SetOverrideResponse,
  TestDetailsResponse,
  TestSettingsResponse,
  UpdateTestSettingsBody,
  presentHistoryEntry,
  presentMonitorStates,
  presentQuarantine,
  presentRun,
  type PresentedHistoryEntry,
  type PresentedMonitorState,
  type PresentedQuarantine,
} from "./test-detail-schemas.js";

const TAGS = ["Flaky tests"];
const HISTORY_LIMIT = 100;

const NO_FIGURES: TestFigures = {
  failureRate7d: 0,
  failureRate24h: 0,
  runs7d: 0,
  runs24h: 0,
  prsImpacted7d: 0,
  mostCommonFailures: [],
};

export function testDetailsStore(services: Services): TestDetailsStore {
  return new TestDetailsStore(services.database.db, services.database.dialect);
}

export async function findTest(
  services: Pick<Services, "stores">,
  repositoryId: string,
  testId: string,
): Promise<TestCaseRow> {
  const row = await services.stores.testViews.findById(repositoryId, testId.toLowerCase());
  if (!row) throw new ApiError("not_found", `No test ${testId} in this repository.`);
  return row;
}

export interface LoadedTestDetails {
  test: PresentedFailingTest & { quarantine: PresentedQuarantine };
  status_history: PresentedHistoryEntry[];
  monitors: PresentedMonitorState[];
}

/** Everything get-test-details answers (also what the test's HTML page shows). */
export async function loadTestDetails(
  services: Pick<Services, "stores" | "clock">,
  details: TestDetailsStore,
  row: TestCaseRow,
  settings: StoredTestSettings,
  presentation: PresentationContext,
): Promise<LoadedTestDetails> {
  const [figures, history] = await Promise.all([
    services.stores.testViews.figures([row.key], services.clock.now()),
    details.statusHistory(row.key, HISTORY_LIMIT),
  ]);
  return {
    test: {
      ...presentFailingTest(row, figures.get(row.key) ?? NO_FIGURES, presentation),
      quarantine: presentQuarantine(row, settings.quarantine),
    },
    status_history: history.map(presentHistoryEntry),
    monitors: presentMonitorStates(row, settings.monitors),
  };
}

function presentSettings(settings: StoredTestSettings): Static<typeof TestSettingsResponse> {
  return {
    ...toWireSettings(settings),
    updated_at: settings.updatedAt === null ? null : isoTime(settings.updatedAt),
  };
}

const OVERRIDE_WORDS: Record<QuarantineOverride, string> = {
  ALWAYS_QUARANTINE: "Override set to ALWAYS_QUARANTINE",
  NEVER_QUARANTINE: "Override set to NEVER_QUARANTINE",
  UNSPECIFIED: "Override removed (UNSPECIFIED): the repository's rule applies",
};

/**
 * A test's details and run history, its quarantine override and ticket, and the repository's
 * test-health settings. Authenticated; `org_url_slug` must be the token's organization.
 */
export function registerTestRoutes(app: ApiApp, services: Services): void {
  const details = testDetailsStore(services);
  const actorOf = (tokenId: string) => `token:${tokenId}`;

  app.post(
    "/v1/flaky-tests/get-test-details",
    {
      schema: {
        tags: TAGS,
        summary: "The details of a test",
        description:
          "The test as list-failing-tests shows it plus `quarantine` (its quarantine state and override, with who, why and when), its status history (newest first, at most 100 entries) and its monitors' states. 404 for an unknown test.",
        body: GetTestDetailsBody,
        response: { 200: TestDetailsResponse, ...errorResponses(...COMMON_ERRORS, 403, 404) },
      },
    },
    async (request) => {
      const context = await flakyTestsContext(services, request, request.body);
      const row = await findTest(services, context.repository.id, request.body.test_id);
      return loadTestDetails(services, details, row, context.settings, context.presentation);
    },
  );

  app.post(
    "/v1/flaky-tests/list-test-runs",
    {
      schema: {
        tags: TAGS,
        summary: "The runs of a test",
        description:
          "Runs of processed uploads, newest first (ties: the later upload first), paged like the lists; a page token is bound to the test.",
        body: ListTestRunsBody,
        response: { 200: ListTestRunsResponse, ...errorResponses(...COMMON_ERRORS, 403, 404) },
      },
    },
    async (request) => {
      const { page_query } = request.body;
      const context = await flakyTestsContext(services, request, request.body);
      const row = await findTest(services, context.repository.id, request.body.test_id);
      const scope = {
        endpoint: "list-test-runs",
        organizationId: context.principal.organizationId,
        repositoryId: context.repository.id,
        filters: `test_id=${row.id}`,
      };
      const offset = await services.pager.offset(scope, page_query.page_token);
      const page = await details.runsPage(row.key, offset, page_query.page_size);
      return {
        runs: page.runs.map(presentRun),
        page: await services.pager.page(scope, offset, page_query.page_size, page.total),
      };
    },
  );

  app.post(
    "/v1/flaky-tests/link-ticket-to-test-case",
    {
      schema: {
        tags: TAGS,
        summary: "Link a ticket to a test",
        description:
          "Links a ticket (an http(s) URL, or an id appended to the repository's `ticket_base_url`); null unlinks. Linking the ticket already linked changes nothing. `org_url_slug` is optional here, as in Trunk's API. 400 when the id is not a URL and no `ticket_base_url` is set.",
        body: LinkTicketBody,
        response: { 200: LinkTicketResponse, ...errorResponses(...COMMON_ERRORS, 403, 404) },
      },
    },
    async (request) => {
      const { test_case_id, external_ticket_id } = request.body;
      const context = await flakyTestsContext(services, request, {
        repo: request.body.repo,
        org_url_slug: request.body.org_url_slug ?? "",
      });
      const row = await findTest(services, context.repository.id, test_case_id);
      const ticket = external_ticket_id === null ? null : external_ticket_id.trim();
      let htmlUrl: string | null = null;
      if (ticket !== null) {
        htmlUrl = linkedTicketUrl(ticket, context.settings.ticketBaseUrl);
      }
      const updated = await details.setTicket(
        row.key,
        { ticket, actor: actorOf(context.principal.tokenId), at: services.clock.now() },
        (previous) =>
          ticket === null
            ? `Unlinked ticket ${previous ?? ""}`.trim()
            : previous === null
              ? `Linked ticket ${ticket}`
              : `Linked ticket ${ticket} (replacing ${previous})`,
      );
      if (!updated) throw new ApiError("not_found", `No test ${test_case_id} in this repository.`);
      return { test_case_id: updated.id, ticket: htmlUrl === null ? null : { html_url: htmlUrl } };
    },
  );

  app.post(
    "/v1/flaky-tests/set-quarantine-override",
    {
      schema: {
        tags: TAGS,
        summary: "Set a test's quarantine override",
        description:
          "`ALWAYS_QUARANTINE` or `NEVER_QUARANTINE` whatever the test's status, or `UNSPECIFIED` to follow the repository's rule (quarantine flaky tests when auto-quarantine is on). Keeps who (`actor`, default `token:<token id>`), why and when, and records it in the status history. Takes effect at once, in getQuarantineConfig too.",
        body: SetOverrideBody,
        response: { 200: SetOverrideResponse, ...errorResponses(...COMMON_ERRORS, 403, 404) },
      },
    },
    async (request) => {
      const context = await flakyTestsContext(services, request, request.body);
      const row = await findTest(services, context.repository.id, request.body.test_id);
      const override = request.body.override.toUpperCase() as QuarantineOverride;
      const reason = request.body.reason?.trim() || null;
      const actor = request.body.actor?.trim() || actorOf(context.principal.tokenId);
      const updated = await details.setOverride(
        row.key,
        { override, actor, reason, at: services.clock.now() },
        `${OVERRIDE_WORDS[override]}${reason !== null ? `: ${reason}` : ""}`,
      );
      if (!updated) {
        throw new ApiError("not_found", `No test ${request.body.test_id} in this repository.`);
      }
      return {
        test_id: updated.id,
        quarantined: isQuarantined(updated, context.settings.quarantine),
        ...presentQuarantine(updated, context.settings.quarantine),
      };
    },
  );

  app.post(
    "/v1/flaky-tests/get-test-settings",
    {
      schema: {
        tags: TAGS,
        summary: "A repository's test-health settings",
        description:
          "Branches, monitors, quarantine switches and the ticket base URL; the defaults until the first update (`updated_at` null).",
        body: Type.Object(OrgRepoFields),
        response: { 200: TestSettingsResponse, ...errorResponses(...COMMON_ERRORS, 403, 404) },
      },
    },
    async (request) => {
      const context = await flakyTestsContext(services, request, request.body);
      return presentSettings(context.settings);
    },
  );

  app.post(
    "/v1/flaky-tests/update-test-settings",
    {
      schema: {
        tags: TAGS,
        summary: "Change a repository's test-health settings",
        description:
          "Partial update: absent fields stay as they are; a present field replaces the current value whole (monitor lists included), except `pass_on_retry`, merged field by field. Enums take any letter case. Answers the resulting settings. Quarantine switches apply at once; the repository's tests are re-classified with new monitor settings in the background within seconds.",
        body: UpdateTestSettingsBody,
        response: { 200: TestSettingsResponse, ...errorResponses(...COMMON_ERRORS, 403, 404) },
      },
    },
    async (request) => {
      const { repo, org_url_slug, ...patch } = request.body;
      const context = await flakyTestsContext(services, request, { repo, org_url_slug });
      const wirePatch: WireTestSettingsPatch = patch;
      if (isEmptyPatch(wirePatch)) return presentSettings(context.settings);
      const updated = await details.modifySettings(
        context.repository.id,
        services.clock.now(),
        (current) => applySettingsPatch(current, wirePatch),
      );
      // New monitor settings apply to the tests at once, not at their next upload.
      services.worker.reclassify(context.repository.id);
      return presentSettings(updated);
    },
  );
}

/** A ticket's link (docs/contract.md §3): the id itself when it is an http(s) URL, else base URL + id. */
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
