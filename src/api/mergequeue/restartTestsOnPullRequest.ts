import { Type } from "typebox";
import { actorOf, type PullRequestService } from "../../mergequeue/pull-request-service.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, EmptyObject, errorResponses, prNumberOf } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { PrRefSchema, QueueAddressFields } from "./schemas.js";

export const RestartTestsOnPullRequestBody = Type.Object({
  ...QueueAddressFields,
  pr: PrRefSchema,
});

export function registerRestartTestsOnPullRequest(
  app: ApiApp,
  pullRequests: PullRequestService,
): void {
  app.post(
    "/v1/restartTestsOnPullRequest",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "Restart a pull request's tests",
        description:
          "Restarts the tests of a queued pull request without moving it in the queue or retesting the others. A pull request that is not in the queue answers 404.",
        body: RestartTestsOnPullRequestBody,
        response: { 200: EmptyObject, ...errorResponses(...COMMON_ERRORS, 404, 409) },
      },
    },
    async (request) => {
      const { repo, targetBranch, pr } = request.body;
      const principal = principalOf(request);
      await pullRequests.restart(
        principal,
        { repo, targetBranch },
        prNumberOf(pr.number),
        actorOf(principal),
      );
      return {};
    },
  );
}
