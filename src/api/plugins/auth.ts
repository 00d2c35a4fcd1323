import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError } from "../../lib/errors.js";
import {
  FORKED_WORKFLOW_RUN_HEADER,
  RUN_ID_PATTERN,
} from "../../organizations/forked-workflow-runs.js";
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
    /**
     * Set instead of `principal` when the caller named a fork's workflow run (a route marked
     * `forkedWorkflowRun`); the route verifies it against its body before acting.
     */
    forkedRunId: string | null;
  }
  interface FastifyContextConfig {
    /** The route also takes `x-trunk-public-repo-id` instead of a token (uploader routes). */
    publicRepoId?: boolean;
    /** The route also takes `x-forked-workflow-run-id` instead of a token (setImpactedTargets). */
    forkedWorkflowRun?: boolean;
  }
}

export const PUBLIC_REPO_ID_HEADER = "x-trunk-public-repo-id";

/** The caller of an authenticated route (set by the `x-api-token` hook). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError("unauthorized", "Missing API token.");
  return request.principal;
}

/**
 * Authenticates every route registered in `scope` by its `x-api-token` header. Runs before the body
 * is parsed: an unauthenticated client learns nothing about validation. Routes marked
 * `publicRepoId` also take a public repository id when no token is sent; the caller is then
 * `request.publicCaller`, never `request.principal`, so no other route (nor `principalOf`) ever
 * sees it. Routes marked `forkedWorkflowRun` likewise take a fork's workflow run id
 * (`request.forkedRunId`), which proves nothing until the route has it verified.
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
    const forkedRun = first(request.headers[FORKED_WORKFLOW_RUN_HEADER]);
    if (!header && forkedRun) {
      if (request.routeOptions.config.forkedWorkflowRun !== true) {
        throw new ApiError(
          "unauthorized",
          `Missing API token: send it in the x-api-token header (${FORKED_WORKFLOW_RUN_HEADER} is accepted by setImpactedTargets only).`,
        );
      }
      if (!RUN_ID_PATTERN.test(forkedRun)) {
        throw new ApiError(
          "unauthorized",
          `${FORKED_WORKFLOW_RUN_HEADER} must be a GitHub Actions run id: 1 to 15 digits (github.run_id).`,
        );
      }
      request.forkedRunId = forkedRun;
      return;
    }
    request.principal = await inFlight.track(() => organizations.authenticate(header));
  });
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
