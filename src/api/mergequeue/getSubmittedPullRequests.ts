import { Type } from "typebox";
import type { PullRequestService } from "../../mergequeue/pull-request-service.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, errorResponses, prNumberOf } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { presentPullRequest } from "./presenters.js";
import { GetSubmittedPullRequestsResponse, PrRefSchema, QueueAddressFields } from "./schemas.js";

export const GetSubmittedPullRequestsBody = Type.Object({
  ...QueueAddressFields,
  prs: Type.Array(PrRefSchema, { maxItems: 100, description: "Up to 100 pull requests." }),
  includeTimeline: Type.Optional(
    Type.Boolean({ description: "Also answer every state change of each submission." }),
  ),
});

export function registerGetSubmittedPullRequests(
  app: ApiApp,
  pullRequests: PullRequestService,
): void {
  app.post(
    "/v1/getSubmittedPullRequests",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "Read several pull requests' submissions",
        description:
          "getSubmittedPullRequest for up to 100 pull requests by number. Those never submitted to this queue are listed in `notFound` instead of failing the request.",
        body: GetSubmittedPullRequestsBody,
        response: {
          200: GetSubmittedPullRequestsResponse,
          ...errorResponses(...COMMON_ERRORS, 404),
        },
      },
    },
    async (request) => {
      const { repo, targetBranch, prs, includeTimeline } = request.body;
      const found = await pullRequests.getMany(
        principalOf(request),
        { repo, targetBranch },
        prs.map((pr) => prNumberOf(pr.number)),
        includeTimeline ?? false,
      );
      return {
        pullRequests: found.pullRequests.map(presentPullRequest),
        notFound: found.notFound,
      };
    },
  );
}
