/**
 * Tickets as GitHub issues, over GitHub's REST API (`POST /repos/{owner}/{repo}/issues`, the issue
 * list and `GET …/issues/{number}`), with a token as `Authorization: Bearer` (an installation token
 * of a GitHub App with Issues: write, or a personal token). The body is Markdown ending in the
 * ticket's hidden marker; `find` reads the repository's issues newest first rather than the search
 * API, whose rate limit is far stricter.
 */
import { markerLine, renderTicketMarkdown } from "./markdown.js";
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

/** GitHub's limits: an issue's body (characters), title, assignees. */
export const GITHUB_BODY_MAX = 65_536;
const TITLE_MAX = 256;
const ASSIGNEES_MAX = 10;

/** A GitHub login: alphanumerics and single inner hyphens, at most 39 characters. */
const LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/;
const REPOSITORY = /^([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))\/([A-Za-z0-9._-]{1,100})$/;

type Operation = "create" | "find" | "state";

interface IssueAnswer {
  number?: unknown;
  html_url?: unknown;
  body?: unknown;
  state?: unknown;
  state_reason?: unknown;
  pull_request?: unknown;
}

export interface GitHubTicketClientOptions {
  /** Pages of 100 issues `find` reads, newest first, before it answers "none" (default 3). */
  findPages?: number;
}

/** The plain users among CODEOWNERS entries (`@alice`), as logins: not teams, not emails. */
export function assigneesOf(owners: readonly string[]): string[] {
  const logins: string[] = [];
  for (const owner of owners) {
    const login = owner.startsWith("@") ? owner.slice(1) : "";
    if (!LOGIN.test(login)) continue;
    if (!logins.some((l) => l.toLowerCase() === login.toLowerCase())) logins.push(login);
  }
  return logins.slice(0, ASSIGNEES_MAX);
}

export class GitHubTicketClient implements TicketClient {
  private readonly findPages: number;

  constructor(options: GitHubTicketClientOptions = {}) {
    this.findPages = options.findPages ?? 3;
  }

  async create(
    connection: TicketConnection,
    draft: TicketDraft,
  ): Promise<TicketResult<CreatedTicket>> {
    const repo = repositoryOf(connection);
    if (!repo.ok) return repo;
    const assignees = assigneesOf(draft.owners);
    const payload: Record<string, unknown> = {
      title: titleOf(draft.title),
      body: renderTicketMarkdown(draft.blocks, draft.marker, { maxLength: GITHUB_BODY_MAX }),
      labels: draft.labels,
    };
    if (assignees.length > 0) payload.assignees = assignees;
    let outcome = await this.send(connection, "POST", `${repo.value}/issues`, payload);
    // GitHub refuses the whole issue (422, nothing created) when one assignee cannot be assigned
    // (not a collaborator, a deactivated account): the issue is created again without them.
    if (assignees.length > 0 && refusedAssignees(outcome)) {
      delete payload.assignees;
      outcome = await this.send(connection, "POST", `${repo.value}/issues`, payload);
    }
    const answer = this.read(connection, outcome, "create", [201]);
    if (!answer.ok) return answer;
    const created = createdTicket(answer.value as IssueAnswer);
    return created === null
      ? {
          ok: false,
          error: ticketError("unknown_outcome", 201, "GitHub's answer had no issue number"),
        }
      : { ok: true, value: created };
  }

  async find(
    connection: TicketConnection,
    marker: string,
  ): Promise<TicketResult<CreatedTicket | null>> {
    const repo = repositoryOf(connection);
    if (!repo.ok) return repo;
    const line = markerLine(marker);
    // Newest first: an issue whose create had an unknown outcome is among the latest. (`find` is
    // not given the draft's labels, so it cannot narrow the list by them.)
    const query = new URLSearchParams({
      state: "all",
      sort: "created",
      direction: "desc",
      per_page: "100",
    });
    for (let page = 1; page <= this.findPages; page++) {
      query.set("page", String(page));
      const outcome = await this.send(
        connection,
        "GET",
        `${repo.value}/issues?${query.toString()}`,
      );
      const answer = this.read(connection, outcome, "find", [200]);
      if (!answer.ok) return answer;
      if (!Array.isArray(answer.value)) {
        return {
          ok: false,
          error: ticketError("unavailable", 200, "GitHub's answer was not a list"),
        };
      }
      const issues = answer.value as IssueAnswer[];
      // The list holds pull requests too (GitHub: every pull request is an issue).
      const found = issues.find(
        (issue) =>
          issue.pull_request === undefined &&
          typeof issue.body === "string" &&
          issue.body.includes(line),
      );
      if (found !== undefined) return { ok: true, value: createdTicket(found) };
      if (issues.length < 100) break;
    }
    return { ok: true, value: null };
  }

