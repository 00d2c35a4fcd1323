import { Type } from "typebox";
import type { MergeQueueService } from "../../mergequeue/queue-service.js";
import { QUEUE_MODES } from "../../mergequeue/settings.js";
import { principalOf } from "../plugins/auth.js";
import { CaseInsensitiveEnum, COMMON_ERRORS, UInt32, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { toQueueMode } from "./presenters.js";
import { QueueAddressFields } from "./schemas.js";

export const CreateQueueBody = Type.Object({
  ...QueueAddressFields,
  mode: Type.Optional(CaseInsensitiveEnum(QUEUE_MODES, "Queue mode; default `single`.")),
  concurrency: Type.Optional(UInt32(1, "Pull requests tested at once; default 1.")),
});

/** `{}` as Trunk answers; with Mainline's `warnings` when the queue cannot work yet. */
export const CreateQueueAnswer = Type.Object(
  {
    warnings: Type.Optional(
      Type.Array(
        Type.Object({
          code: Type.String({
            description: "`host_not_connected`: no provider for the repository's host here.",
          }),
          message: Type.String(),
        }),
        {
          description:
            "Mainline's extension (not in Trunk's API), present only when there is something to say: the queue was created, but cannot work yet. `host_not_connected`: this server has no provider for the repository's host (github.com without the GitHub App configured); the queue waits, and submitting a pull request answers `host_not_connected` (409), until it has one.",
        },
      ),
    ),
  },
  { description: "OK: an empty JSON object, or Mainline's `warnings`." },
);

export function registerCreateQueue(app: ApiApp, queues: MergeQueueService): void {
  app.post(
    "/v1/createQueue",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "Create a merge queue",
        description:
          "Creates the merge queue of a target branch with default settings (docs/contract.md §5); the repository is created if it is new, except on the local git host (`local`), where it must have been created in the organization with local/createRepository (404 otherwise). Change other settings with updateQueue.",
        body: CreateQueueBody,
        response: { 200: CreateQueueAnswer, ...errorResponses(...COMMON_ERRORS, 404, 409) },
      },
    },
    async (request) => {
      const { repo, targetBranch, mode, concurrency } = request.body;
      const normalizedMode = toQueueMode(mode);
      const { queue, warnings } = await queues.create(
        principalOf(request),
        { repo, targetBranch },
        {
          ...(normalizedMode ? { mode: normalizedMode } : {}),
          ...(concurrency !== undefined ? { concurrency } : {}),
        },
      );
      if (warnings.length === 0) return {};
      // Said once, where the queue is made; its driver says it once more if it is given work.
      for (const warning of warnings) {
        request.log.warn(
          { queueId: queue.id, host: repo.host, code: warning.code },
          warning.message,
        );
      }
      return { warnings };
    },
  );
}
