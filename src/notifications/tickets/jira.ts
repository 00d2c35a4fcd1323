/**
 * Jira's ticket clients (docs/tickets.md): Jira Cloud through REST API v3 (Basic `email:token`,
 * the description in Atlassian Document Format) and Jira Data Center through REST API v2
 * (`Bearer` personal access token, wiki markup). Every ticket carries the label of its marker,
 * which `find` searches for. Answers become `TicketResult`s: 401/403 `auth`, 404 `not_found`,
 * 400 `invalid` with Jira's own messages, 429 `rate_limited` with `Retry-After`, 5xx or no
 * answer on a create `unknown_outcome`, otherwise `unavailable`.
 */
import { markerLabel } from "./draft.js";
import { toAdf, toWikiMarkup } from "./jira-format.js";
import {
  providerRequest,
  providerWords,
  retryAfterMs,
  type Answer,
  type NoAnswer,
} from "./provider-request.js";
import type {
  CreatedTicket,
  TicketClient,
  TicketConnection,
  TicketDraft,
  TicketError,
  TicketErrorKind,
  TicketResult,
  TicketState,
} from "./types.js";

type Flavour = "cloud" | "dc";

const DEFAULT_ISSUE_TYPE = "Bug";

interface Call {
  /** Whether a failed answer may have changed something (a create). */
  creates: boolean;
  what: string;
}

function base(connection: TicketConnection): string {
  return connection.baseUrl.replace(/\/+$/, "");
}

function apiPath(flavour: Flavour): string {
  return flavour === "cloud" ? "/rest/api/3" : "/rest/api/2";
}

function authorization(flavour: Flavour, connection: TicketConnection): string {
  if (flavour === "dc") return `Bearer ${connection.credential}`;
  const pair = `${connection.email ?? ""}:${connection.credential}`;
  return `Basic ${Buffer.from(pair, "utf8").toString("base64")}`;
}

function failure(
  kind: TicketErrorKind,
  status: number | null,
  message: string,
  retryAfter: number | null = null,
): { ok: false; error: TicketError } {
  return { ok: false, error: { kind, status, message, retryAfterMs: retryAfter } };
}

/** Jira's `{"errorMessages": [...], "errors": {"field": "message"}}` as one sentence. */
function jiraMessages(json: unknown): string {
  if (!json || typeof json !== "object") return "";
  const { errorMessages, errors } = json as { errorMessages?: unknown; errors?: unknown };
  const parts: string[] = [];
  if (Array.isArray(errorMessages)) {
    parts.push(...errorMessages.filter((m): m is string => typeof m === "string"));
  }
  if (errors && typeof errors === "object") {
    for (const [field, message] of Object.entries(errors)) {
      if (typeof message === "string") parts.push(`${field}: ${message}`);
    }
  }
  return parts.join("; ");
}

const AUTH_WORDS: Record<Flavour, string> = {
  cloud: "the API token (with the account's e-mail address) was refused",
  dc: "the personal access token was refused",
};

function answerError(
  flavour: Flavour,
  connection: TicketConnection,
  answer: Answer,
  call: Call,
): { ok: false; error: TicketError } {
  const { status } = answer;
  const said = providerWords(jiraMessages(answer.json), connection.credential);
  const saying = said === "" ? "" : `: ${said}`;
  const prefix = `Jira answered ${status} to ${call.what}`;
  if (status === 401) return failure("auth", status, `${prefix}: ${AUTH_WORDS[flavour]}.`);
  if (status === 403) {
    return failure(
      "auth",
      status,
      `${prefix}: the account lacks a permission (Browse projects, Create issues)${saying}.`,
    );
  }
  if (status === 404) {
    return failure(
      "not_found",
      status,
      `${prefix}: not found (the project, issue or site)${saying}.`,
    );
  }
  if (status === 429) {
    const wait = retryAfterMs(answer.headers);
    const when = wait === null ? "later" : `after ${Math.ceil(wait / 1000)} s`;
    return failure("rate_limited", status, `${prefix}: rate limited; retry ${when}.`, wait);
  }
  if (status === 400 || status === 422) {
    return failure("invalid", status, `${prefix}: the request was refused${saying}.`);
  }
  if (status >= 300 && status < 400) {
    return failure(
      "unavailable",
      status,
      `${prefix}: a redirect, which Mainline does not follow; check the connection's site URL.`,
    );
  }
  if (status >= 500 && call.creates) {
    return failure(
      "unknown_outcome",
      status,
      `${prefix}${saying}; the ticket may have been created: Mainline looks for it before creating another.`,
    );
  }
  return failure("unavailable", status, `${prefix}${saying}.`);
}

function noAnswerError(answer: NoAnswer, call: Call): { ok: false; error: TicketError } {
  if (answer.sent && call.creates) {
    return failure(
      "unknown_outcome",
      null,
      `Jira gave no answer to ${call.what} (${answer.reason}); the ticket may have been created: Mainline looks for it before creating another.`,
    );
  }
  return failure(
    "unavailable",
    null,
    `Jira could not be reached for ${call.what}: ${answer.reason}.`,
  );
}

