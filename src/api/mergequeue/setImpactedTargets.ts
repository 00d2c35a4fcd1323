import { Type } from "typebox";
import { ApiError } from "../../lib/errors.js";
import type { PullRequestService } from "../../mergequeue/pull-request-service.js";
import type { ForkedWorkflowRuns } from "../../organizations/forked-workflow-runs.js";
import type { Principal } from "../../organizations/service.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, EmptyObject, PrNumber, errorResponses, prNumberOf } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { ImpactedTargetsInput, QueueAddressFields } from "./schemas.js";

export const SetImpactedTargetsBody = Type.Object({
  ...QueueAddressFields,
  pr: Type.Object(
    {
      number: PrNumber(),
      sha: Type.String({
        minLength: 1,
        maxLength: 64,
        description: "The head commit the targets were computed for.",
      }),
    },
    { description: "The pull request and its head commit." },
  ),
  impactedTargets: ImpactedTargetsInput,
});

export function registerSetImpactedTargets(
  app: ApiApp,
  pullRequests: PullRequestService,
  forkedRuns: ForkedWorkflowRuns | undefined,
): void {
  app.post(
    "/v1/setImpactedTargets",
    {
      config: { forkedWorkflowRun: true },
      schema: {
        tags: ["Merge queue"],
        summary: "Upload a pull request's impacted targets",
        description:
          "Parallel mode: the targets the pull request affects at its head commit; pull requests with disjoint targets are tested in separate lanes. Targets for a commit that is no longer the head are ignored. A pull request from a fork, whose CI has no API token, may send `x-forked-workflow-run-id: <GitHub Actions run id>` instead: the server accepts it only once GitHub confirms that the run is this repository's, queued or in progress, started by a pull_request(_target) event for `pr.sha`, and that the open pull request `pr.number` has that head in the run's fork.",
        body: SetImpactedTargetsBody,
        response: { 200: EmptyObject, ...errorResponses(...COMMON_ERRORS, 404, 409) },
      },
    },
    async (request) => {
      const { repo, targetBranch, pr, impactedTargets } = request.body;
      const number = prNumberOf(pr.number);
      let principal: Principal;
      if (request.forkedRunId !== null) {
        if (!forkedRuns) {
          throw new ApiError(
            "unauthorized",
            "x-forked-workflow-run-id is accepted only for GitHub repositories, on a server with the GitHub App configured: send the API token in x-api-token.",
          );
        }
        principal = await forkedRuns.verify({
          runId: request.forkedRunId,
          repo,
          prNumber: number,
          sha: pr.sha,
        });
      } else {
        principal = principalOf(request);
      }
      await pullRequests.setImpactedTargets(
        principal,
        { repo, targetBranch },
        { number, sha: pr.sha },
        impactedTargets,
      );
      return {};
    },
  );
}
