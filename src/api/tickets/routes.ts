/**
 * Tickets (docs/tickets.md): `/v1/tickets/*`, an organization's ticket connections (in the style
 * of `/v1/webhooks/*`: another organization's connection answers 404, the credential is never
 * shown), and `/v1/flaky-tests/create-ticket-for-test-case`, a Mainline extension of the Flaky
 * Tests API that creates a test's ticket through its repository's connection.
 */
import { Type, type Static, type TOptional } from "typebox";
import { isoTime } from "../../lib/clock.js";
import {
  LIMITS,
  TICKET_PROVIDER_KINDS,
  type ConnectionView,
  type TicketConnectionService,
} from "../../notifications/tickets/connections.js";
import {
  TicketExistsError,
  type LinkedTicketView,
  type TicketService,
} from "../../notifications/tickets/service.js";
import { baseUrlOf, repositoryQuery } from "../flakytests/context.js";
import { OrgRepoFields } from "../flakytests/schemas.js";
import { TestIdField } from "../flakytests/test-detail-schemas.js";
import { principalOf } from "../plugins/auth.js";
import {
  COMMON_ERRORS,
  EmptyObject,
  ErrorEnvelope,
  errorResponses,
  PATTERN_MESSAGES,
} from "../schemas.js";
import type { ApiApp } from "../types.js";

export interface TicketRouteDeps {
  connections: Pick<TicketConnectionService, "create" | "list" | "get" | "update" | "remove">;
  service: Pick<TicketService, "createForTest">;
  publicUrl: string | undefined;
}

const TAGS = ["Tickets"];
const Time = Type.Union([Type.String({ format: "date-time" }), Type.Null()]);
const NullableText = (maxLength: number, description: string) =>
  Type.Union([Type.String({ maxLength, description }), Type.Null()]);
const ConnectionId = Type.String({ minLength: 1, maxLength: 100, description: "`tc_…`" });

const LABEL_PATTERN = "^\\S+$";
PATTERN_MESSAGES.set(LABEL_PATTERN, "must be without spaces (Jira refuses labels with spaces)");

const ConnectionFields = {
  name: Type.String({
    minLength: 1,
    maxLength: LIMITS.name,
    description: "Shown on buttons and lists.",
  }),
  baseUrl: NullableText(
    2000,
    "Jira: the site (`https://acme.atlassian.net`) or Data Center base URL. Not taken for Linear and GitHub (the server's MAINLINE_LINEAR_API_URL, MAINLINE_GITHUB_API_URL).",
  ),
  target: NullableText(
    201,
    "Jira: the project key (`ENG`); Linear: the team id; GitHub: `owner/name` (null: each test's own repository).",
  ),
  issueType: NullableText(
    LIMITS.issueType,
    "Jira: the issue type (default `Bug`); Linear: a project id (optional).",
  ),
  labels: Type.Array(
    Type.String({ minLength: 1, maxLength: LIMITS.label, pattern: LABEL_PATTERN }),
    {
      maxItems: LIMITS.labels,
      description: "Labels of every ticket, without spaces (default `flaky-test`).",
    },
  ),
  email: NullableText(400, "Jira Cloud: the e-mail address of the account the API token is of."),
  credential: NullableText(
    LIMITS.credential,
    "Jira Cloud API token, Jira Data Center personal access token, Linear API key, GitHub token (GitHub: null uses the GitHub App's installation token). Never shown back.",
  ),
};

/** Every field but `kind`, each optional (a kind needs some of them: 400 naming the missing). */
const OptionalFields = Object.fromEntries(
  Object.entries(ConnectionFields).map(([name, schema]) => [name, Type.Optional(schema)]),
) as { [K in keyof typeof ConnectionFields]: TOptional<(typeof ConnectionFields)[K]> };

const ConnectionSchema = Type.Object({
  id: Type.String(),
  kind: Type.String({ enum: [...TICKET_PROVIDER_KINDS] }),
  name: Type.String(),
  baseUrl: Type.Union([Type.String(), Type.Null()]),
  target: Type.Union([Type.String(), Type.Null()]),
  issueType: Type.Union([Type.String(), Type.Null()]),
  labels: Type.Array(Type.String()),
  email: Type.Union([Type.String(), Type.Null()]),
  credentialSet: Type.Boolean({ description: "Whether a credential is stored (never shown)." }),
  lastError: Type.Union([Type.String(), Type.Null()], {
    description: "What the provider last refused or failed, in words.",
  }),
  lastErrorAt: Time,
  lastSuccessAt: Time,
  pausedUntil: Time,
  createdAt: Time,
  updatedAt: Time,
});

const time = (at: number | null) => (at === null ? null : isoTime(at));

function presentConnection(view: ConnectionView): Static<typeof ConnectionSchema> {
  return {
    id: view.id,
    kind: view.kind,
    name: view.name,
    baseUrl: view.baseUrl,
    target: view.target,
    issueType: view.issueType,
    labels: view.labels,
    email: view.email,
    credentialSet: view.credentialSet,
    lastError: view.lastError,
    lastErrorAt: time(view.lastErrorAt),
    lastSuccessAt: time(view.lastSuccessAt),
    pausedUntil: time(view.pausedUntil),
    createdAt: time(view.createdAt),
    updatedAt: time(view.updatedAt),
  };
}