function browseUrl(connection: TicketConnection, key: string): string {
  return `${base(connection)}/browse/${encodeURIComponent(key)}`;
}

/** An issue of Jira's answers (`{id, key}`), or undefined when the answer has none. */
function issueOf(value: unknown): { id: string; key: string } | undefined {
  if (!value || typeof value !== "object") return undefined;
  const { id, key } = value as { id?: unknown; key?: unknown };
  if (typeof key !== "string" || (typeof id !== "string" && typeof id !== "number")) {
    return undefined;
  }
  return { id: String(id), key };
}

class JiraClient implements TicketClient {
  constructor(private readonly flavour: Flavour) {}

  private async send(
    connection: TicketConnection,
    call: Call,
    request: { method: "GET" | "POST"; path: string; body?: unknown },
  ): Promise<TicketResult<Answer>> {
    const answer = await providerRequest({
      method: request.method,
      url: `${base(connection)}${request.path}`,
      headers: {
        authorization: authorization(this.flavour, connection),
        accept: "application/json",
        ...(request.body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      timeoutMs: connection.timeoutMs,
      allowPrivate: connection.allowPrivate,
    });
    if (!answer.answered) return noAnswerError(answer, call);
    if (answer.status < 200 || answer.status >= 300) {
      return answerError(this.flavour, connection, answer, call);
    }
    return { ok: true, value: answer };
  }

  async create(
    connection: TicketConnection,
    draft: TicketDraft,
  ): Promise<TicketResult<CreatedTicket>> {
    const call = { creates: true, what: "the create" };
    const labels = [...new Set([...draft.labels, markerLabel(draft.marker)])];
    const sent = await this.send(connection, call, {
      method: "POST",
      path: `${apiPath(this.flavour)}/issue`,
      body: {
        fields: {
          project: { key: connection.target },
          issuetype: { name: connection.issueType ?? DEFAULT_ISSUE_TYPE },
          summary: draft.title,
          labels,
          description: this.flavour === "cloud" ? toAdf(draft.blocks) : toWikiMarkup(draft.blocks),
        },
      },
    });
    if (!sent.ok) return sent;
    const issue = issueOf(sent.value.json);
    if (!issue) {
      return failure(
        "unknown_outcome",
        sent.value.status,
        `Jira answered ${sent.value.status} to the create without the issue's id and key; Mainline looks for the ticket before creating another.`,
      );
    }
    return {
      ok: true,
      value: { key: issue.key, url: browseUrl(connection, issue.key), externalId: issue.id },
    };
  }

  async find(
    connection: TicketConnection,
    marker: string,
  ): Promise<TicketResult<CreatedTicket | null>> {
    const jql = `labels = "${markerLabel(marker)}"`;
    const path =
      this.flavour === "cloud"
        ? `/rest/api/3/search/jql?jql=${encodeURIComponent(jql)}&fields=status&maxResults=1`
        : `/rest/api/2/search?jql=${encodeURIComponent(jql)}&fields=status&maxResults=1`;
    const sent = await this.send(
      connection,
      { creates: false, what: "the search" },
      {
        method: "GET",
        path,
      },
    );
    if (!sent.ok) return sent;
    const issues = (sent.value.json as { issues?: unknown } | undefined)?.issues;
    if (!Array.isArray(issues)) {
      return failure("unavailable", sent.value.status, "Jira's search answer had no issue list.");
    }
    const issue = issueOf(issues[0]);
    return {
      ok: true,
      value: issue
        ? { key: issue.key, url: browseUrl(connection, issue.key), externalId: issue.id }
        : null,
    };
  }

  async state(
    connection: TicketConnection,
    ticket: { key: string; externalId: string },
  ): Promise<TicketResult<TicketState>> {
    const id = ticket.externalId === "" ? ticket.key : ticket.externalId;
    const sent = await this.send(
      connection,
      { creates: false, what: `reading ${ticket.key}` },
      {
        method: "GET",
        path: `${apiPath(this.flavour)}/issue/${encodeURIComponent(id)}?fields=status`,
      },
    );
    if (!sent.ok) return sent;
    const status = (
      sent.value.json as
        { fields?: { status?: { name?: unknown; statusCategory?: { key?: unknown } } } } | undefined
    )?.fields?.status;
    if (typeof status?.name !== "string") {
      return failure(
        "unavailable",
        sent.value.status,
        `Jira's answer for ${ticket.key} had no status.`,
      );
    }
    return {
      ok: true,
      value: { name: status.name, open: status.statusCategory?.key !== "done" },
    };
  }
}

/** Jira Cloud (`https://<site>.atlassian.net`), REST API v3. */
export const jiraCloudClient: TicketClient = new JiraClient("cloud");

/** Jira Data Center (its base URL, with its context path if any), REST API v2. */
export const jiraDataCenterClient: TicketClient = new JiraClient("dc");
