import { Type } from "typebox";
import type { PullRequestService } from "../../mergequeue/pull-request-service.js";
import { ApiError } from "../../lib/errors.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, PrNumber, errorResponses, prNumberOf } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { presentPullRequest } from "./presenters.js";
import { PullRequestDetailsSchema, QueueAddressFields } from "./schemas.js";

export const GetSubmittedPullRequestBody = Type.Object({
  ...QueueAddressFields,
  pr: Type.Object(
    {
      number: Type.Optional(PrNumber()),
      branch: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 255,
          description: "The pull request's head branch.",
        }),
      ),
    },
    { description: "Exactly one of `number` or `branch`." },
  ),
  includeTimeline: Type.Optional(
    Type.Boolean({ description: "Also answer every state change of the submission." }),
  ),
  includeEstimatedTimeToMerge: Type.Optional(
    Type.Boolean({ description: "Accepted for compatibility; no estimate is answered." }),
  ),
});

export function registerGetSubmittedPullRequest(
  app: ApiApp,
  pullRequests: PullRequestService,
): void {
  app.post(
    "/v1/getSubmittedPullRequest",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "Read a pull request's submission",
        description:
          "The latest submission of a pull request, by number or by head branch (an open submission from the branch first, else the latest concluded one). 404 when it was never submitted to this queue.",
        body: GetSubmittedPullRequestBody,
        response: { 200: PullRequestDetailsSchema, ...errorResponses(...COMMON_ERRORS, 404) },
      },
    },
    async (request) => {
      const { repo, targetBranch, pr, includeTimeline } = request.body;
      if ((pr.number === undefined) === (pr.branch === undefined)) {
        throw ApiError.invalid("pr", "must have exactly one of number or branch");
      }
      const view = await pullRequests.get(
        principalOf(request),
        { repo, targetBranch },
        pr.number === undefined ? { branch: pr.branch ?? "" } : { number: prNumberOf(pr.number) },
        includeTimeline ?? false,
      );
      return presentPullRequest(view);
    },
  );
}
