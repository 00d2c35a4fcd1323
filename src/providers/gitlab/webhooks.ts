/**
 * GitLab's webhooks: `POST /webhooks/gitlab/{hook key}`, one address per connected organization.
 * GitLab sends the hook's secret verbatim in `X-Gitlab-Token` (no signature on released
 * versions); it is compared in constant time. A delivery is answered once durably stored in the
 * inbox the GitHub provider uses too, keyed by GitLab's `Idempotency-Key` (17.4+; before it, the
 * event and hook UUIDs), and handled after, by this provider's inbox worker. GitLab disables a
 * hook after four failures and for good after a 4xx, so 4xx answers are kept for what only a
 * person can fix (docs/gitlab.md, "Webhooks").
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ApiApp } from "../../api/types.js";
import type { Clock } from "../../lib/clock.js";
import { ApiError } from "../../lib/errors.js";
import type { NewDelivery } from "../../mergequeue/webhook-delivery-records.js";
import type { GitLabConnections } from "./connections.js";

export const GITLAB_SOURCE = "gitlab";
export const GITLAB_WEBHOOK_PATH = "/webhooks/gitlab";
/** GitLab's default limit on a webhook's payload is 25 MB. */
const MAX_DELIVERY_BYTES = 25 * 1024 * 1024;
const KEY = /^[A-Za-z0-9_-]{8,64}$/;
const UUID = /^[A-Za-z0-9-]{1,64}$/;

export interface GitLabReceiverDeps {
  connections: Pick<GitLabConnections, "byHookKey">;
  store(delivery: NewDelivery): Promise<boolean>;
  /** A delivery was stored: the worker may start on it. */
  stored(): void;
  clock: Clock;
}

/** The webhook address of an organization's connection. */
export function gitlabWebhookUrl(publicUrl: string, hookKey: string): string {
  return `${publicUrl.replace(/\/+$/, "")}${GITLAB_WEBHOOK_PATH}/${hookKey}`;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Whether two secrets are equal, in time that does not depend on where they differ. */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text, "utf8").digest();
  return timingSafeEqual(digest(given), digest(expected)) && given.length === expected.length;
}

export function registerGitLabWebhookRoute(scope: ApiApp, deps: GitLabReceiverDeps): void {
  scope.post<{ Params: { key: string } }>(
    `${GITLAB_WEBHOOK_PATH}/:key`,
    { bodyLimit: MAX_DELIVERY_BYTES, schema: { hide: true } },
    async (request, reply: FastifyReply) => {
      const { key } = request.params;
      const connection = KEY.test(key) ? await deps.connections.byHookKey(key) : undefined;
      const token = header(request, "x-gitlab-token");
      if (!connection) {
        throw new ApiError(
          "not_found",
          "No GitLab connection has this webhook address: connect the organization again and use the address it shows (docs/gitlab.md).",
        );
      }
      if (token === undefined || !sameSecret(token, connection.webhookSecret)) {
        throw new ApiError(
          "unauthorized",
          "X-Gitlab-Token is missing or is not this connection's webhook secret: set the hook's secret token to the one the connection shows (docs/gitlab.md).",
        );
      }
      const payload = request.body;
      if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
        throw new ApiError("invalid_request", "The delivery's body is not a JSON object.");
      }
      const { object_kind: kind, object_attributes: attributes } = payload as {
        object_kind?: unknown;
        object_attributes?: { action?: unknown } | null;
      };
      if (typeof kind !== "string" || !/^[a-z_]{1,64}$/.test(kind)) {
        throw ApiError.invalid("object_kind", "must name the event, as GitLab's payloads do");
      }
      const action = attributes?.action;
      const text = JSON.stringify(payload);
      const stored = await deps.store({
        source: GITLAB_SOURCE,
        deliveryId: `${key}/${deliveryKey(request, text)}`,
        event: kind,
        action: typeof action === "string" ? action.slice(0, 100) : null,
        installationId: null,
        payload: text,
        receivedAt: deps.clock.now(),
      });
      if (stored) deps.stored();
      return reply.status(202).send({ accepted: true, duplicate: !stored });
    },
  );
}

/**
 * What tells a delivery from another: `Idempotency-Key` (the same on GitLab's retries), else the
 * event's and the hook's UUIDs, else the body itself.
 */
function deliveryKey(request: FastifyRequest, body: string): string {
  const idempotency = header(request, "idempotency-key");
  if (idempotency !== undefined && UUID.test(idempotency)) return idempotency;
  const event = header(request, "x-gitlab-event-uuid");
  const hook = header(request, "x-gitlab-webhook-uuid");
  if (event !== undefined && UUID.test(event)) {
    return hook !== undefined && UUID.test(hook) ? `${event}:${hook}` : event;
  }
  return createHash("sha256").update(body).digest("base64url");
}

/** The organization's hook key of a stored delivery's id. */
export function hookKeyOf(deliveryId: string): string {
  return deliveryId.slice(0, deliveryId.indexOf("/"));
}
