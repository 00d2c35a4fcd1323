/**
 * The tickets' background loop (docs/tickets.md): each pass resumes the creates an unknown
 * outcome or a crash left (their marker looked for first), applies each repository's automatic
 * rule, and reads back the state of linked tickets not read for `refreshMs`. A connection that
 * failed (a rate limit's Retry-After, errors) is left alone until its pause ends.
 */
import { BackgroundLoop } from "../../lib/background-loop.js";
import type { Clock } from "../../lib/clock.js";
import { HOUR_MS } from "../../lib/time.js";
import type { Repository } from "../../organizations/repositories.js";
import { parseCodeowners } from "../../testhealth/codeowners.js";
import type { TestSettingsRecords, TestViewRecords } from "../../testhealth/ports.js";
import type { TestCaseRow } from "../../testhealth/records.js";
import { ticketUrl } from "../../testhealth/tickets.js";
import type {
  RuleRepository,
  TicketConnectionRecord,
  TicketConnectionRecords,
  TicketIntentRecord,
  TicketLinkRecords,
} from "./records.js";
import type { TicketService } from "./service.js";

/** How many of a repository's candidates a pass reads at most (the rule skips some). */
const CANDIDATES_READ = 1000;

/** Who the automatic rule's tickets are recorded as. */
export const RULE_ACTOR = "mainline:auto-ticket";

export interface TicketLoopOptions {
  /** Between passes (MAINLINE_TICKETS_POLL_MS, default 5 min). */
  pollMs: number;
  /** A linked ticket's state is read again after this (MAINLINE_TICKETS_REFRESH_MS, 15 min). */
  refreshMs: number;
  /** Links in tickets the rule creates: the public URL. */
  baseUrl: () => string;
  /** Creates per connection and pass, at most (bursts drain over several passes). */
  createsPerPass: number;
  /** State reads per pass, at most. */
  readsPerPass: number;
}

export interface TicketLoopDeps {
  service: TicketService;
  connections: TicketConnectionRecords;
  links: TicketLinkRecords;
  repositories: { findById(id: string): Promise<Repository | undefined> };
  settings: Pick<TestSettingsRecords, "get">;
  views: Pick<TestViewRecords, "rowsByKey">;
  clock: Clock;
  logger: { warn(fields: object, message: string): void };
}

export class TicketLoop {
  private readonly loop: BackgroundLoop;

