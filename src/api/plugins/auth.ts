import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError } from "../../lib/errors.js";
import type { OrganizationService, Principal } from "../../organizations/service.js";
import type {
  PublicRepositoryCaller,
  PublicRepositoryIds,
} from "../../testhealth/public-repository-ids.js";
import type { InFlightWork } from "./in-flight.js";

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal | null;
    /** Set instead of `principal` when the caller presented a public repository id. */
    publicCaller: PublicRepositoryCaller | null;
  }
  interface FastifyContextConfig {
    /** The route also takes `x-trunk-public-repo-id` instead of a token (uploader routes). */
    publicRepoId?: boolean;
  }
}

export const PUBLIC_REPO_ID_HEADER = "x-trunk-public-repo-id";

/** The caller of an authenticated route (set by the `x-api-token` hook). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError("unauthorized", "Missing API token.");
  return request.principal;
}

/**
 * Authenticates every route registered in `scope` by its `x-api-token` header (docs/contract.md §1).
 * Runs before the body is parsed: an unauthenticated client learns nothing about validation.
 * Routes marked `publicRepoId` also take a public repository id when no token is sent; the
 * caller is then `request.publicCaller`, never `request.principal`, so no other route (nor
 * `principalOf`) ever sees it.
 */
export function requireApiToken(
  scope: FastifyInstance,
  organizations: OrganizationService,
  inFlight: InFlightWork,
  publicIds: PublicRepositoryIds,
): void {
  scope.addHook("onRequest", async (request) => {
    const header = first(request.headers["x-api-token"]);
    const publicId = first(request.headers[PUBLIC_REPO_ID_HEADER]);
    if (!header && publicId && request.routeOptions.config.publicRepoId === true) {
      request.publicCaller = await inFlight.track(() => publicIds.authenticate(publicId));
      return;
    }
    request.principal = await inFlight.track(() => organizations.authenticate(header));
  });
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
