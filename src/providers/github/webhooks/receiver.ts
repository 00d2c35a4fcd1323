/**
 * `POST /webhooks/github` (no API token: the signature, checked over the exact bytes received, is
 * the credential). The answer comes only once the delivery is durably stored, and fast; handling
 * happens after, in the inbox's worker. A redelivery is answered the same and stored once.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ApiApp } from "../../../api/types.js";
import { ApiError } from "../../../lib/errors.js";
import type { Clock } from "../../../lib/clock.js";
import type { NewDelivery } from "../../../mergequeue/webhook-delivery-records.js";
import { verifySignature } from "./signature.js";

export const WEBHOOK_PATH = "/webhooks/github";
/** GitHub caps payloads at 25 MB and does not send larger ones. */
export const MAX_DELIVERY_BYTES = 25 * 1024 * 1024;

const EVENT = /^[a-z_]{1,64}$/;
const DELIVERY_ID = /^[A-Za-z0-9._:-]{1,100}$/;

export interface WebhookReceiverDeps {
  source: string;
  secret: string;
  store(delivery: NewDelivery): Promise<boolean>;
  /** A delivery was stored: the worker may start on it. */
  stored(): void;
  clock: Clock;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function registerWebhookRoute(scope: ApiApp, deps: WebhookReceiverDeps): void {
  // The exact bytes, for the signature: this scope's JSON bodies are not parsed by fastify.
  scope.removeContentTypeParser("application/json");
  scope.addContentTypeParser(
    "application/json",
    { parseAs: "buffer", bodyLimit: MAX_DELIVERY_BYTES },
    (_request, body, done) => {
      done(null, body);
    },
  );
  scope.post(
    WEBHOOK_PATH,
    { bodyLimit: MAX_DELIVERY_BYTES, schema: { hide: true } },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const signature = header(request, "x-hub-signature-256");
      if (signature === undefined) {
        throw new ApiError(
          "unauthorized",
          "Missing X-Hub-Signature-256: GitHub signs every delivery with the App's webhook secret.",
        );
      }
      if (!verifySignature(deps.secret, body, signature)) {
        throw new ApiError(
          "unauthorized",
          "X-Hub-Signature-256 does not match the body: the App's webhook secret and MAINLINE_GITHUB_WEBHOOK_SECRET differ, or the body was altered.",
        );
      }
      const event = header(request, "x-github-event");
      const deliveryId = header(request, "x-github-delivery");
      if (event === undefined || !EVENT.test(event)) {
        throw ApiError.invalid("X-GitHub-Event", "must name the event (lower case letters and _)");
      }
      if (deliveryId === undefined || !DELIVERY_ID.test(deliveryId)) {
        throw ApiError.invalid("X-GitHub-Delivery", "must be the delivery's GUID");
      }
      const text = body.toString("utf8");
      let payload: unknown;
      try {
        payload = JSON.parse(text);
      } catch {
        throw new ApiError("invalid_request", "The delivery's body is not valid JSON.");
      }
      if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
        throw new ApiError("invalid_request", "The delivery's body is not a JSON object.");
      }
      const { action, installation } = payload as {
        action?: unknown;
        installation?: { id?: unknown } | null;
      };
      const installationId = installation?.id;
      const stored = await deps.store({
        source: deps.source,
        deliveryId,
        event,
        action: typeof action === "string" ? action.slice(0, 100) : null,
        installationId:
          typeof installationId === "number" && Number.isSafeInteger(installationId)
            ? installationId
            : null,
        payload: text,
        receivedAt: deps.clock.now(),
      });
      if (stored) deps.stored();
      return reply.status(202).send({ accepted: true, duplicate: !stored });
    },
  );
}
