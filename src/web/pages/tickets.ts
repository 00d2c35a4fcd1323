/**
 * Ticket connections (docs/tickets.md): the organization's connections with what each last failed
 * with, a form to add a Jira connection (Cloud or Data Center), and a delete button. A credential
 * is typed into a password field, sent once, and never shown (not even back into a refused form).
 */
import type { ConnectionView } from "../../notifications/tickets/connections.js";
import { muted, plural, relativeTime, scrollX } from "../format.js";
import { markup, type SafeHtml } from "../html.js";
import type { PageView } from "../layout.js";
import { urls } from "../urls.js";

/** What the add form held when it was refused, its token aside. */
export interface JiraDraft {
  kind: "jira_cloud" | "jira_dc";
  name: string;
  baseUrl: string;
  target: string;
  email: string;
  issueType: string;
  labels: string;
}

export interface TicketsView {
  org: string;
  connections: readonly ConnectionView[];
  csrf: string | undefined;
  now: number;
  note?: string | undefined;
  problem?: { message: string; draft: JiraDraft } | undefined;
}

const KIND_NAMES: Record<string, string> = {
  jira_cloud: "Jira Cloud",
  jira_dc: "Jira Data Center",
  linear: "Linear",
  github: "GitHub Issues",
};

function hidden(csrf: string): SafeHtml {
  return markup`<input type="hidden" name="csrf" value="${csrf}">`;
}

function connectionsTable(view: TicketsView): SafeHtml {
  if (view.connections.length === 0) {
    return markup`<p class="muted">No ticket connection yet.</p>`;
  }
  const rows = view.connections.map((c) => {
    const where = [c.baseUrl, c.target].filter((part) => part !== null).join(" · ");
    const health =
      c.lastError !== null && c.lastErrorAt !== null
        ? markup`<span class="error">${c.lastError}</span> <span class="muted">${relativeTime(c.lastErrorAt, view.now)}</span>`
        : c.lastSuccessAt !== null
          ? markup`worked ${relativeTime(c.lastSuccessAt, view.now)}`
          : muted("not used yet");
    const remove = view.csrf
      ? markup`<form method="post" action="${urls.ticketForm(view.org, c.id, "delete")}">${hidden(view.csrf)}<button type="submit" aria-label="Delete ${c.name}">Delete</button></form>`
      : "";
    return markup`<tr>
<td>${c.name}<br><span class="muted small">${c.id}</span></td>
<td>${KIND_NAMES[c.kind] ?? c.kind}</td>
<td>${where || muted("each test's repository")}</td>
<td>${c.credentialSet ? "set" : muted("none")}</td>
<td>${health}</td>
<td>${remove}</td>
</tr>
`;
  });
  return scrollX(
    "Ticket connections",
    markup`<table class="connections">
<caption class="visually-hidden">Ticket connections (${plural(view.connections.length, "connection")})</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Where</th><th scope="col">Credential</th><th scope="col">Last call</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>
${rows}</tbody>
</table>`,
  );
}

function field(id: string, label: SafeHtml | string, input: SafeHtml, hint?: string): SafeHtml {
  return markup`<label for="${id}">${label}</label>
${input}${
    hint
      ? markup`
<p class="muted small" id="${id}-hint">${hint}</p>`
      : ""
  }`;
}

function addForm(view: TicketsView): SafeHtml | string {
  if (!view.csrf) return "";
  const draft = view.problem?.draft;
  const problem = view.problem
    ? markup`<p class="notice problem" role="alert" id="add-problem">Not added: ${view.problem.message}</p>`
    : "";
  const kind = draft?.kind ?? "jira_cloud";
  const option = (value: string, label: string) =>
    markup`<option value="${value}"${value === kind ? markup` selected` : ""}>${label}</option>`;
  const optional = markup` <span class="muted">(optional)</span>`;
  return markup`<section aria-labelledby="add">
<h2 id="add">Add a Jira connection</h2>
${problem}
<form class="stacked" method="post" action="${urls.tickets(view.org)}"${view.problem ? markup` aria-describedby="add-problem"` : ""}>
${hidden(view.csrf)}
${field("ticket-kind", "Jira", markup`<select id="ticket-kind" name="kind">${option("jira_cloud", "Jira Cloud")}${option("jira_dc", "Jira Data Center")}</select>`)}
${field("ticket-name", markup`Name${optional}`, markup`<input type="text" id="ticket-name" name="name" maxlength="100" value="${draft?.name ?? ""}" placeholder="Jira ENG">`)}
${field("ticket-site", "Site URL", markup`<input type="url" id="ticket-site" name="baseUrl" required maxlength="2000" value="${draft?.baseUrl ?? ""}" placeholder="https://acme.atlassian.net" aria-describedby="ticket-site-hint">`, "Jira Cloud's site, or Jira Data Center's base URL.")}
${field("ticket-project", "Project key", markup`<input type="text" id="ticket-project" name="target" required maxlength="100" value="${draft?.target ?? ""}" placeholder="ENG">`)}
${field("ticket-email", markup`Account e-mail <span class="muted">(Jira Cloud)</span>`, markup`<input type="text" id="ticket-email" name="email" maxlength="400" autocomplete="off" value="${draft?.email ?? ""}">`)}
${field("ticket-token", "API token", markup`<input type="password" id="ticket-token" name="credential" required maxlength="1000" autocomplete="off" aria-describedby="ticket-token-hint">`, "Jira Cloud: an API token of that account. Data Center: a personal access token. Never shown again.")}
${field("ticket-type", markup`Issue type${optional}`, markup`<input type="text" id="ticket-type" name="issueType" maxlength="100" value="${draft?.issueType ?? ""}" placeholder="Bug">`)}
${field("ticket-labels", markup`Labels${optional}`, markup`<input type="text" id="ticket-labels" name="labels" maxlength="500" value="${draft?.labels ?? ""}" placeholder="flaky-test" aria-describedby="ticket-labels-hint">`, "Separated by commas, without spaces in a label.")}
<div><button type="submit" class="primary">Add connection</button></div>
</form>
</section>`;
}

export function renderTickets(view: TicketsView): PageView {
  return {
    title: `${view.org} · Ticket connections`,
    breadcrumbs: [{ label: "Ticket connections" }],
    main: markup`<h1>Ticket connections</h1>
<p class="muted">Tickets for flaky and broken tests are created through these: a repository names its connection in its test settings (<code>ticket_connection_id</code>), and its tests' pages get a "Create ticket" button. Linear and GitHub Issues connections are added through the API or <code>mainline tickets</code>.</p>
${view.note ? markup`<p class="notice" role="status">${view.note}</p>` : ""}
<h2>Connections</h2>
${connectionsTable(view)}
${addForm(view)}`,
  };
}
