import { Type } from "typebox";
import { actorOf, type PullRequestService } from "../../mergequeue/pull-request-service.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, EmptyObject, errorResponses, prNumberOf } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { PrRefSchema, QueueAddressFields } from "./schemas.js";

export const CancelPullRequestBody = Type.Object({ ...QueueAddressFields, pr: PrRefSchema });

export function registerCancelPullRequest(app: ApiApp, pullRequests: PullRequestService): void {
  app.post(
    "/v1/cancelPullRequest",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "Remove a pull request from a merge queue",
        description:
          "Cancels the pull request's submission; tests running for it stop. A pull request that is not in the queue answers 404, one that has already concluded 409.",
        body: CancelPullRequestBody,
        response: { 200: EmptyObject, ...errorResponses(...COMMON_ERRORS, 404, 409) },
      },
    },
    async (request) => {
      const { repo, targetBranch, pr } = request.body;
      const principal = principalOf(request);
      await pullRequests.cancel(
        principal,
        { repo, targetBranch },
        prNumberOf(pr.number),
        actorOf(principal),
      );
      return {};
    },
  );
}
