import { Type } from "typebox";
import type { PullRequestService } from "../../mergequeue/pull-request-service.js";
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

export function registerSetImpactedTargets(app: ApiApp, pullRequests: PullRequestService): void {
  app.post(
    "/v1/setImpactedTargets",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "Upload a pull request's impacted targets",
        description:
          "Parallel mode: the targets the pull request affects at its head commit; pull requests with disjoint targets are tested in separate lanes. Targets for a commit that is no longer the head are ignored.",
        body: SetImpactedTargetsBody,
        response: { 200: EmptyObject, ...errorResponses(...COMMON_ERRORS, 404, 409) },
      },
    },
    async (request) => {
      const { repo, targetBranch, pr, impactedTargets } = request.body;
      await pullRequests.setImpactedTargets(
        principalOf(request),
        { repo, targetBranch },
        { number: prNumberOf(pr.number), sha: pr.sha },
        impactedTargets,
      );
      return {};
    },
  );
}
