/**
 * Creating a test's ticket through its repository's ticket connection (docs/tickets.md), by hand
 * (API, CLI, the test page) or by the automatic rule (`loop.ts`). No duplicate: a test whose linked
 * ticket is open, or whose state cannot be told, keeps it (409); a closed one is replaced.
 * Idempotent: an intent is written before the provider is called; after an unknown outcome or a
 * crash, the intent's marker is looked for before anything is created again.
 */
import type { Clock } from "../../lib/clock.js";
import { ApiError } from "../../lib/errors.js";
import { MINUTE_MS, HOUR_MS } from "../../lib/time.js";
import type { Repository } from "../../organizations/repositories.js";
import { tokenActor, type Principal } from "../../organizations/service.js";
import type { StoredTestSettings, TestCaseRow } from "../../testhealth/records.js";
import type { RepositoryQuery, TestQueryService } from "../../testhealth/test-queries.js";
import { ticketUrl } from "../../testhealth/tickets.js";
import { PROVIDER_NAMES } from "./connections.js";
import { newMarker, ticketDraft, type TicketSubject } from "./draft.js";
import type {
  CreatedTicketRecord,
  IntentSource,
  TicketConnectionRecord,
  TicketConnectionRecords,
  TicketIntentRecord,
  TicketLinkRecords,
} from "./records.js";
import type {
  CreatedTicket,
  TicketClient,
  TicketConnection,
  TicketError,
  TicketProviderKind,
  TicketResult,
} from "./types.js";

/** The linked ticket as answers show it. */
export interface LinkedTicketView {
  htmlUrl: string;
  key: string | null;
  state: { name: string; open: boolean } | null;
}

export type AttemptOutcome =
  /** `created`: by this attempt's create (false: found, made by an earlier one). */
  | { kind: "linked"; ticket: LinkedTicketView; created: boolean }
  /** The test keeps its ticket: open, or its state unknown. */
  | { kind: "exists"; ticket: LinkedTicketView }
  /** Another caller is creating this test's ticket now. */
  | { kind: "busy" }
  | { kind: "failed"; error: TicketError; connection: TicketConnectionRecord };

/** A 409 that carries the ticket the test keeps. */
export class TicketExistsError extends ApiError {
  constructor(readonly ticket: LinkedTicketView) {
    super(
      "conflict",
      `The test already has a ticket${ticket.key === null ? "" : ` (${ticket.key})`}: ${ticket.htmlUrl}, ${
        ticket.state === null
          ? "whose state Mainline cannot tell"
          : `which is open (${ticket.state.name})`
      }. Close it (or unlink it) first to create a new one.`,
    );
  }
}

export interface TicketServiceOptions {
  /** Each provider request times out after this. */
  timeoutMs: number;
  /** MAINLINE_WEBHOOKS_ALLOW_PRIVATE: providers may be internal addresses. */
  allowPrivate: boolean;
  /** MAINLINE_LINEAR_API_URL. */
  linearApiUrl: string;
  /** MAINLINE_GITHUB_API_URL. */
  githubApiUrl: string;
}

/** How a test reaches its ticket's content, and who it is. */
export interface TicketSubjects {
  /** The test as its ticket tells of it; undefined when it is gone. */
  subject(testKey: number, baseUrl: string): Promise<TicketSubject | undefined>;
}

export interface TicketServiceDeps {
  connections: TicketConnectionRecords;
  links: TicketLinkRecords;
  queries: Pick<TestQueryService, "scope" | "test">;
  subjects: TicketSubjects;
  /** Each kind's client; null: not available on this server yet (creating answers 400). */
  clients: Record<TicketProviderKind, TicketClient | null>;
  /** A GitHub App installation token for `owner/name` of the organization, if the App has one. */
  installationToken?:
    | ((
        organizationId: string,
        repository: { owner: string; name: string },
      ) => Promise<string | undefined>)
    | undefined;
  clock: Clock;
  options: TicketServiceOptions;
}

/** The test a create is about: its row, its repository and that repository's settings. */
export interface TicketContext {
  row: TestCaseRow;
  repository: Repository;
  settings: StoredTestSettings;
  source: IntentSource;
  actor: string;
  baseUrl: string;
}

/** The loop leaves a failing connection alone for 1, 2, 4… minutes, at most an hour. */
export function backoffMs(failures: number): number {
  return Math.min(HOUR_MS, MINUTE_MS * 2 ** Math.max(0, failures - 1));
}

