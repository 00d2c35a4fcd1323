/**
 * Tickets for tests: the neutral document a ticket's body is built as (each provider renders it:
 * Jira Cloud as ADF, Jira Data Center as wiki markup, Linear and GitHub as Markdown), and the
 * client each provider implements. Pure types; no I/O here.
 */

export type TicketProviderKind = "jira_cloud" | "jira_dc" | "linear" | "github";

/** A run of text in a paragraph or list item. */
export interface TicketSpan {
  text: string;
  href?: string;
  code?: boolean;
  strong?: boolean;
}

export type TicketBlock =
  | { kind: "heading"; text: string }
  | { kind: "paragraph"; spans: TicketSpan[] }
  | { kind: "list"; items: TicketSpan[][] }
  | { kind: "code"; text: string };

export interface TicketDraft {
  /** Mainline's id of the test (the API's test id). */
  testId: string;
  /** A marker unique to this test and connection, written into the ticket so that a create whose outcome was unknown is found again instead of repeated. */
  marker: string;
  title: string;
  blocks: TicketBlock[];
  labels: string[];
  /** CODEOWNERS of the test, as written there (`@org/team`, `@user`, `user@example.com`). */
  owners: string[];
}

/** A connection as a client needs it, credentials resolved. */
export interface TicketConnection {
  id: string;
  kind: TicketProviderKind;
  /** Jira: the site (`https://acme.atlassian.net`, a DC base URL); Linear: the GraphQL URL; GitHub: the REST API URL. */
  baseUrl: string;
  /** Jira: project key; Linear: team id; GitHub: `owner/name` of the repository issues go to. */
  target: string;
  /** Jira: issue type name (default `Bug`); Linear: optional project id; GitHub: unused. */
  issueType: string | null;
  /** Jira Cloud: the account email (Basic auth with the token); others: null. */
  email: string | null;
  /** Jira Cloud API token, Jira DC personal access token, Linear API key, GitHub token. */
  credential: string;
  /** Requests time out after this. */
  timeoutMs: number;
  /** Whether loopback and private addresses may be called (tests, intranet Jira). */
  allowPrivate: boolean;
}

export interface CreatedTicket {
  /** `ENG-42`, `ENG-42` (Linear identifier), `#17`. */
  key: string;
  url: string;
  /** The provider's own id (Jira issue id, Linear issue UUID, GitHub issue number as text). */
  externalId: string;
}

export interface TicketState {
  open: boolean;
  /** The provider's name of the state (`To Do`, `In Progress`, `Done`, `open`, `closed`). */
  name: string;
}

export type TicketErrorKind =
  | "auth" // 401/403: credentials wrong or lacking permission
  | "not_found" // 404: project/team/repository/issue missing
  | "invalid" // 400/422: the provider refused the content
  | "rate_limited" // 429 (or GitHub's 403 secondary limit): retryAfterMs says when
  | "unavailable" // connection refused, DNS, 5xx before anything happened
  | "unknown_outcome"; // timeout, reset or 5xx on a create: it may have happened

export interface TicketError {
  kind: TicketErrorKind;
  status: number | null;
  /** Plain words for a person, the provider's own message included; never a credential. */
  message: string;
  retryAfterMs: number | null;
}

export type TicketResult<T> = { ok: true; value: T } | { ok: false; error: TicketError };

export interface TicketClient {
  create(connection: TicketConnection, draft: TicketDraft): Promise<TicketResult<CreatedTicket>>;
  /** The ticket an earlier create wrote `marker` into, if any (after an unknown outcome). */
  find(connection: TicketConnection, marker: string): Promise<TicketResult<CreatedTicket | null>>;
  state(
    connection: TicketConnection,
    ticket: { key: string; externalId: string },
  ): Promise<TicketResult<TicketState>>;
}
