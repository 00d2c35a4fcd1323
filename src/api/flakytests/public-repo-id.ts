import { Type } from "typebox";
import type { PublicRepositoryIds } from "../../testhealth/public-repository-ids.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { OrgRepoFields } from "./schemas.js";

const Answer = Type.Object({
  public_repo_id: Type.String({
    description:
      "Send it as `x-trunk-public-repo-id` (Trunk's uploader: `--public-repo-id`) instead of a token: it permits creating uploads for this repository only.",
  }),
});

/** A repository's public id (uploads from forks), read and rotated with an API token. */
export function registerPublicRepoIdRoutes(app: ApiApp, publicIds: PublicRepositoryIds): void {
  app.post(
    "/v1/flaky-tests/get-public-repo-id",
    {
      schema: {
        tags: ["Uploads"],
        summary: "The repository's public id, for uploads from forks",
        description:
          "Given on first request (the repository is created if new). Not a secret: it permits only creating uploads for this repository (at most 60 an hour, bundles up to 100 MiB) and reading its quarantined test ids through getQuarantineConfig.",
        body: Type.Object(OrgRepoFields),
        response: { 200: Answer, ...errorResponses(...COMMON_ERRORS, 403) },
      },
    },
    async (request) => ({
      public_repo_id: await publicIds.get(
        principalOf(request),
        request.body.org_url_slug,
        request.body.repo,
      ),
    }),
  );

  app.post(
    "/v1/flaky-tests/rotate-public-repo-id",
    {
      schema: {
        tags: ["Uploads"],
        summary: "Replace the repository's public id",
        description: "Answers the new id; the old one stops working at once.",
        body: Type.Object(OrgRepoFields),
        response: { 200: Answer, ...errorResponses(...COMMON_ERRORS, 403) },
      },
    },
    async (request) => ({
      public_repo_id: await publicIds.rotate(
        principalOf(request),
        request.body.org_url_slug,
        request.body.repo,
      ),
    }),
  );
}