export function providerApiError(connection: TicketConnectionRecord, error: TicketError): ApiError {
  const message = `${error.message} (ticket connection "${connection.name}")`;
  if (error.kind === "rate_limited" || error.kind === "unavailable") {
    const seconds = Math.max(1, Math.ceil((error.retryAfterMs ?? 30_000) / 1000));
    return new ApiError("unavailable", message, undefined, { retryAfterSeconds: seconds });
  }
  return new ApiError("ticket_provider_error", message);
}

function historyWords(created: CreatedTicket, kind: TicketProviderKind, previous: string | null) {
  const replacing = previous === null ? "" : `, replacing ${previous}`;
  return `Linked ticket ${created.key} (created in ${PROVIDER_NAMES[kind]}${replacing})`;
}

export class TicketService {
  constructor(private readonly deps: TicketServiceDeps) {}

  /**
   * How long a caller holds a test's intent: its provider calls (a search, a create, a read) at
   * their longest, and time to store what they answered.
   */
  get leaseMs(): number {
    return this.deps.options.timeoutMs * 3 + 5_000;
  }

  /**
   * Creates the test's ticket through its repository's connection (by hand): the linked ticket,
   * and whether it was created now. 409 while an open ticket (or one of unknown state) is linked.
   */
  async createForTest(
    principal: Principal,
    query: RepositoryQuery & { testId: string },
    baseUrl: string,
  ): Promise<{ testId: string; repositoryId: string; ticket: LinkedTicketView; created: boolean }> {
    const scope = await this.deps.queries.scope(principal, query);
    const row = await this.deps.queries.test(scope, query.testId);
    const connection = await this.repositoryConnection(
      principal.organizationId,
      scope.settings.tickets.connectionId,
    );
    const outcome = await this.attempt(
      {
        row,
        repository: scope.repository,
        settings: scope.settings,
        source: "manual",
        actor: tokenActor(principal),
        baseUrl,
      },
      connection,
    );
    switch (outcome.kind) {
      case "linked":
        return {
          testId: row.id,
          repositoryId: scope.repository.id,
          ticket: outcome.ticket,
          created: outcome.created,
        };
      case "exists":
        throw new TicketExistsError(outcome.ticket);
      case "busy":
        throw new ApiError(
          "conflict",
          "A ticket is being created for this test right now; look again in a moment.",
        );
      case "failed":
        throw providerApiError(outcome.connection, outcome.error);
    }
  }

  /** The connection a repository's settings name (400 when none, or not available here). */
  async repositoryConnection(
    organizationId: string,
    connectionId: string | null,
  ): Promise<TicketConnectionRecord> {
    const connection =
      connectionId === null
        ? undefined
        : await this.deps.connections.findConnection(organizationId, connectionId);
    if (!connection) {
      throw ApiError.invalid(
        "repo",
        "has no ticket connection: add one (mainline tickets add-jira …) and name it in the repository's test settings (ticket_connection_id)",
      );
    }
    if (this.deps.clients[connection.kind] === null) {
      throw ApiError.invalid(
        "repo",
        `names the ticket connection "${connection.name}", whose kind (${connection.kind}) this server cannot create tickets with yet`,
      );
    }
    return connection;
  }

  /** One try at the test's ticket (by hand or by the rule). */
  async attempt(
    context: TicketContext,
    connection: TicketConnectionRecord,
  ): Promise<AttemptOutcome> {
    const { row } = context;
    let previous: string | null = null;
    if (row.ticket !== null) {
      const kept = await this.keptTicket(context);
      if (kept) return { kind: "exists", ticket: kept };
      previous = ticketUrl(row.ticket, context.settings.ticketBaseUrl) ?? row.ticket;
    }
    const now = this.deps.clock.now();
    const begun = await this.deps.links.beginIntent(
      {
        testKey: row.key,
        connectionId: connection.id,
        marker: newMarker(connection.id, row.id),
        previousTicket: previous,
        source: context.source,
        actor: context.actor,
        attempts: 0,
        leaseUntil: now + this.leaseMs,
        lastError: null,
        createdAt: now,
      },
      row.ticket,
      now,
    );
    if (begun.outcome === "busy" || begun.outcome === "changed") return { kind: "busy" };
    const holder =
      begun.intent.connectionId === connection.id
        ? connection
        : await this.deps.connections.findConnection(
            context.repository.organizationId,
            begun.intent.connectionId,
          );
    if (!holder) {
      await this.deps.links.abandonIntent(row.key);
      return { kind: "busy" };
    }
    return this.carryOut(context, holder, begun.intent, begun.outcome === "resumed");
  }

