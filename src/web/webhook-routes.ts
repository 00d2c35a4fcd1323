/**
 * Webhooks' pages and forms (docs/dashboard.md): the endpoints with the add form, an endpoint's
 * page with its deliveries, and its actions (test event, enable, disable, delete, resend). They
 * call the API's own `WebhookService`, so another organization's endpoint is the one 404.
 */
import { Type } from "typebox";
import { ApiError } from "../lib/errors.js";
import type { WebhookService } from "../notifications/service.js";
import {
  eventField,
  renderEndpoint,
  renderWebhooks,
  type EndpointDraft,
} from "./pages/webhooks.js";
import type { PageContext, Web } from "./toolkit.js";
import { urls } from "./urls.js";

export interface WebhookPageDependencies {
  service: Pick<
    WebhookService,
    "create" | "list" | "get" | "update" | "remove" | "listDeliveries" | "resend" | "sendTest"
  >;
  /** The event types an endpoint may take (the add form's checkboxes). */
  eventTypes: readonly string[];
}

/** How many of an endpoint's deliveries its page shows (newest first). */
const DELIVERIES_SHOWN = 50;

const OrgParams = Type.Object({ org: Type.String({ maxLength: 63 }) });
const EndpointParams = Type.Object({
  org: Type.String({ maxLength: 63 }),
  id: Type.String({ minLength: 1, maxLength: 100 }),
});
/** `note=`: a word of NOTES (what a form just did), never text shown as given. */
const NoteQuery = Type.Object({ note: Type.Optional(Type.String({ maxLength: 40 })) });

const NOTES: Record<string, string> = {
  "test-sent": "A test event (mainline.ping) is on its way to this endpoint.",
  enabled: "Enabled: events are sent to this endpoint again, its pending deliveries resume.",
  disabled: "Disabled: no event is sent to this endpoint until it is enabled.",
  resent: "Sent again: a new delivery of the event, with the same webhook-id.",
  deleted: "The endpoint was deleted, with its deliveries.",
};
const noteOf = (note: string | undefined) =>
  note !== undefined && Object.hasOwn(NOTES, note) ? NOTES[note] : undefined;

export function registerWebhookPages(web: Web, deps: WebhookPageDependencies): void {
  registerList(web, deps);
  registerEndpointPage(web, deps);
  registerEndpointActions(web, deps);
}

async function listView(deps: WebhookPageDependencies, context: PageContext) {
  return {
    org: context.org,
    endpoints: await deps.service.list(context.viewer.principal),
    eventTypes: deps.eventTypes,
    csrf: context.viewer.csrf,
    now: context.now,
  };
}

function registerList(web: Web, deps: WebhookPageDependencies): void {
  web.page(
    "/:org/webhooks",
    { params: OrgParams, querystring: NoteQuery },
    async (request, context) => ({
      view: renderWebhooks({
        ...(await listView(deps, context)),
        note: noteOf(request.query.note),
      }),
    }),
  );

  // The add form: checkboxes are `event:<type>` fields, since a form's repeated names would merge.
  // Fields of other kinds than the one chosen come empty (or as typed before a change of kind):
  // only the chosen kind's are sent on. The bot token is never shown back.
  web.action(
    "/:org/webhooks",
    {
      params: OrgParams,
      body: Type.Object({
        kind: Type.Optional(Type.String({ maxLength: 20 })),
        url: Type.Optional(Type.String({ maxLength: 2000 })),
        botToken: Type.Optional(Type.String({ maxLength: 300 })),
        channel: Type.Optional(Type.String({ maxLength: 81 })),
        owners: Type.Optional(Type.String({ maxLength: 2000 })),
        description: Type.Optional(Type.String({ maxLength: 500 })),
      }),
    },
    async (request, context) => {
      const body = request.body as Record<string, unknown>;
      const given = (text: string | undefined) => (text?.trim() ? text.trim() : undefined);
      const draft: EndpointDraft = {
        kind: given(request.body.kind) ?? "webhook",
        url: request.body.url?.trim() ?? "",
        channel: request.body.channel?.trim() ?? "",
        codeOwners: request.body.owners?.trim() ?? "",
        description: request.body.description?.trim() ?? "",
        eventTypes: deps.eventTypes.filter((type) => body[eventField(type)] === "on"),
      };
      const bot = draft.kind === "slack_bot";
      try {
        const created = await deps.service.create(context.viewer.principal, {
          kind: draft.kind,
          url: bot ? undefined : given(draft.url),
          secret: bot ? given(request.body.botToken) : undefined,
          channel: bot ? given(draft.channel) : undefined,
          codeOwners: draft.codeOwners.split(/[\s,]+/).filter((owner) => owner !== ""),
          description: draft.description,
          eventTypes: draft.eventTypes.length === 0 ? undefined : [...draft.eventTypes],
        });
        // Shown here, once: a redirect would have to carry the secret in its address.
        return {
          status: 201,
          view: renderWebhooks({ ...(await listView(deps, context)), created }),
        };
      } catch (error) {
        if (!(error instanceof ApiError) || (error.status !== 400 && error.status !== 409)) {
          throw error;
        }
        return {
          status: error.status,
          view: renderWebhooks({
            ...(await listView(deps, context)),
            problem: { message: error.message, draft },
          }),
        };
      }
    },
  );
}

function registerEndpointPage(web: Web, deps: WebhookPageDependencies): void {
  web.page(
    "/:org/webhooks/:id",
    { params: EndpointParams, querystring: NoteQuery },
    async (request, context) => {
      const { principal } = context.viewer;
      // Another organization's endpoint: `not_found`, the one 404 page.
      const endpoint = await deps.service.get(principal, request.params.id);
      const { total, deliveries } = await deps.service.listDeliveries(
        principal,
        { endpointId: endpoint.id },
        { offset: 0, limit: DELIVERIES_SHOWN },
      );
      return {
        view: renderEndpoint({
          org: context.org,
          endpoint,
          deliveries,
          totalDeliveries: total,
          csrf: context.viewer.csrf,
          now: context.now,
          note: noteOf(request.query.note),
        }),
      };
    },
  );
}

function registerEndpointActions(web: Web, deps: WebhookPageDependencies): void {
  const { service } = deps;
  for (const action of ["test", "enable", "disable", "delete"] as const) {
    web.action(
      `/:org/webhooks/:id/${action}`,
      { params: EndpointParams },
      async (request, context) => {
        const { principal } = context.viewer;
        const id = request.params.id;
        if (action === "delete") {
          await service.remove(principal, id);
          return { redirect: urls.webhooks(context.org, "deleted") };
        }
        if (action === "test") {
          await service.sendTest(principal, id);
          return { redirect: urls.webhook(context.org, id, "test-sent") };
        }
        await service.update(principal, id, { enabled: action === "enable" }, "the dashboard");
        return {
          redirect: urls.webhook(context.org, id, action === "enable" ? "enabled" : "disabled"),
        };
      },
    );
  }
  web.action(
    "/:org/webhooks/:id/resend",
    {
      params: EndpointParams,
      body: Type.Object({ eventId: Type.String({ minLength: 1, maxLength: 100 }) }),
    },
    async (request, context) => {
      await service.resend(context.viewer.principal, request.body.eventId, request.params.id);
      return { redirect: urls.webhook(context.org, request.params.id, "resent") };
    },
  );
}
