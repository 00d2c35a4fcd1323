import { Type } from "typebox";
import type { MergeQueueService } from "../../mergequeue/queue-service.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { presentQueueSettings, toSettingsPatch } from "./presenters.js";
import { QueueAddressFields, QueueSettingsResponse, SettingsInputFields } from "./schemas.js";

export const UpdateQueueBody = Type.Object({ ...QueueAddressFields, ...SettingsInputFields });

export function registerUpdateQueue(app: ApiApp, queues: MergeQueueService): void {
  app.post(
    "/v1/updateQueue",
    {
      schema: {
        tags: ["Merge queue"],
        summary: "Change a merge queue's settings or state",
        description:
          "Partial update: absent fields stay unchanged, present ones are stored exactly as sent and echoed back. A mode change while pull requests are in flight puts the queue in `switching_modes` until it has drained; meanwhile settings writes answer 409.",
        body: UpdateQueueBody,
        response: { 200: QueueSettingsResponse, ...errorResponses(...COMMON_ERRORS, 404, 409) },
      },
    },
    async (request) => {
      const { repo, targetBranch, ...settings } = request.body;
      const queue = await queues.update(
        principalOf(request),
        { repo, targetBranch },
        toSettingsPatch(settings),
      );
      return presentQueueSettings(queue);
    },
  );
}
