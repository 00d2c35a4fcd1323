import { Type } from "typebox";
import type { MergeQueueService } from "../../mergequeue/queue-service.js";
import { QUEUE_MODES } from "../../mergequeue/settings.js";
import { principalOf } from "../plugins/auth.js";
import {
  CaseInsensitiveEnum,
  COMMON_ERRORS,
  EmptyObject,
  UInt32,
  errorResponses,
} from "../schemas.js";
import type { ApiApp } from "../types.js";
import { toQueueMode } from "./presenters.js";
import { QueueAddressFields } from "./schemas.js";

export const CreateQueueBody = Type.Object({
  ...QueueAddressFields,
  mode: Type.Optional(CaseInsensitiveEnum(QUEUE_MODES, "Queue mode; default `single`.")),
  concurrency: Type.Optional(UInt32(1, "Pull requests tested at once; default 1.")),
});

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
        response: { 200: EmptyObject, ...errorResponses(...COMMON_ERRORS, 404, 409) },
      },
    },
    async (request) => {
      const { repo, targetBranch, mode, concurrency } = request.body;
      const normalizedMode = toQueueMode(mode);
      await queues.create(
        principalOf(request),
        { repo, targetBranch },
        {
          ...(normalizedMode ? { mode: normalizedMode } : {}),
          ...(concurrency !== undefined ? { concurrency } : {}),
        },
      );
      return {};
    },
  );
}
