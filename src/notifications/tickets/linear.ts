/**
 * Tickets as Linear issues, over Linear's GraphQL API (`POST https://api.linear.app/graphql`):
 * `issueCreate` in the connection's team (and project, when `issueType` holds a project id), an
 * `issues` query on the description for the marker, `issue(id:)` for the state. A personal API key
 * (`lin_api_…`) goes as the bare `Authorization` header, an OAuth token as `Bearer …`. Every value
 * travels as a GraphQL variable, never inside the query text. Labels and assignees are not set
 * (Linear takes them as ids, which would need lookups first). Linear answers errors as `errors[]`
 * with `extensions.code`, with HTTP 200 or 4xx alike: the code decides, the status comes second.
 */
import { markerText, renderTicketMarkdown } from "./markdown.js";
import {
  noAnswerError,
  redirectMessage,
  retryAfterMs,
  scrub,
  ticketError,
  ticketRequest,
  troubleError,
  type TicketHttpOutcome,
} from "./transport.js";
import type {
  CreatedTicket,
  TicketClient,
  TicketConnection,
  TicketDraft,
  TicketError,
  TicketResult,
  TicketState,
} from "./types.js";

const CREATE = `mutation MainlineTicketCreate($input: IssueCreateInput!) {
  issueCreate(input: $input) { success issue { id identifier url } }
}`;

const FIND = `query MainlineTicketFind($filter: IssueFilter!) {
  issues(filter: $filter, first: 10, includeArchived: true) {
    nodes { id identifier url description }
  }
}`;

const STATE = `query MainlineTicketState($id: String!) {
  issue(id: $id) { id state { name type } }
}`;

type Operation = "create" | "find" | "state";

interface LinearIssueNode {
  id?: unknown;
  identifier?: unknown;
  url?: unknown;
  description?: unknown;
  state?: { name?: unknown; type?: unknown } | null;
}

interface GraphQLErrorEntry {
  message?: unknown;
  extensions?: { code?: unknown; type?: unknown; userPresentableMessage?: unknown } | null;
}

/** The `Authorization` header for a Linear credential: a personal API key bare, else a Bearer token. */
export function linearAuthorization(credential: string): string {
  const value = credential.trim();
  if (value.startsWith("lin_api_") || /^Bearer /i.test(value)) return value;
  return `Bearer ${value}`;
}

/** A Linear workflow state's type that means the ticket is no longer open. */
const CLOSED_TYPES = new Set(["completed", "canceled"]);

export class LinearTicketClient implements TicketClient {
  async create(
    connection: TicketConnection,
    draft: TicketDraft,
  ): Promise<TicketResult<CreatedTicket>> {
    const input: Record<string, unknown> = {
      teamId: connection.target,
      title: draft.title.replace(/\s+/g, " ").trim() || "Test needs attention",
      // Visible: Linear's editor may drop an HTML comment, and `find` looks for the marker.
      description: renderTicketMarkdown(draft.blocks, draft.marker, { visibleMarker: true }),
    };
    const project = connection.issueType?.trim();
    if (project !== undefined && project !== "") input.projectId = project;
    const answer = await this.call(connection, "create", CREATE, { input });
    if (!answer.ok) return answer;
    const payload = (
      answer.value as { issueCreate?: { success?: unknown; issue?: unknown } | null }
    ).issueCreate;
    const created = payload?.success === true ? ticketOf(payload.issue as LinearIssueNode) : null;
    if (created === null) {
      return {
        ok: false,
        error: ticketError("invalid", 200, "Linear answered that it did not create the issue"),
      };
    }
    return { ok: true, value: created };
  }