  constructor(
    private readonly deps: TicketLoopDeps,
    private readonly options: TicketLoopOptions,
  ) {
    this.loop = new BackgroundLoop({
      pass: () => this.pass(),
      intervalMs: options.pollMs,
      maxBackoffMs: Math.max(options.pollMs, 5 * 60_000),
      onError: (error) => {
        deps.logger.warn({ err: error }, "tickets: a pass failed; will retry");
      },
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Runs a pass now (or right after the one in progress) and resolves when it ends. */
  runNow(): Promise<void> {
    return this.loop.runNow();
  }

  private async pass(): Promise<void> {
    const connections = new Map<string, TicketConnectionRecord | undefined>();
    const connection = async (organizationId: string, id: string) => {
      if (!connections.has(id)) {
        connections.set(id, await this.deps.connections.findConnection(organizationId, id));
      }
      return connections.get(id);
    };
    await this.resumeIntents(connection);
    for (const rule of await this.deps.links.ruleRepositories()) {
      await this.applyRule(rule, await connection(rule.organizationId, rule.connectionId));
    }
    await this.refreshStates(connection);
  }

  private paused(connection: TicketConnectionRecord | undefined): boolean {
    return (
      connection === undefined ||
      (connection.pausedUntil !== null && connection.pausedUntil > this.deps.clock.now())
    );
  }

  /** The test, its repository and settings, as a create needs them; undefined when gone. */
  private async context(testKey: number) {
    const row = (await this.deps.views.rowsByKey([testKey])).get(testKey);
    if (!row) return undefined;
    const repository = await this.deps.repositories.findById(row.repositoryId);
    if (!repository) return undefined;
    return { row, repository, settings: await this.deps.settings.get(repository.id) };
  }

  /** Creates left unfinished: their marker is looked for, then the create is done if missing. */
  private async resumeIntents(
    connection: (organizationId: string, id: string) => Promise<TicketConnectionRecord | undefined>,
  ): Promise<void> {
    const now = this.deps.clock.now();
    for (const intent of await this.deps.links.expiredIntents(now, this.options.createsPerPass)) {
      const found = await this.context(intent.testKey);
      if (!found) {
        await this.deps.links.abandonIntent(intent.testKey);
        continue;
      }
      const holder = await connection(found.repository.organizationId, intent.connectionId);
      if (this.paused(holder) || !holder) continue;
      await this.resume(intent, holder, found);
    }
  }

  private async resume(
    intent: TicketIntentRecord,
    connection: TicketConnectionRecord,
    found: NonNullable<Awaited<ReturnType<TicketLoop["context"]>>>,
  ): Promise<void> {
    const { row, settings } = found;
    const current =
      row.ticket === null ? null : (ticketUrl(row.ticket, settings.ticketBaseUrl) ?? row.ticket);
    if (current !== intent.previousTicket) {
      // Someone linked (or unlinked) a ticket since: theirs stands; the unfinished create ends.
      await this.deps.links.abandonIntent(intent.testKey);
      this.deps.logger.warn(
        { connection: connection.id, test: row.id },
        "tickets: an unfinished create was dropped: the test's ticket changed since",
      );
      return;
    }
    const now = this.deps.clock.now();
    const begun = await this.deps.links.beginIntent(
      { ...intent, leaseUntil: now + this.deps.service.leaseMs },
      found.row.ticket,
      now,
    );
    if (begun.outcome !== "resumed") return;
    const outcome = await this.deps.service.carryOut(
      {
        ...found,
        source: intent.source,
        actor: intent.actor,
        baseUrl: this.options.baseUrl(),
      },
      connection,
      begun.intent,
      true,
    );
    if (outcome.kind === "failed") {
      this.deps.logger.warn(
        { connection: connection.id, test: found.row.id, error: outcome.error.message },
        "tickets: an unfinished create could not be resumed; will retry",
      );
    }
  }

  private async applyRule(
    rule: RuleRepository,
    connection: TicketConnectionRecord | undefined,
  ): Promise<void> {
    if (!connection || this.paused(connection)) return;
    const repository = await this.deps.repositories.findById(rule.repositoryId);
    if (!repository) return;
    const settings = await this.deps.settings.get(repository.id);
    const owners = settings.codeowners === null ? null : parseCodeowners(settings.codeowners);
    const owned = (row: TestCaseRow) =>
      row.file !== null && owners !== null && owners.ownersOf(row.file).length > 0;
    const statuses = [
      ...(rule.rule.flaky ? ["flaky"] : []),
      ...(rule.rule.broken ? ["broken"] : []),
    ];
    const changedBefore = this.deps.clock.now() - rule.rule.afterHours * HOUR_MS;
    const limit = this.options.createsPerPass * 5;
    let created = 0;
    // Pages of candidates, so that tests the rule skips (no owner) never hide the others.
    for (let offset = 0; offset < CANDIDATES_READ; offset += limit) {
      const candidates = await this.deps.links.ruleCandidates(
        rule.repositoryId,
        statuses,
        changedBefore,
        {
          offset,
          limit,
        },
      );
      for (const row of candidates) {
        if (created >= this.options.createsPerPass || this.paused(connection)) return;
        if (rule.rule.requireOwner && !owned(row)) continue;
        const outcome = await this.deps.service.attempt(
          {
            row,
            repository,
            settings,
            source: "rule",
            actor: RULE_ACTOR,
            baseUrl: this.options.baseUrl(),
          },
          connection,
        );
        if (outcome.kind === "linked") created += 1;
        if (outcome.kind === "failed") {
          this.deps.logger.warn(
            { connection: connection.id, test: row.id, error: outcome.error.message },
            "tickets: the automatic rule could not create a ticket",
          );
        }
      }
      if (candidates.length < limit) return;
    }
  }

  private async refreshStates(
    connection: (organizationId: string, id: string) => Promise<TicketConnectionRecord | undefined>,
  ): Promise<void> {
    const now = this.deps.clock.now();
    const stale = await this.deps.links.staleTickets(
      now - this.options.refreshMs,
      this.options.readsPerPass,
    );
    for (const ticket of stale) {
      const holder = await connection(ticket.organizationId, ticket.connectionId);
      if (!holder || this.paused(holder)) continue;
      const found = await this.context(ticket.testKey);
      if (!found) continue;
      await this.deps.service.readState(found.repository, ticket, holder);
    }
  }
}
