import { Type } from "typebox";
import type { MergeQueueService } from "../../mergequeue/queue-service.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, EmptyObject, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { QueueAddressFields } from "./schemas.js";

export const DeleteQueueBody = Type.Object(QueueAddressFields);

export function registerDeleteQueue(app: ApiApp, queues: MergeQueueService): void {
  app.post(
    "/v1/deleteQueue",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "Delete a merge queue",
        description:
          "Deletes an empty queue. A queue that still holds pull requests answers 400: drain it first.",
        body: DeleteQueueBody,
        response: { 200: EmptyObject, ...errorResponses(...COMMON_ERRORS, 404) },
      },
    },
    async (request) => {
      const { repo, targetBranch } = request.body;
      await queues.delete(principalOf(request), { repo, targetBranch });
      return {};
    },
  );
}