  async find(
    connection: TicketConnection,
    marker: string,
  ): Promise<TicketResult<CreatedTicket | null>> {
    const text = markerText(marker);
    const filter = {
      team: { id: { eq: connection.target } },
      description: { contains: text },
    };
    const answer = await this.call(connection, "find", FIND, { filter });
    if (!answer.ok) return answer;
    const nodes = (answer.value as { issues?: { nodes?: unknown } | null }).issues?.nodes;
    if (!Array.isArray(nodes)) {
      return { ok: false, error: ticketError("unavailable", 200, "Linear's answer had no issues") };
    }
    // `contains` also matches a longer marker that starts with this one: the whole marker only.
    const whole = new RegExp(`${escapeRegExp(text)}(?![A-Za-z0-9_.:=+/%])`);
    for (const node of nodes as LinearIssueNode[]) {
      if (typeof node.description === "string" && whole.test(node.description)) {
        return { ok: true, value: ticketOf(node) };
      }
    }
    return { ok: true, value: null };
  }

  async state(
    connection: TicketConnection,
    ticket: { key: string; externalId: string },
  ): Promise<TicketResult<TicketState>> {
    const id = ticket.externalId.trim() || ticket.key.trim();
    const answer = await this.call(connection, "state", STATE, { id });
    if (!answer.ok) return answer;
    const issue = (answer.value as { issue?: LinearIssueNode | null }).issue;
    if (issue === null || issue === undefined) {
      return {
        ok: false,
        error: ticketError("not_found", 200, `Linear has no issue ${ticket.key}`),
      };
    }
    const name = issue.state?.name;
    const type = issue.state?.type;
    if (typeof name !== "string" || typeof type !== "string") {
      return { ok: false, error: ticketError("unavailable", 200, "Linear's answer had no state") };
    }
    return { ok: true, value: { open: !CLOSED_TYPES.has(type), name } };
  }

  /** One GraphQL request; its `data` when there is no error. */
  private async call(
    connection: TicketConnection,
    operation: Operation,
    query: string,
    variables: Record<string, unknown>,
  ): Promise<TicketResult<unknown>> {
    const outcome = await ticketRequest(connection, {
      method: "POST",
      url: connection.baseUrl,
      headers: {
        authorization: linearAuthorization(connection.credential),
        "content-type": "application/json",
        accept: "application/json",
        "user-agent": "Mainline",
      },
      body: JSON.stringify({ query, variables }),
    });
    return readAnswer(connection, outcome, operation);
  }
}

