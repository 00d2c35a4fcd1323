/**
 * `/v1/webhooks/*`: an organization's outbound webhook endpoints, events and deliveries (issue
 * 36; docs/webhooks.md). Same token, error envelope and page tokens as the other lists; another
 * organization's endpoint or event answers 404.
 */
import { Type, type Static } from "typebox";
import { isoTime } from "../../lib/clock.js";
import type { PageInfo } from "../../lib/page-tokens.js";
import type { EndpointView, WebhookService } from "../../notifications/service.js";
import { EVENT_TYPES } from "../../notifications/events.js";
import { ENDPOINT_KINDS } from "../../notifications/kinds.js";
import type { Pager } from "../../testhealth/pager.js";
import { PageQuerySchema, PageSchema } from "../flakytests/schemas.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, EmptyObject, RepoRefSchema, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";

export interface WebhookRouteDeps {
  service: WebhookService;
  pager: Pick<Pager, "offset" | "page">;
}

const TAGS = ["Webhooks"];
const EndpointId = Type.String({ minLength: 1, maxLength: 100, description: "`we_…`" });
const EventId = Type.String({ minLength: 1, maxLength: 100, description: "`msg_…`" });
const Time = Type.Union([Type.String({ format: "date-time" }), Type.Null()]);

const EndpointFields = {
  kind: Type.String({
    enum: [...ENDPOINT_KINDS],
    description:
      "`webhook` (default): signed JSON POSTs to `url`; `slack`: a Slack incoming-webhook `url`; `slack_bot`: a Slack bot token in `secret` and a `channel`; `teams`: a Teams Workflows trigger `url`. Never changes.",
  }),
  url: Type.String({
    minLength: 1,
    maxLength: 2000,
    description:
      "http(s) URL receiving POSTs (https for `slack` and `teams`, whose URL is the credential); none for `slack_bot`.",
  }),
  channel: Type.String({
    minLength: 1,
    maxLength: 81,
    description: "`slack_bot` only: the channel id (`C…`, `G…`, `D…`) or `#name`.",
  }),
  codeOwners: Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
    maxItems: 50,
    description:
      "Only test events of tests one of these owns (CODEOWNERS: `@user`, `@org/team`, an email; case-insensitive, `@` optional); empty: every test. Queue events are not owner-scoped.",
  }),
  secret: Type.String({
    maxLength: 300,
    description:
      "`webhook`: its signing secret (`whsec_…`); `slack_bot`: the bot token (`xoxb-…`).",
  }),
  description: Type.String({ maxLength: 500 }),
  eventTypes: Type.Array(Type.String({ enum: [...EVENT_TYPES] }), {
    maxItems: EVENT_TYPES.length,
    description:
      "Event types sent; empty: all. Left out when creating a Slack or Teams endpoint: a test's status (v1), pull requests failed or canceled, the queues' state.",
  }),
  repositories: Type.Array(RepoRefSchema, {
    maxItems: 100,
    description: "Only events of these repositories; empty: all.",
  }),
};

const EndpointSchema = Type.Object({
  id: Type.String(),
  kind: Type.String({ enum: [...ENDPOINT_KINDS] }),
  url: Type.String({
    description:
      "Slack and Teams URLs redacted (`https://hooks.slack.com/…`); empty for `slack_bot`.",
  }),
  channel: Type.Union([Type.String(), Type.Null()]),
  description: Type.String(),
  eventTypes: Type.Array(Type.String()),
  repositories: Type.Array(RepoRefSchema),
  codeOwners: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabledReason: Type.Union([Type.String(), Type.Null()]),
  disabledAt: Time,
  failingSince: Time,
  createdAt: Time,
  updatedAt: Time,
});

const AttemptSchema = Type.Object({
  at: Time,
  statusCode: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  durationMs: Type.Integer(),
  response: Type.Union([Type.String(), Type.Null()]),
});

const DeliverySchema = Type.Object({
  id: Type.String(),
  eventId: Type.String(),
  eventType: Type.String(),
  endpointId: Type.String(),
  state: Type.String({ enum: ["pending", "succeeded", "failed"] }),
  attempts: Type.Array(AttemptSchema),
  nextAttemptAt: Time,
  createdAt: Time,
});

const EventSchema = Type.Object({
  id: Type.String(),
  type: Type.String(),
  subject: Type.String(),
  createdAt: Time,
  preparedAt: Time,
  payload: Type.Union([Type.Unknown(), Type.Null()]),
});

const time = (at: number | null) => (at === null ? null : isoTime(at));

