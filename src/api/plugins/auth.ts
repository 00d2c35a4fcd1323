import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError } from "../../lib/errors.js";
import type { OrganizationService, Principal } from "../../organizations/service.js";
import type { InFlightWork } from "./in-flight.js";

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/** The caller of an authenticated route (set by the `x-api-token` hook). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError("unauthorized", "Missing API token.");
  return request.principal;
}

/**
 * Authenticates every route registered in `scope` by its `x-api-token` header (docs/contract.md §1).
 * Runs before the body is parsed: an unauthenticated client learns nothing about validation.
 */
export function requireApiToken(
  scope: FastifyInstance,
  organizations: OrganizationService,
  inFlight: InFlightWork,
): void {
  scope.addHook("onRequest", async (request) => {
    const header = request.headers["x-api-token"];
    request.principal = await inFlight.track(() =>
      organizations.authenticate(Array.isArray(header) ? header[0] : header),
    );
  });
}
