import type { FastifyRequest } from "fastify";
import type { Services } from "../../app.js";
import type { Repository } from "../../db/stores/repositories.js";
import type { StoredTestSettings } from "../../db/stores/test-settings.js";
import type { RepoRef } from "../../organizations/repositories.js";
import type { Principal } from "../../organizations/service.js";
import { cachedCodeowners, type PresentationContext } from "../../testhealth/test-presenter.js";
import { principalOf } from "../plugins/auth.js";

export interface FlakyTestsRequestContext {
  principal: Principal;
  repository: Repository;
  settings: StoredTestSettings;
  presentation: PresentationContext;
}

/** The public base URL: MAINLINE_PUBLIC_URL when set, else the address the request came to. */
export function baseUrlOf(services: Pick<Services, "publicUrl">, request: FastifyRequest): string {
  return (services.publicUrl ?? `${request.protocol}://${request.host}`).replace(/\/+$/, "");
}

/**
 * Everything a flaky-tests route needs about its caller and repository: 403 for another
 * organization's slug, 404 for an unknown repository (docs/contract.md §2), the repository's settings
 * and how to present its tests.
 */
export async function flakyTestsContext(
  services: Pick<Services, "access" | "stores" | "publicUrl">,
  request: FastifyRequest,
  body: { org_url_slug: string; repo: RepoRef },
): Promise<FlakyTestsRequestContext> {
  const principal = principalOf(request);
  const repository = await services.access.find(principal, body.org_url_slug, body.repo);
  const settings = await services.stores.testSettings.get(repository.id);
  return {
    principal,
    repository,
    settings,
    presentation: {
      orgSlug: principal.organizationSlug,
      repo: { host: repository.host, owner: repository.owner, name: repository.name },
      baseUrl: baseUrlOf(services, request),
      quarantine: settings.quarantine,
      ticketBaseUrl: settings.ticketBaseUrl,
      codeowners: cachedCodeowners(settings.codeowners),
    },
  };
}
