/**
 * What tickets keep in storage (migration 0034), as the domain sees it: an organization's ticket
 * connections, the tickets created through them (with their state as last read), and the intents
 * of creates under way. Implemented by `db/stores/tickets.ts`.
 */
import type { TestCaseRow } from "../../testhealth/records.js";
import type { TicketRule } from "../../testhealth/settings.js";
import type { TicketProviderKind } from "./types.js";

export interface TicketConnectionRecord {
  id: string;
  organizationId: string;
  kind: TicketProviderKind;
  name: string;
  /** Jira: the site or base URL; null for Linear and GitHub (the server's configuration). */
  baseUrl: string | null;
  /** Jira project key, Linear team id, GitHub `owner/name` (null: the test's own repository). */
  target: string | null;
  /** Jira issue type (default `Bug`), Linear project id; null otherwise. */
  issueType: string | null;
  labels: string[];
  /** Jira Cloud: the account's e-mail address. */
  email: string | null;
  /** Never shown, never logged. Null: a GitHub connection using the App's installation token. */
  credential: string | null;
  lastError: string | null;
  lastErrorAt: number | null;
  lastSuccessAt: number | null;
  /** Failed calls in a row (the loop's backoff grows with them). */
  failures: number;
  /** The loop leaves the connection alone until then (a rate limit's Retry-After, a backoff). */
  pausedUntil: number | null;
  createdAt: number;
  updatedAt: number;
}

export type TicketConnectionChange = Partial<
  Pick<
    TicketConnectionRecord,
    "name" | "baseUrl" | "target" | "issueType" | "labels" | "email" | "credential"
  >
>;

/** What a provider call changes of its connection. */
export type ConnectionHealth = Pick<
  TicketConnectionRecord,
  "lastError" | "lastErrorAt" | "lastSuccessAt" | "failures" | "pausedUntil"
>;

/** A ticket created through a connection and linked to a test, with its state as last read. */
export interface CreatedTicketRecord {
  testKey: number;
  /** Null once the connection is deleted (the link stays). */
  connectionId: string | null;
  /** The link, as `test_cases.ticket` holds it while this ticket is the test's. */
  url: string;
  key: string;
  externalId: string;
  stateName: string | null;
  stateOpen: boolean | null;
  stateCheckedAt: number | null;
  createdAt: number;
}

export type IntentSource = "manual" | "rule";

/**
 * A create under way (or interrupted): written before the provider is called, so that after an
 * unknown outcome or a crash the marker is looked for before anything is created again.
 */
export interface TicketIntentRecord {
  testKey: number;
  connectionId: string;
  marker: string;
  /** The ticket the new one replaces (a closed one), for the history's words. */
  previousTicket: string | null;
  source: IntentSource;
  actor: string;
  /** Provider calls that ended with an unknown outcome. */
  attempts: number;
  /** Held by a caller until then; an expired lease is anyone's to resume. */
  leaseUntil: number;
  lastError: string | null;
  createdAt: number;
}

export type BeginIntent =
  | { outcome: "begun"; intent: TicketIntentRecord }
  /** An earlier intent (its lease expired), now held: look for its marker first. */
  | { outcome: "resumed"; intent: TicketIntentRecord }
  /** Another caller is creating this test's ticket right now. */
  | { outcome: "busy" }
  /** The test's ticket is no longer the one expected (linked meanwhile). */
  | { outcome: "changed" };

/** A repository whose settings name a ticket connection and an automatic rule. */
export interface RuleRepository {
  repositoryId: string;
  organizationId: string;
  connectionId: string;
  rule: TicketRule;
}

/** A linked ticket whose state is due to be read again. */
export interface StaleTicket {
  testKey: number;
  organizationId: string;
  connectionId: string;
  url: string;
  key: string;
  externalId: string;
}

export interface TicketConnectionRecords {
  createConnection(record: TicketConnectionRecord): Promise<void>;
  listConnections(organizationId: string): Promise<TicketConnectionRecord[]>;
  findConnection(organizationId: string, id: string): Promise<TicketConnectionRecord | undefined>;
  updateConnection(
    organizationId: string,
    id: string,
    change: TicketConnectionChange,
    now: number,
  ): Promise<TicketConnectionRecord | undefined>;
  /** Deletes it; repositories naming it name none afterwards, its tickets stay linked. */
  deleteConnection(organizationId: string, id: string): Promise<boolean>;
  recordHealth(id: string, health: Partial<ConnectionHealth>): Promise<void>;
}

export interface TicketLinkRecords {
  /** The ticket created through a connection that is the test's link now, if any. */
  createdTicket(testKey: number): Promise<CreatedTicketRecord | undefined>;
  /**
   * Writes (or resumes) the test's intent, only while its ticket is `expectedTicket`: one create
   * per test at a time, in every process.
   */
  beginIntent(
    intent: TicketIntentRecord,
    expectedTicket: string | null,
    now: number,
  ): Promise<BeginIntent>;
  /**
   * Links the created ticket (the test's ticket, its history row, the created ticket's record)
   * and ends the intent, at once. Undefined when the test is gone.
   */
  completeIntent(
    created: CreatedTicketRecord,
    history: { words: string; actor: string; at: number },
  ): Promise<TestCaseRow | undefined>;
  /** Keeps the intent (its outcome unknown), its lease ended. */
  releaseIntent(testKey: number, lastError: string, attempts: number): Promise<void>;
  /** Nothing was created: the intent ends. */
  abandonIntent(testKey: number): Promise<void>;
  /** Intents whose lease ended (interrupted, or unknown outcomes), oldest first. */
  expiredIntents(now: number, limit: number): Promise<TicketIntentRecord[]>;
  /** Repositories with a connection and an automatic rule switched on. */
  ruleRepositories(): Promise<RuleRepository[]>;
  /**
   * Tests of the repository with one of `statuses` since `changedBefore` or earlier, no ticket
   * linked and no create under way; longest in that status first, a page of them.
   */
  ruleCandidates(
    repositoryId: string,
    statuses: readonly string[],
    changedBefore: number,
    page: { offset: number; limit: number },
  ): Promise<TestCaseRow[]>;
  /** Linked created tickets whose state was last read before `before` (or never). */
  staleTickets(before: number, limit: number): Promise<StaleTicket[]>;
  recordState(
    testKey: number,
    url: string,
    state: { name: string; open: boolean },
    at: number,
  ): Promise<void>;
}
