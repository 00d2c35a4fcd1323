import { Type } from "typebox";
import { actorOf, type PullRequestService } from "../../mergequeue/pull-request-service.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, EmptyObject, errorResponses, prNumberOf } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { PrRefSchema, PriorityInput, QueueAddressFields } from "./schemas.js";

export const SubmitPullRequestBody = Type.Object({
  ...QueueAddressFields,
  pr: PrRefSchema,
  priority: Type.Optional(PriorityInput),
  noBatch: Type.Optional(
    Type.Boolean({ description: "Test this pull request on its own, never in a batch." }),
  ),
});

const DESCRIPTION =
  "Submits a pull request to the queue. Submitting one that is already queued updates its priority and noBatch. A queue that is draining or switching modes answers 409 for new pull requests; an unknown pull request 404.";

export function registerSubmitPullRequest(app: ApiApp, pullRequests: PullRequestService): void {
  const route = (path: string, summary: string, deprecated: boolean) => {
    app.post(
      path,
      {
        schema: {
          tags: ["Merge queue"],
          summary,
          description: deprecated
            ? `The older name of submitPullRequest, with the same body and answer. ${DESCRIPTION}`
            : DESCRIPTION,
          ...(deprecated ? { deprecated: true } : {}),
          body: SubmitPullRequestBody,
          response: { 200: EmptyObject, ...errorResponses(...COMMON_ERRORS, 404, 409) },
        },
      },
      async (request) => {
        const { repo, targetBranch, pr, priority, noBatch } = request.body;
        const principal = principalOf(request);
        await pullRequests.submit(
          principal,
          { repo, targetBranch },
          {
            prNumber: prNumberOf(pr.number),
            ...(priority === undefined ? {} : { priority }),
            ...(noBatch === undefined ? {} : { noBatch }),
          },
          actorOf(principal),
        );
        return {};
      },
    );
  };
  route("/v1/submitPullRequest", "Submit a pull request to a merge queue", false);
  route("/v1/queuePullRequest", "Submit a pull request (legacy name)", true);
}
