import { Type } from "typebox";
import type { PullRequestService } from "../../mergequeue/pull-request-service.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { presentTestingDetails } from "./presenters.js";
import { QueueAddressFields, TestingDetailsResponse } from "./schemas.js";

export const GetMergeQueueTestingDetailsBody = Type.Object({
  ...QueueAddressFields,
  testRunId: Type.String({
    minLength: 1,
    maxLength: 255,
    description: "A test run id, as in a pull request's timeline (`testRunId`).",
  }),
});

export function registerGetMergeQueueTestingDetails(
  app: ApiApp,
  pullRequests: PullRequestService,
): void {
  app.post(
    "/v1/getMergeQueueTestingDetails",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "Read a test run of a merge queue",
        description:
          "The test branch, the statuses it had to pass and their checks, and the pull requests it tested. 404 for a run this queue does not know.",
        body: GetMergeQueueTestingDetailsBody,
        response: { 200: TestingDetailsResponse, ...errorResponses(...COMMON_ERRORS, 404) },
      },
    },
    async (request) => {
      const { repo, targetBranch, testRunId } = request.body;
      const details = await pullRequests.testingDetails(
        principalOf(request),
        { repo, targetBranch },
        testRunId,
      );
      return presentTestingDetails(details);
    },
  );
}
