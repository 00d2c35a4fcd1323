/**
 * Tickets in the dashboard (docs/tickets.md): the test page's "Create ticket in <connection>"
 * form, and the ticket connections' page (list, add a Jira connection, delete). They call the
 * API's own services, so another organization's test or connection is the one 404, and a
 * provider's refusal is shown on the test page in its own words.
 */
import { Type } from "typebox";
import { ApiError } from "../lib/errors.js";
import type { TicketConnectionService } from "../notifications/tickets/connections.js";
import type { TicketService } from "../notifications/tickets/service.js";
import { renderTickets, type JiraDraft, type TicketsView } from "./pages/tickets.js";
import { repoRef } from "./repo-param.js";
import { testPageForms } from "./test-page/forms.js";
import { renderTestPage, type TestPageLoader } from "./test-page/html.js";
import type { PageContext, Web } from "./toolkit.js";
import { urls } from "./urls.js";

export interface TicketPageDependencies {
  service: Pick<TicketService, "createForTest">;
  connections: Pick<TicketConnectionService, "list" | "create" | "remove">;
  testPage: TestPageLoader;
  /** A repository's cached tests table is stale (a ticket was linked). */
  invalidate(repositoryId: string): void;
}

const TestParams = Type.Object({
  org: Type.String({ maxLength: 63 }),
  id: Type.String({ maxLength: 64 }),
});
const TestFormQuery = Type.Object({
  repo: Type.String({ maxLength: 600 }),
  host: Type.Optional(Type.String({ maxLength: 255 })),
});
const OrgParams = Type.Object({ org: Type.String({ maxLength: 63 }) });
const ConnectionParams = Type.Object({
  org: Type.String({ maxLength: 63 }),
  id: Type.String({ minLength: 1, maxLength: 100 }),
});
const NoteQuery = Type.Object({ note: Type.Optional(Type.String({ maxLength: 40 })) });

const NOTES: Record<string, string> = {
  added: "Added: name it in a repository's test settings (ticket_connection_id) to use it.",
  deleted: "Deleted: repositories that named it name none now; its tickets stay linked.",
};

export function registerTicketPages(web: Web, deps: TicketPageDependencies): void {
  registerCreateTicket(web, deps);
  registerConnectionsPage(web, deps);
}

/** "Create ticket": back to the test page with a note, or the page again saying why not. */
function registerCreateTicket(web: Web, deps: TicketPageDependencies): void {
  web.action(
    "/:org/flaky-tests/test/:id/create-ticket",
    { params: TestParams, querystring: TestFormQuery },
    async (request, context) => {
      const repo = repoRef(request.query);
      if (!repo) return { redirect: urls.tests(context.org) };
      const testId = request.params.id;
      try {
        const created = await deps.service.createForTest(
          context.viewer.principal,
          { orgUrlSlug: context.org, repo, testId },
          context.baseUrl,
        );
        deps.invalidate(created.repositoryId);
      } catch (error) {
        // Not found (another organization's test too) stays the one 404 page.
        if (!(error instanceof ApiError) || error.status === 404) throw error;
        const view = await deps.testPage(
          context.viewer.principal,
          { testId, repo },
          context.baseUrl,
        );
        if (!view) throw error;
        return {
          status: error.status,
          view: renderTestPage(
            view,
            testPageForms(context, testId, repo, {
              problem: `No ticket created: ${error.message}`,
            }),
          ),
        };
      }
      return { redirect: urls.test(context.org, testId, repo, "ticket-created") };
    },
  );
}

async function listView(deps: TicketPageDependencies, context: PageContext): Promise<TicketsView> {
  return {
    org: context.org,
    connections: await deps.connections.list(context.viewer.principal),
    csrf: context.viewer.csrf,
    now: context.now,
  };
}

const TEXT = (max: number) => Type.Optional(Type.String({ maxLength: max }));

function registerConnectionsPage(web: Web, deps: TicketPageDependencies): void {
  web.page(
    "/:org/tickets",
    { params: OrgParams, querystring: NoteQuery },
    async (request, context) => {
      const note = request.query.note;
      return {
        view: renderTickets({
          ...(await listView(deps, context)),
          note: note !== undefined && Object.hasOwn(NOTES, note) ? NOTES[note] : undefined,
        }),
      };
    },
  );

  web.action(
    "/:org/tickets",
    {
      params: OrgParams,
      body: Type.Object({
        kind: Type.Union([Type.Literal("jira_cloud"), Type.Literal("jira_dc")]),
        name: TEXT(100),
        baseUrl: TEXT(2000),
        target: TEXT(100),
        email: TEXT(400),
        credential: TEXT(1000),
        issueType: TEXT(100),
        labels: TEXT(500),
      }),
    },
    async (request, context) => {
      const body = request.body;
      const draft: JiraDraft = {
        kind: body.kind,
        name: body.name?.trim() ?? "",
        baseUrl: body.baseUrl?.trim() ?? "",
        target: body.target?.trim() ?? "",
        email: body.email?.trim() ?? "",
        issueType: body.issueType?.trim() ?? "",
        labels: body.labels?.trim() ?? "",
      };
      const labels = draft.labels
        .split(",")
        .map((label) => label.trim())
        .filter((label) => label !== "");
      try {
        await deps.connections.create(context.viewer.principal, {
          kind: draft.kind,
          baseUrl: draft.baseUrl,
          target: draft.target,
          credential: body.credential ?? "",
          ...(draft.name === "" ? {} : { name: draft.name }),
          ...(draft.email === "" ? {} : { email: draft.email }),
          ...(draft.issueType === "" ? {} : { issueType: draft.issueType }),
          ...(labels.length === 0 ? {} : { labels }),
        });
      } catch (error) {
        if (!(error instanceof ApiError) || (error.status !== 400 && error.status !== 409)) {
          throw error;
        }
        return {
          status: error.status,
          view: renderTickets({
            ...(await listView(deps, context)),
            problem: { message: error.message, draft },
          }),
        };
      }
      return { redirect: urls.tickets(context.org, "added") };
    },
  );

  web.action("/:org/tickets/:id/delete", { params: ConnectionParams }, async (request, context) => {
    await deps.connections.remove(context.viewer.principal, request.params.id);
    return { redirect: urls.tickets(context.org, "deleted") };
  });
}