function presentEndpoint(endpoint: EndpointView): Static<typeof EndpointSchema> {
  return {
    id: endpoint.id,
    kind: endpoint.kind,
    url: endpoint.url,
    channel: endpoint.channel,
    description: endpoint.description,
    eventTypes: endpoint.eventTypes,
    repositories: endpoint.repositories,
    codeOwners: endpoint.codeOwners,
    enabled: endpoint.enabled,
    disabledReason: endpoint.disabledReason,
    disabledAt: time(endpoint.disabledAt),
    failingSince: time(endpoint.failingSince),
    createdAt: time(endpoint.createdAt),
    updatedAt: time(endpoint.updatedAt),
  };
}

const ERRORS = errorResponses(...COMMON_ERRORS, 404, 409);

export function registerWebhookRoutes(app: ApiApp, deps: WebhookRouteDeps): void {
  registerEndpointRoutes(app, deps.service);
  registerLogRoutes(app, deps);
}

function registerEndpointRoutes(app: ApiApp, service: WebhookService): void {
  app.post(
    "/v1/webhooks/createEndpoint",
    {
      schema: {
        tags: TAGS,
        summary: "Create a webhook, Slack or Teams endpoint",
        description:
          "A webhook's secret (`whsec_…`, generated unless given) is in this answer (empty for the other kinds); later only through revealSecret or rotateSecret.",
        body: Type.Object({
          kind: Type.Optional(EndpointFields.kind),
          url: Type.Optional(EndpointFields.url),
          channel: Type.Optional(EndpointFields.channel),
          description: Type.Optional(EndpointFields.description),
          eventTypes: Type.Optional(EndpointFields.eventTypes),
          repositories: Type.Optional(EndpointFields.repositories),
          codeOwners: Type.Optional(EndpointFields.codeOwners),
          enabled: Type.Optional(Type.Boolean()),
          secret: Type.Optional(EndpointFields.secret),
        }),
        response: {
          200: Type.Object({ endpoint: EndpointSchema, secret: Type.String() }),
          ...ERRORS,
        },
      },
    },
    async (request) => {
      const created = await service.create(principalOf(request), request.body);
      return { endpoint: presentEndpoint(created.endpoint), secret: created.secret };
    },
  );
  app.post(
    "/v1/webhooks/listEndpoints",
    {
      schema: {
        tags: TAGS,
        summary: "List webhook endpoints",
        body: Type.Object({}),
        response: { 200: Type.Object({ endpoints: Type.Array(EndpointSchema) }), ...ERRORS },
      },
    },
    async (request) => ({
      endpoints: (await service.list(principalOf(request))).map(presentEndpoint),
    }),
  );
  app.post(
    "/v1/webhooks/updateEndpoint",
    {
      schema: {
        tags: TAGS,
        summary: "Change a webhook endpoint",
        description:
          "Fields left out are kept; the kind never changes. `enabled: true` re-enables a disabled endpoint. `secret` replaces a Slack bot's token (or sets a webhook's).",
        body: Type.Object({
          endpointId: EndpointId,
          url: Type.Optional(EndpointFields.url),
          channel: Type.Optional(EndpointFields.channel),
          secret: Type.Optional(EndpointFields.secret),
          description: Type.Optional(EndpointFields.description),
          eventTypes: Type.Optional(EndpointFields.eventTypes),
          repositories: Type.Optional(EndpointFields.repositories),
          codeOwners: Type.Optional(EndpointFields.codeOwners),
          enabled: Type.Optional(Type.Boolean()),
        }),
        response: { 200: Type.Object({ endpoint: EndpointSchema }), ...ERRORS },
      },
    },
    async (request) => {
      const { endpointId, ...input } = request.body;
      return {
        endpoint: presentEndpoint(await service.update(principalOf(request), endpointId, input)),
      };
    },
  );
  app.post(
    "/v1/webhooks/deleteEndpoint",
    {
      schema: {
        tags: TAGS,
        summary: "Delete a webhook endpoint",
        description: "With its deliveries and their attempts.",
        body: Type.Object({ endpointId: EndpointId }),
        response: { 200: EmptyObject, ...ERRORS },
      },
    },
    async (request) => {
      await service.remove(principalOf(request), request.body.endpointId);
      return {};
    },
  );
  for (const [operation, rotate] of [
    ["revealSecret", false],
    ["rotateSecret", true],
  ] as const) {
    app.post(
      `/v1/webhooks/${operation}`,
      {
        schema: {
          tags: TAGS,
          summary: rotate ? "Rotate an endpoint's secret" : "Show an endpoint's credential",
          description: rotate
            ? "Webhooks only (409 for the other kinds): a new signing secret; the old one stops signing at once."
            : "A webhook's signing secret, a Slack bot's token, or a Slack or Teams URL (listed redacted).",
          body: Type.Object({ endpointId: EndpointId }),
          response: { 200: Type.Object({ secret: Type.String() }), ...ERRORS },
        },
      },
      async (request) => ({
        secret: await service.secret(principalOf(request), request.body.endpointId, rotate),
      }),
    );
  }
}

