import { Type } from "typebox";
import type { QuarantineOverride } from "../../testhealth/quarantine.js";
import type { WireTestSettingsPatch } from "../../testhealth/settings-wire.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { baseUrlOf, pageRequest, repositoryQuery, type FlakyTestsDependencies } from "./context.js";
import { presentRun } from "./presenters/runs.js";
import { presentSettings } from "./presenters/settings.js";
import {
  isQuarantined,
  presentationOf,
  presentQuarantine,
  presentTestDetails,
} from "./presenters/tests.js";
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
} from "./test-detail-schemas.js";

const TAGS = ["Flaky tests"];

/**
 * A test's details and run history, its quarantine override and ticket, and the repository's
 * test-health settings. Authenticated; `org_url_slug` must be the token's organization.
 */
export function registerTestRoutes(app: ApiApp, deps: FlakyTestsDependencies): void {
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
      const { scope, details } = await deps.queries.testDetails(principalOf(request), {
        ...repositoryQuery(request.body),
        testId: request.body.test_id,
      });
      const context = presentationOf(scope, baseUrlOf(deps.publicUrl, request));
      return presentTestDetails(details, scope.settings, context);
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
      const listed = await deps.queries.testRuns(principalOf(request), {
        ...repositoryQuery(request.body),
        testId: request.body.test_id,
        page: pageRequest(request.body.page_query),
      });
      return { runs: listed.items.map(presentRun), page: listed.page };
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
      const { repo, org_url_slug, test_case_id, external_ticket_id } = request.body;
      const linked = await deps.management.linkTicket(principalOf(request), {
        orgUrlSlug: org_url_slug ?? "",
        repo,
        testId: test_case_id,
        ticket: external_ticket_id,
      });
      const { htmlUrl } = linked;
      return {
        test_case_id: linked.test.id,
        ticket: htmlUrl === null ? null : { html_url: htmlUrl },
      };
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
      const { body } = request;
      const { scope, test } = await deps.management.setOverride(principalOf(request), {
        ...repositoryQuery(body),
        testId: body.test_id,
        override: body.override.toUpperCase() as QuarantineOverride,
        reason: body.reason?.trim() || null,
        actor: body.actor?.trim() || null,
      });
      return {
        test_id: test.id,
        quarantined: isQuarantined(test, scope.settings.quarantine),
        ...presentQuarantine(test, scope.settings.quarantine),
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
      const settings = await deps.management.settings(
        principalOf(request),
        repositoryQuery(request.body),
      );
      return presentSettings(settings);
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
      const wirePatch: WireTestSettingsPatch = patch;
      const updated = await deps.management.updateSettings(principalOf(request), {
        ...repositoryQuery({ repo, org_url_slug }),
        patch: wirePatch,
      });
      return presentSettings(updated);
    },
  );
}
