import { Type } from "typebox";
import { actorOf, type PullRequestService } from "../../mergequeue/pull-request-service.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, errorResponses, prNumberOf } from "../schemas.js";
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

/** `{}` as Trunk answers; with Mainline's `warnings` when the run's configuration has mistakes. */
export const SubmitPullRequestAnswer = Type.Object(
  {
    warnings: Type.Optional(
      Type.Array(
        Type.Object({
          code: Type.String({
            description:
              "`config_run_will_fail` (first, without a file): the built-in CI will fail the run at once; then one per mistake: `config_invalid_yaml`, `config_unknown_key`, `config_wrong_type`, `config_missing_key`, `config_duplicate_check`, `config_missing_file`, `config_unknown_required_status`, `config_no_required_statuses`.",
          }),
          message: Type.String(),
          file: Type.Optional(
            Type.String({ description: "The file at fault, relative to the repository's root." }),
          ),
          line: Type.Optional(Type.Integer({ minimum: 1, description: "1-based." })),
          column: Type.Optional(Type.Integer({ minimum: 1, description: "1-based." })),
        }),
        {
          description:
            "Mainline's extension (not in Trunk's API), present only when there is something to say: the pull request was submitted, but the configuration its run will use has mistakes (checked for repositories whose CI is the built-in runner: `.mainline.yml`, and `.trunk/trunk.yaml` where the runner reads it, at the pull request merged into the target branch).",
        },
      ),
    ),
  },
  { description: "OK: an empty JSON object, or Mainline's `warnings`." },
);

const DESCRIPTION =
  "Submits a pull request to the queue. Submitting one that is already queued updates its priority and noBatch. A queue that is draining or switching modes answers 409 for new pull requests; an unknown pull request 404. On a repository whose CI is the built-in runner, the answer's `warnings` list the mistakes in the configuration the run will use, each with its file and line; the pull request is submitted all the same.";

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
          response: {
            200: SubmitPullRequestAnswer,
            ...errorResponses(...COMMON_ERRORS, 404, 409),
          },
        },
      },
      async (request) => {
        const { repo, targetBranch, pr, priority, noBatch } = request.body;
        const principal = principalOf(request);
        const { warnings } = await pullRequests.submit(
          principal,
          { repo, targetBranch },
          {
            prNumber: prNumberOf(pr.number),
            ...(priority === undefined ? {} : { priority }),
            ...(noBatch === undefined ? {} : { noBatch }),
          },
          actorOf(principal),
        );
        return warnings.length === 0 ? {} : { warnings };
      },
    );
  };
  route("/v1/submitPullRequest", "Submit a pull request to a merge queue", false);
  route("/v1/queuePullRequest", "Submit a pull request (legacy name)", true);
}