function ticketOf(node: LinearIssueNode | null | undefined): CreatedTicket | null {
  if (node === null || node === undefined) return null;
  if (typeof node.id !== "string" || typeof node.identifier !== "string") return null;
  return {
    key: node.identifier,
    url: typeof node.url === "string" ? node.url : "",
    externalId: node.id,
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

function readAnswer(
  connection: TicketConnection,
  outcome: TicketHttpOutcome,
  operation: Operation,
): TicketResult<unknown> {
  if (outcome.kind !== "answered") {
    return { ok: false, error: noAnswerError("Linear", outcome, operation === "create") };
  }
  let json: { data?: unknown; errors?: unknown } | undefined;
  try {
    const parsed: unknown = JSON.parse(outcome.text);
    json = typeof parsed === "object" && parsed !== null ? parsed : undefined;
  } catch {
    json = undefined;
  }
  const errors = Array.isArray(json?.errors) ? (json.errors as GraphQLErrorEntry[]) : [];
  if (outcome.status === 200 && errors.length === 0 && json?.data != null) {
    return { ok: true, value: json.data };
  }
  // An issue made is an issue made, whatever else the answer says (no second one after it).
  const made = (json?.data as { issueCreate?: { success?: unknown } | null } | null | undefined)
    ?.issueCreate;
  if (operation === "create" && made?.success === true) return { ok: true, value: json?.data };
  return { ok: false, error: linearError(connection, outcome, operation, errors) };
}

/** Linear's `extensions.code` (or the older `extensions.type`) of an error, upper case. */
function codeOf(error: GraphQLErrorEntry | undefined): string {
  const code = error?.extensions?.code;
  if (typeof code === "string") return code.toUpperCase();
  const type = error?.extensions?.type;
  return typeof type === "string" ? type.toUpperCase().replace(/ /g, "_") : "";
}

function describeErrors(errors: readonly GraphQLErrorEntry[]): string {
  return errors
    .slice(0, 3)
    .map((e) => {
      const message = typeof e.message === "string" ? e.message : "";
      const shown = e.extensions?.userPresentableMessage;
      const friendly = typeof shown === "string" && shown !== message ? shown : "";
      return [message, friendly].filter((part) => part !== "").join(" — ");
    })
    .filter((text) => text !== "")
    .join("; ");
}

function linearError(
  connection: TicketConnection,
  outcome: Extract<TicketHttpOutcome, { kind: "answered" }>,
  operation: Operation,
  errors: readonly GraphQLErrorEntry[],
): TicketError {
  const { status, headers } = outcome;
  const said = scrub(describeErrors(errors), connection.credential);
  const what = `Linear answered ${String(status)}${said === "" ? "" : `: ${said}`}`;
  const create = operation === "create";
  switch (codeOf(errors[0])) {
    case "AUTHENTICATION_ERROR":
    case "UNAUTHENTICATED":
      return ticketError("auth", status, `${what} (the API key is wrong or revoked)`);
    case "FORBIDDEN":
      return ticketError("auth", status, `${what} (the API key may not do this)`);
    case "RATELIMITED":
    case "RATE_LIMITED":
      return ticketError("rate_limited", status, `${what} (rate limited)`, linearRetry(headers));
    case "INPUT_ERROR":
    case "INVALID_INPUT":
      if (!/entity not found/i.test(said)) return ticketError("invalid", status, what);
      return ticketError(
        "not_found",
        status,
        operation === "state"
          ? `${what} (the issue was deleted, or the API key cannot see it)`
          : `${what} (check the connection's team id and project id)`,
      );
    case "GRAPHQL_VALIDATION_FAILED":
    case "GRAPHQL_PARSE_FAILED":
    case "BAD_USER_INPUT":
    case "GRAPHQL_ERROR":
      return ticketError("invalid", status, `${what} (Linear refused the request itself)`);
    case "USAGE_LIMIT_EXCEEDED":
    case "FEATURE_NOT_ACCESSIBLE":
      return ticketError("invalid", status, what);
    default:
      break;
  }
  if (status >= 300 && status < 400) {
    return ticketError("invalid", status, redirectMessage("Linear", status, headers));
  }
  if (status === 401 || status === 403) return ticketError("auth", status, what);
  if (status === 429) {
    return ticketError("rate_limited", status, `${what} (rate limited)`, linearRetry(headers));
  }
  if (status === 404) {
    return ticketError("not_found", status, `${what} (no GraphQL API at the connection's URL)`);
  }
  if (status === 400) return ticketError("invalid", status, what);
  // A 5xx, an error Linear did not classify, or a 200 without data: on a create, it may have
  // happened (the issue is looked for before another is made).
  return troubleError(status, what, create);
}

/** How long to wait after a rate limit: `Retry-After`, else the spent budget's reset (epoch ms). */
function linearRetry(headers: Headers): number {
  const retry = retryAfterMs(headers);
  if (retry !== null) return retry;
  const now = Date.now();
  const resets: number[] = [];
  for (const budget of ["requests", "complexity"]) {
    const reset = Number(headers.get(`x-ratelimit-${budget}-reset`));
    const remaining = headers.get(`x-ratelimit-${budget}-remaining`);
    if (!Number.isFinite(reset) || reset <= 0) continue;
    // Linear gives milliseconds since the epoch; seconds are read as such too.
    const resetMs = reset < 1e12 ? reset * 1000 : reset;
    if (remaining === "0") return Math.max(0, resetMs - now);
    resets.push(Math.max(0, resetMs - now));
  }
  return resets.length > 0 ? Math.min(...resets) : 60_000;
}