function registerLogRoutes(app: ApiApp, { service, pager }: WebhookRouteDeps): void {
  const scopeOf = (endpoint: string, organizationId: string, filters: string) => ({
    endpoint,
    organizationId,
    repositoryId: "",
    filters,
  });
  const paged = async <T>(
    scope: ReturnType<typeof scopeOf>,
    query: { page_size: number; page_token?: string },
    read: (page: { offset: number; limit: number }) => Promise<{ total: number; rows: T[] }>,
  ): Promise<{ rows: T[]; page: PageInfo }> => {
    const offset = await pager.offset(scope, query.page_token);
    const { total, rows } = await read({ offset, limit: query.page_size });
    return { rows, page: await pager.page(scope, offset, query.page_size, total) };
  };
  app.post(
    "/v1/webhooks/listEvents",
    {
      schema: {
        tags: TAGS,
        summary: "List outbound events",
        description: "Newest first, each with the body its deliveries send.",
        body: Type.Object({ page_query: PageQuerySchema }),
        response: {
          200: Type.Object({ events: Type.Array(EventSchema), page: PageSchema }),
          ...ERRORS,
        },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const scope = scopeOf("webhooks/listEvents", principal.organizationId, "");
      const { rows, page } = await paged(scope, request.body.page_query, async (window) => {
        const { total, events } = await service.listEvents(principal, window);
        return { total, rows: events };
      });
      return {
        events: rows.map((event) => ({
          id: event.id,
          type: event.type,
          subject: event.subject,
          createdAt: time(event.createdAt),
          preparedAt: time(event.preparedAt),
          payload: event.payload === null ? null : (JSON.parse(event.payload) as unknown),
        })),
        page,
      };
    },
  );
  app.post(
    "/v1/webhooks/listDeliveries",
    {
      schema: {
        tags: TAGS,
        summary: "List deliveries with their attempts",
        description: "Newest first; of one endpoint or one event when given.",
        body: Type.Object({
          endpointId: Type.Optional(EndpointId),
          eventId: Type.Optional(EventId),
          page_query: PageQuerySchema,
        }),
        response: {
          200: Type.Object({ deliveries: Type.Array(DeliverySchema), page: PageSchema }),
          ...ERRORS,
        },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { endpointId, eventId } = request.body;
      const filters = `endpoint=${endpointId ?? ""}\u0000event=${eventId ?? ""}`;
      const scope = scopeOf("webhooks/listDeliveries", principal.organizationId, filters);
      const { rows, page } = await paged(scope, request.body.page_query, async (window) => {
        const { total, deliveries } = await service.listDeliveries(
          principal,
          { endpointId, eventId },
          window,
        );
        return { total, rows: deliveries };
      });
      return {
        deliveries: rows.map((delivery) => ({
          id: delivery.id,
          eventId: delivery.eventId,
          eventType: delivery.eventType,
          endpointId: delivery.endpointId,
          state: delivery.state,
          attempts: delivery.attemptLog.map((attempt) => ({ ...attempt, at: time(attempt.at) })),
          nextAttemptAt: delivery.state === "pending" ? time(delivery.nextAttemptAt) : null,
          createdAt: time(delivery.createdAt),
        })),
        page,
      };
    },
  );
  app.post(
    "/v1/webhooks/resend",
    {
      schema: {
        tags: TAGS,
        summary: "Send an event again",
        description: "A new delivery of the event to the endpoint, with the same `webhook-id`.",
        body: Type.Object({ eventId: EventId, endpointId: EndpointId }),
        response: { 200: Type.Object({ deliveryId: Type.String() }), ...ERRORS },
      },
    },
    async (request) => ({
      deliveryId: await service.resend(
        principalOf(request),
        request.body.eventId,
        request.body.endpointId,
      ),
    }),
  );
  app.post(
    "/v1/webhooks/sendTestEvent",
    {
      schema: {
        tags: TAGS,
        summary: "Send a test event",
        description: "A `mainline.ping` event delivered to this endpoint only.",
        body: Type.Object({ endpointId: EndpointId }),
        response: {
          200: Type.Object({ eventId: Type.String(), deliveryId: Type.String() }),
          ...ERRORS,
        },
      },
    },
    async (request) => service.sendTest(principalOf(request), request.body.endpointId),
  );
}
