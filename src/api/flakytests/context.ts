import type { FastifyRequest } from "fastify";
import type { RepoRef } from "../../organizations/repositories.js";
import type { TestManagementService } from "../../testhealth/test-management.js";
import type {
  PageRequest,
  RepositoryQuery,
  TestQueryService,
} from "../../testhealth/test-queries.js";

/** What the Flaky Tests routes call: test health's services, and where the service is reached. */
export interface FlakyTestsDependencies {
  queries: Pick<
    TestQueryService,
    "listFailing" | "listUnhealthy" | "listQuarantined" | "testDetails" | "testRuns"
  >;
  management: Pick<
    TestManagementService,
    "setOverride" | "linkTicket" | "settings" | "updateSettings"
  >;
  /** MAINLINE_PUBLIC_URL when set; otherwise links use the address each request came to. */
  publicUrl: string | undefined;
}

/** The public base URL: MAINLINE_PUBLIC_URL when set, else the address the request came to. */
export function baseUrlOf(publicUrl: string | undefined, request: FastifyRequest): string {
  return (publicUrl ?? `${request.protocol}://${request.host}`).replace(/\/+$/, "");
}

/** `org_url_slug` and `repo` of a request body, as the services take them. */
export function repositoryQuery(body: { org_url_slug: string; repo: RepoRef }): RepositoryQuery {
  return { orgUrlSlug: body.org_url_slug, repo: body.repo };
}

/** `page_query` of a request body, as the services take it. */
export function pageRequest(pageQuery: { page_size: number; page_token?: string }): PageRequest {
  return { size: pageQuery.page_size, token: pageQuery.page_token };
}