  /**
   * The ticket the test keeps, if it keeps one: linked by hand (state unknown), or created here
   * and open, or whose state cannot be read now. Undefined: closed, a new one may replace it.
   */
  private async keptTicket(context: TicketContext): Promise<LinkedTicketView | undefined> {
    const { row } = context;
    const link = ticketUrl(row.ticket ?? "", context.settings.ticketBaseUrl) ?? row.ticket ?? "";
    const created = await this.deps.links.createdTicket(row.key);
    if (!created) return { htmlUrl: link, key: null, state: null };
    const state = await this.readState(context.repository, created);
    if (state === null) return { htmlUrl: created.url, key: created.key, state: null };
    return state.open ? { htmlUrl: created.url, key: created.key, state } : undefined;
  }

  /** Reads a created ticket's state from its provider and stores it; null when it cannot. */
  async readState(
    repository: Repository,
    created: Pick<CreatedTicketRecord, "testKey" | "connectionId" | "url" | "key" | "externalId">,
    known?: TicketConnectionRecord,
  ): Promise<{ name: string; open: boolean } | null> {
    if (created.connectionId === null) return null;
    const connection =
      known ??
      (await this.deps.connections.findConnection(repository.organizationId, created.connectionId));
    const client = connection ? this.deps.clients[connection.kind] : null;
    if (!connection || !client) return null;
    const resolved = await this.resolve(connection, repository);
    if (!resolved.ok) {
      await this.recordHealth(connection, resolved.error);
      return null;
    }
    const read = await client.state(resolved.value, created);
    // A ticket the provider no longer finds (deleted, moved out of sight) counts as closed: it
    // says nothing of the connection, which other tickets keep using.
    const gone = !read.ok && read.error.kind === "not_found";
    await this.recordHealth(connection, read.ok || gone ? null : read.error);
    if (!read.ok && !gone) return null;
    const state = read.ok ? read.value : { name: "Not found", open: false };
    await this.deps.links.recordState(created.testKey, created.url, state, this.deps.clock.now());
    return state;
  }

  /** With the intent held: look for an earlier create's ticket if any, else create it. */
  async carryOut(
    context: TicketContext,
    connection: TicketConnectionRecord,
    intent: TicketIntentRecord,
    resumed: boolean,
  ): Promise<AttemptOutcome> {
    const { links } = this.deps;
    const client = this.deps.clients[connection.kind];
    const resolved = await this.resolve(connection, context.repository);
    const earlier = resumed || intent.attempts > 0;
    if (!client || !resolved.ok) {
      const error: TicketError = resolved.ok
        ? {
            kind: "invalid",
            status: null,
            message: `${PROVIDER_NAMES[connection.kind]} tickets are not available on this server yet.`,
            retryAfterMs: null,
          }
        : resolved.error;
      // An earlier call may have made the ticket: its marker is kept to be looked for later.
      if (earlier) await links.releaseIntent(intent.testKey, error.message, intent.attempts);
      else await links.abandonIntent(intent.testKey);
      return this.failed(connection, error);
    }
    if (earlier) {
      const found = await client.find(resolved.value, intent.marker);
      if (!found.ok) {
        await links.releaseIntent(intent.testKey, found.error.message, intent.attempts);
        return this.failed(connection, found.error);
      }
      if (found.value) {
        return this.complete(context, connection, resolved.value, intent, found.value, false);
      }
    }
    const subject = await this.deps.subjects.subject(intent.testKey, context.baseUrl);
    if (!subject) {
      await links.abandonIntent(intent.testKey);
      throw new ApiError("not_found", `No test ${context.row.id} in this repository.`);
    }
    const created = await client.create(
      resolved.value,
      ticketDraft(subject, intent.marker, connection.labels),
    );
    if (created.ok) {
      return this.complete(context, connection, resolved.value, intent, created.value, true);
    }
    if (created.error.kind === "unknown_outcome") {
      await links.releaseIntent(intent.testKey, created.error.message, intent.attempts + 1);
    } else {
      await links.abandonIntent(intent.testKey);
    }
    return this.failed(connection, created.error);
  }

