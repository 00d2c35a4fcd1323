import { Type } from "typebox";
import type { MergeQueueService } from "../../mergequeue/queue-service.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { presentQueue } from "./presenters.js";
import { GetQueueResponse, QueueAddressFields } from "./schemas.js";

export const GetQueueBody = Type.Object(QueueAddressFields);

export function registerGetQueue(app: ApiApp, queues: MergeQueueService): void {
  app.post(
    "/v1/getQueue",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "Read a merge queue",
        description:
          "Answers every setting of the queue and the pull requests it holds, and (Mainline's extension) the batch size in use and the failed batches being localized.",
        body: GetQueueBody,
        response: { 200: GetQueueResponse, ...errorResponses(...COMMON_ERRORS, 404) },
      },
    },
    async (request) => {
      const { repo, targetBranch } = request.body;
      const { queue, ...activity } = await queues.get(principalOf(request), { repo, targetBranch });
      return presentQueue(queue, activity);
    },
  );
}