  async state(
    connection: TicketConnection,
    ticket: { key: string; externalId: string },
  ): Promise<TicketResult<TicketState>> {
    const repo = repositoryOf(connection);
    if (!repo.ok) return repo;
    const number = /^\d+$/.exec(ticket.externalId.trim())?.[0];
    if (number === undefined) {
      return {
        ok: false,
        error: ticketError("invalid", null, `"${ticket.externalId}" is not a GitHub issue number`),
      };
    }
    const outcome = await this.send(connection, "GET", `${repo.value}/issues/${number}`);
    const answer = this.read(connection, outcome, "state", [200]);
    if (!answer.ok) return answer;
    const issue = answer.value as IssueAnswer;
    if (issue.state === "open") return { ok: true, value: { open: true, name: "open" } };
    if (issue.state === "closed") {
      const reason = issue.state_reason === "not_planned" ? " (not planned)" : "";
      return { ok: true, value: { open: false, name: `closed${reason}` } };
    }
    return { ok: false, error: ticketError("unavailable", 200, "GitHub's answer had no state") };
  }

  private send(
    connection: TicketConnection,
    method: "GET" | "POST",
    path: string,
    payload?: unknown,
  ): Promise<TicketHttpOutcome> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${connection.credential}`,
      accept: "application/vnd.github+json",
      "x-github-api-version": "2022-11-28",
      "user-agent": "Mainline",
    };
    if (payload !== undefined) headers["content-type"] = "application/json";
    return ticketRequest(connection, {
      method,
      url: `${connection.baseUrl.replace(/\/+$/, "")}${path}`,
      headers,
      ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
    });
  }

  /** The answer's JSON when its status is one of `ok`; else the error it means. */
  private read(
    connection: TicketConnection,
    outcome: TicketHttpOutcome,
    operation: Operation,
    ok: number[],
  ): TicketResult<unknown> {
    if (outcome.kind !== "answered") {
      return { ok: false, error: noAnswerError("GitHub", outcome, operation === "create") };
    }
    let json: unknown;
    try {
      json = outcome.text === "" ? undefined : JSON.parse(outcome.text);
    } catch {
      json = undefined;
    }
    if (ok.includes(outcome.status) && json !== undefined) return { ok: true, value: json };
    return { ok: false, error: githubError(connection, outcome, operation, json) };
  }
}

function repositoryOf(connection: TicketConnection): TicketResult<string> {
  const match = REPOSITORY.exec(connection.target.trim());
  if (match === null) {
    return {
      ok: false,
      error: ticketError(
        "invalid",
        null,
        `"${connection.target}" is not a GitHub repository (expected owner/name)`,
      ),
    };
  }
  const [, owner = "", name = ""] = match;
  return { ok: true, value: `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(name)}` };
}

/** A title GitHub takes: one line, at most 256 characters. */
function titleOf(title: string): string {
  const line = title.replace(/\s+/g, " ").trim() || "Test needs attention";
  const chars = Array.from(line);
  return chars.length <= TITLE_MAX ? line : `${chars.slice(0, TITLE_MAX - 1).join("")}…`;
}

function createdTicket(issue: IssueAnswer): CreatedTicket | null {
  if (typeof issue.number !== "number" || !Number.isInteger(issue.number)) return null;
  return {
    key: `#${String(issue.number)}`,
    url: typeof issue.html_url === "string" ? issue.html_url : "",
    externalId: String(issue.number),
  };
}

