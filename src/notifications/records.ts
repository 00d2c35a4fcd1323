/**
 * What outbound webhooks keep in storage (migration 0031), as the domain sees it; implemented by
 * `db/stores/outbound-webhooks.ts` and `db/stores/outbound-deliveries.ts`.
 */
import type { EventFacts } from "./facts.js";
import type { EndpointKind } from "./kinds.js";

export interface EndpointRecord {
  id: string;
  organizationId: string;
  /** Since migration 0033; `webhook` before. */
  kind: EndpointKind;
  /** Where it POSTs; empty for `slack_bot` (Slack's API, from the settings). */
  url: string;
  /** `webhook`: the signing secret (`whsec_…`); `slack_bot`: the bot token; else empty. */
  secret: string;
  /** `slack_bot`: the channel posted to; else null. */
  channel: string | null;
  /** Empty: every event type. */
  eventTypes: string[];
  /** Empty: every repository. */
  repositoryIds: string[];
  /** A test's events only when one of its code owners is listed; empty: every test. */
  codeOwners: string[];
  description: string;
  enabled: boolean;
  disabledReason: string | null;
  disabledAt: number | null;
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

export type EndpointChange = Partial<
  Pick<
    EndpointRecord,
    | "url"
    | "secret"
    | "channel"
    | "eventTypes"
    | "repositoryIds"
    | "codeOwners"
    | "description"
    | "enabled"
    | "disabledReason"
    | "disabledAt"
    | "failingSince"
  >
>;

/** What an attempt changes of its endpoint. */
export type EndpointHealth = Pick<
  EndpointChange,
  "enabled" | "disabledReason" | "disabledAt" | "failingSince"
>;

export interface EventRecord {
  seq: number;
  id: string;
  organizationId: string;
  repositoryId: string | null;
  type: string;
  subject: string;
  facts: EventFacts;
  /** JSON text of the body; null until prepared. */
  payload: string | null;
  createdAt: number;
  preparedAt: number | null;
}

export type DeliveryState = "pending" | "succeeded" | "failed";

export interface AttemptRecord {
  at: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  response: string | null;
}

export interface DeliveryRecord {
  id: string;
  eventId: string;
  eventType: string;
  endpointId: string;
  subject: string;
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: number;
  createdAt: number;
  updatedAt: number;
}

export interface DeliveryWithAttempts extends DeliveryRecord {
  attemptLog: AttemptRecord[];
}

/** A delivery claimed for sending, with what the request needs. */
export interface ClaimedDelivery {
  id: string;
  eventId: string;
  eventType: string;
  endpointId: string;
  kind: EndpointKind;
  url: string;
  secret: string;
  channel: string | null;
  payload: string;
  attempts: number;
  /** The endpoint's first failure since its last success. */
  failingSince: number | null;
}

/** What an attempt decided of its delivery. */
export interface AttemptOutcome {
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: number;
}

export interface EndpointRecords {
  createEndpoint(endpoint: EndpointRecord): Promise<void>;
  listEndpoints(organizationId: string): Promise<EndpointRecord[]>;
  findEndpoint(organizationId: string, id: string): Promise<EndpointRecord | undefined>;
  updateEndpoint(
    organizationId: string,
    id: string,
    change: EndpointChange,
    now: number,
  ): Promise<EndpointRecord | undefined>;
  deleteEndpoint(organizationId: string, id: string): Promise<boolean>;
  /** Events of the organization, newest first; `total` counts them all. */
  listEvents(
    organizationId: string,
    page: { offset: number; limit: number },
  ): Promise<{ total: number; events: EventRecord[] }>;
  findEvent(organizationId: string, id: string): Promise<EventRecord | undefined>;
  /** Deliveries, newest first, with their attempts (oldest first). */
  listDeliveries(
    organizationId: string,
    filter: { endpointId?: string | undefined; eventId?: string | undefined },
    page: { offset: number; limit: number },
  ): Promise<{ total: number; deliveries: DeliveryWithAttempts[] }>;
  /** A new delivery of a stored, prepared event to an endpoint (resend). */
  addDelivery(eventSeq: number, endpointId: string, subject: string, now: number): Promise<string>;
  /** A prepared event of the organization sent to one endpoint only (a test event). */
  addDirectEvent(
    event: Omit<EventRecord, "seq" | "preparedAt" | "payload"> & { payload: string },
    endpointId: string,
  ): Promise<string>;
}

/** One attempt of a pass, for `recordAttempts`. */
export interface RecordedAttempt {
  deliveryId: string;
  attempt: AttemptRecord;
  outcome: AttemptOutcome;
}

export interface DeliveryRecords {
  /** Events not prepared yet, oldest first. */
  unpreparedEvents(limit: number): Promise<EventRecord[]>;
  /**
   * Stores an event's body and creates its deliveries to the organization's enabled endpoints
   * that take it (`takesEvent`: its type, repository and, for a test, one of its code `owners`),
   * at once; false when another process prepared it first.
   */
  prepareEvent(
    seq: number,
    payload: string | null,
    now: number,
    owners?: readonly string[],
  ): Promise<boolean>;
  /**
   * Claims due pending deliveries for `owner` until `leaseUntil`, each the oldest pending one of
   * its endpoint and subject, of enabled endpoints; never one another process holds.
   */
  claimDeliveries(
    owner: string,
    now: number,
    leaseUntil: number,
    limit: number,
  ): Promise<ClaimedDelivery[]>;
  /**
   * Records a pass's attempts and their outcomes at once (each outcome only while `owner` holds
   * its delivery). Redone from what is durable if lost: a delivery whose attempt was not
   * recorded is sent again, with the same `webhook-id`, once its lease runs out.
   */
  recordAttempts(owner: string, attempts: readonly RecordedAttempt[]): Promise<void>;
  /** After an attempt: the endpoint's failing time, or its disabling (with why). */
  updateEndpointHealth(endpointId: string, change: EndpointHealth, now: number): Promise<void>;
  /** When the earliest pending delivery is due (to sleep until then); undefined: none. */
  nextDue(): Promise<number | undefined>;
}