  private async complete(
    context: TicketContext,
    connection: TicketConnectionRecord,
    resolved: TicketConnection,
    intent: TicketIntentRecord,
    ticket: CreatedTicket,
    createdNow: boolean,
  ): Promise<AttemptOutcome> {
    await this.recordHealth(connection, null);
    const client = this.deps.clients[connection.kind];
    // The new ticket's state right away (best effort: the loop reads it later otherwise).
    const state = client ? await client.state(resolved, ticket) : undefined;
    const now = this.deps.clock.now();
    const record: CreatedTicketRecord = {
      testKey: intent.testKey,
      connectionId: connection.id,
      url: ticket.url,
      key: ticket.key,
      externalId: ticket.externalId,
      stateName: state?.ok ? state.value.name : null,
      stateOpen: state?.ok ? state.value.open : null,
      stateCheckedAt: state?.ok ? now : null,
      createdAt: now,
    };
    const linked = await this.deps.links.completeIntent(record, {
      words: historyWords(ticket, connection.kind, intent.previousTicket),
      actor: intent.actor,
      at: now,
    });
    if (!linked) throw new ApiError("not_found", `No test ${context.row.id} in this repository.`);
    return {
      kind: "linked",
      ticket: { htmlUrl: ticket.url, key: ticket.key, state: stateOf(record) },
      created: createdNow,
    };
  }

  private async failed(
    connection: TicketConnectionRecord,
    error: TicketError,
  ): Promise<AttemptOutcome> {
    await this.recordHealth(connection, error);
    return { kind: "failed", error, connection };
  }

  /** After a provider call: the connection's last error and backoff, or its recovery. */
  async recordHealth(connection: TicketConnectionRecord, error: TicketError | null): Promise<void> {
    const now = this.deps.clock.now();
    if (error === null) {
      // A healthy connection's success is written at most once a minute.
      const recent =
        connection.lastSuccessAt !== null && now - connection.lastSuccessAt < MINUTE_MS;
      if (connection.failures === 0 && connection.pausedUntil === null && recent) return;
      connection.failures = 0;
      connection.pausedUntil = null;
      connection.lastSuccessAt = now;
      await this.deps.connections.recordHealth(connection.id, {
        failures: 0,
        pausedUntil: null,
        lastSuccessAt: now,
      });
      return;
    }
    const failures = connection.failures + 1;
    const pausedUntil = now + (error.retryAfterMs ?? backoffMs(failures));
    Object.assign(connection, {
      failures,
      pausedUntil,
      lastError: error.message,
      lastErrorAt: now,
    });
    await this.deps.connections.recordHealth(connection.id, {
      failures,
      pausedUntil,
      lastError: error.message,
      lastErrorAt: now,
    });
  }

  /** The connection as its client needs it: the API's address and the credential resolved. */
  async resolve(
    connection: TicketConnectionRecord,
    repository: Repository,
  ): Promise<TicketResult<TicketConnection>> {
    const { options } = this.deps;
    let baseUrl = connection.baseUrl ?? "";
    let target = connection.target ?? "";
    let credential = connection.credential;
    if (connection.kind === "linear") baseUrl = options.linearApiUrl;
    if (connection.kind === "github") {
      baseUrl = options.githubApiUrl;
      target = connection.target ?? `${repository.owner}/${repository.name}`;
      if (credential === null) {
        const [owner = "", name = ""] = target.split("/");
        credential =
          (await this.deps.installationToken?.(repository.organizationId, { owner, name })) ?? null;
      }
    }
    if (credential === null) {
      return {
        ok: false,
        error: {
          kind: "auth",
          status: null,
          message: `The ticket connection has no credential${connection.kind === "github" ? `, and no GitHub App installation of this organization grants ${target}` : ""}.`,
          retryAfterMs: null,
        },
      };
    }
    return {
      ok: true,
      value: {
        id: connection.id,
        kind: connection.kind,
        baseUrl,
        target,
        issueType: connection.issueType,
        email: connection.email,
        credential,
        timeoutMs: options.timeoutMs,
        allowPrivate: options.allowPrivate,
      },
    };
  }
}

function stateOf(
  record: Pick<CreatedTicketRecord, "stateName" | "stateOpen">,
): { name: string; open: boolean } | null {
  return record.stateName === null || record.stateOpen === null
    ? null
    : { name: record.stateName, open: record.stateOpen };
}