function refusedAssignees(outcome: TicketHttpOutcome): boolean {
  if (outcome.kind !== "answered" || outcome.status !== 422) return false;
  try {
    const body = JSON.parse(outcome.text) as { errors?: { field?: unknown }[] };
    const errors = Array.isArray(body.errors) ? body.errors : [];
    return (
      errors.length > 0 && errors.every((e) => e.field === "assignees" || e.field === "assignee")
    );
  } catch {
    return false;
  }
}

/** GitHub's `{message, errors[]}` in words. */
function githubMessage(json: unknown): string {
  if (typeof json !== "object" || json === null) return "";
  const { message, errors } = json as { message?: unknown; errors?: unknown };
  const parts: string[] = typeof message === "string" ? [message] : [];
  if (Array.isArray(errors)) {
    for (const error of errors.slice(0, 5)) {
      if (typeof error === "string") {
        parts.push(error);
        continue;
      }
      const e = error as { field?: unknown; code?: unknown; message?: unknown; value?: unknown };
      if (typeof e.message === "string" && e.message !== "") parts.push(e.message);
      else if (typeof e.field === "string") {
        const value = e.value === undefined ? "" : ` ${JSON.stringify(e.value)}`;
        parts.push(`${e.field}${value}: ${typeof e.code === "string" ? e.code : "invalid"}`);
      }
    }
  }
  return parts.join("; ");
}

function githubError(
  connection: TicketConnection,
  outcome: Extract<TicketHttpOutcome, { kind: "answered" }>,
  operation: Operation,
  json: unknown,
): TicketError {
  const { status, headers } = outcome;
  const said = scrub(githubMessage(json), connection.credential);
  const because = said === "" ? "" : `: ${said}`;
  const what = `GitHub answered ${String(status)}${because}`;
  if (status >= 300 && status < 400) {
    return ticketError(
      operation === "state" ? "not_found" : "invalid",
      status,
      scrub(redirectMessage("GitHub", status, headers), connection.credential),
    );
  }
  if (status === 401) {
    return ticketError("auth", status, `${what} (the token is wrong, expired or revoked)`);
  }
  const limited = rateLimit(status, headers, said);
  if (limited !== null)
    return ticketError("rate_limited", status, `${what} (rate limited)`, limited);
  if (status === 403) {
    return ticketError(
      "auth",
      status,
      `${what} (the token may not do this: it needs Issues: write)`,
    );
  }
  if (status === 404) {
    const subject = operation === "state" ? "the issue, or the repository," : "the repository";
    return ticketError(
      "not_found",
      status,
      `${what} (${subject} does not exist or the token cannot see it)`,
    );
  }
  if (status === 410) {
    const deleted = /deleted/i.test(said);
    return ticketError(
      deleted ? "not_found" : "invalid",
      status,
      deleted
        ? `${what} (the issue was deleted)`
        : `${what} (issues are turned off for this repository)`,
    );
  }
  if (status === 400 || status === 422) return ticketError("invalid", status, what);
  if (status >= 500) return troubleError(status, what, operation === "create");
  if (status >= 200 && status < 300) {
    const unread = `GitHub answered ${String(status)} without the expected JSON`;
    return troubleError(status, unread, operation === "create");
  }
  return ticketError("invalid", status, what);
}

/** When a 403 or 429 is GitHub's rate limit: how long to wait (ms); null when it is not one. */
function rateLimit(status: number, headers: Headers, message: string): number | null {
  if (status !== 403 && status !== 429) return null;
  const retry = retryAfterMs(headers);
  const exhausted = headers.get("x-ratelimit-remaining") === "0";
  const secondary = /secondary rate limit|rate limit exceeded/i.test(message);
  if (status === 403 && !exhausted && !secondary && retry === null) return null;
  if (retry !== null) return retry;
  const reset = Number(headers.get("x-ratelimit-reset"));
  if (exhausted && Number.isFinite(reset) && reset > 0)
    return Math.max(0, reset * 1000 - Date.now());
  // GitHub: without a header, wait at least a minute after a secondary limit.
  return 60_000;
}