const LinkedTicketSchema = Type.Object({
  html_url: Type.String(),
  key: Type.Union([Type.String(), Type.Null()], {
    description: "`ENG-42`; null for a ticket linked by hand.",
  }),
  state: Type.Union([Type.Object({ name: Type.String(), open: Type.Boolean() }), Type.Null()], {
    description: "As read from the provider; null when unknown.",
  }),
});

function presentLinked(ticket: LinkedTicketView): Static<typeof LinkedTicketSchema> {
  return { html_url: ticket.htmlUrl, key: ticket.key, state: ticket.state };
}

const ERRORS = errorResponses(...COMMON_ERRORS, 404, 409);

export function registerTicketRoutes(app: ApiApp, deps: TicketRouteDeps): void {
  registerConnectionRoutes(app, deps.connections);
  registerCreateTicket(app, deps);
}

function registerConnectionRoutes(app: ApiApp, connections: TicketRouteDeps["connections"]): void {
  app.post(
    "/v1/tickets/createConnection",
    {
      schema: {
        tags: TAGS,
        summary: "Add a ticket connection",
        description:
          "Jira Cloud (`jira_cloud`: baseUrl, target, email, credential), Jira Data Center (`jira_dc`: baseUrl, target, credential), Linear (`linear`: target, credential) or GitHub Issues (`github`). The credential is kept and never shown back. A repository names its connection in its test settings (`ticket_connection_id`).",
        body: Type.Object({
          kind: Type.String({ enum: [...TICKET_PROVIDER_KINDS] }),
          ...OptionalFields,
        }),
        response: { 200: Type.Object({ connection: ConnectionSchema }), ...ERRORS },
      },
    },
    async (request) => ({
      connection: presentConnection(await connections.create(principalOf(request), request.body)),
    }),
  );
  app.post(
    "/v1/tickets/listConnections",
    {
      schema: {
        tags: TAGS,
        summary: "List ticket connections",
        description: "With each one's last error and when it last worked; never a credential.",
        body: Type.Object({}),
        response: { 200: Type.Object({ connections: Type.Array(ConnectionSchema) }), ...ERRORS },
      },
    },
    async (request) => ({
      connections: (await connections.list(principalOf(request))).map(presentConnection),
    }),
  );
  app.post(
    "/v1/tickets/updateConnection",
    {
      schema: {
        tags: TAGS,
        summary: "Change a ticket connection",
        description:
          "Fields left out are kept; the kind cannot change. A new credential replaces the old one.",
        body: Type.Object({
          connectionId: ConnectionId,
          ...OptionalFields,
        }),
        response: { 200: Type.Object({ connection: ConnectionSchema }), ...ERRORS },
      },
    },
    async (request) => {
      const { connectionId, ...input } = request.body;
      return {
        connection: presentConnection(
          await connections.update(principalOf(request), connectionId, input),
        ),
      };
    },
  );
  app.post(
    "/v1/tickets/deleteConnection",
    {
      schema: {
        tags: TAGS,
        summary: "Delete a ticket connection",
        description:
          "Repositories that named it name none afterwards; the tickets created through it stay linked (their state is no longer read).",
        body: Type.Object({ connectionId: ConnectionId }),
        response: { 200: EmptyObject, ...ERRORS },
      },
    },
    async (request) => {
      await connections.remove(principalOf(request), request.body.connectionId);
      return {};
    },
  );
}

const ExistsEnvelope = Type.Object(
  { ...ErrorEnvelope.properties, ticket: LinkedTicketSchema },
  {
    description:
      "`conflict`: the test has a ticket that is open, or whose state cannot be told (`ticket`), or one is being created right now (no `ticket`).",
  },
);

function registerCreateTicket(app: ApiApp, deps: TicketRouteDeps): void {
  app.post(
    "/v1/flaky-tests/create-ticket-for-test-case",
    {
      schema: {
        tags: ["Flaky tests"],
        summary: "Create a test's ticket",
        description:
          "Mainline extension: creates a ticket for the test through the repository's ticket connection (`ticket_connection_id` of its test settings) and links it, as link-ticket-to-test-case does (its history says so). 409 with the `ticket` while an open ticket (or one whose state cannot be told) is linked; a closed one is replaced. Safe to retry: a create whose outcome was unknown is looked for before another is made. 400 when the repository has no connection; 502 `ticket_provider_error` when the provider refused (its answer in the message); 503 with `Retry-After` when it is rate limited or unreachable.",
        body: Type.Object({ ...OrgRepoFields, test_id: TestIdField("The test's id.") }),
        response: {
          200: Type.Object({
            test_id: Type.String({ format: "uuid" }),
            ticket: LinkedTicketSchema,
            created: Type.Boolean({
              description:
                "True when this request created it; false when an earlier request whose answer was lost had.",
            }),
          }),
          ...errorResponses(...COMMON_ERRORS, 403, 404, 502),
          409: ExistsEnvelope,
        },
      },
    },
    async (request, reply) => {
      try {
        const answer = await deps.service.createForTest(
          principalOf(request),
          { ...repositoryQuery(request.body), testId: request.body.test_id },
          baseUrlOf(deps.publicUrl, request),
        );
        return {
          test_id: answer.testId,
          ticket: presentLinked(answer.ticket),
          created: answer.created,
        };
      } catch (error) {
        if (!(error instanceof TicketExistsError)) throw error;
        return reply.status(409).send({
          error: { code: error.code, message: error.message },
          ticket: presentLinked(error.ticket),
        });
      }
    },
  );
}
