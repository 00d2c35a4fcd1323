/**
 * Outbound webhooks as the API and CLI manage them, always within the caller's organization
 * (another organization's endpoint or event is not found): endpoints of every kind (webhook,
 * Slack, Slack bot, Teams; their credential shown when created, revealed or rotated, never in
 * lists, where a Slack or Teams URL is shown redacted), events, deliveries with their attempts,
 * resend and test events.
 */
import { ApiError } from "../lib/errors.js";
import type { Clock } from "../lib/clock.js";
import { outboxWritten } from "../lib/outbox-signal.js";
import { publicId } from "../lib/tokens.js";
import type { Principal } from "../organizations/service.js";
import type { RepoRef, Repository } from "../organizations/repositories.js";
import type { AddressPolicy } from "./addresses.js";
import { checkOwners, destinationChange, newDestination } from "./destinations.js";
import { EVENT_TYPES, PING_EVENT_TYPE, pingEvent } from "./events.js";
import {
  CHAT_DEFAULT_EVENT_TYPES,
  KIND_LABELS,
  isChatKind,
  redactedUrl,
  urlIsCredential,
} from "./kinds.js";
import type { EndpointChange, EndpointRecord, EndpointRecords } from "./records.js";
import { generateSecret } from "./signing.js";

export interface WebhookServiceDeps {
  records: EndpointRecords;
  repositories: {
    find(organizationId: string, ref: RepoRef): Promise<Repository | undefined>;
    findById(id: string): Promise<Repository | undefined>;
  };
  clock: Clock;
  policy: AddressPolicy;
}

export interface EndpointInput {
  /** `webhook` (default), `slack`, `slack_bot` or `teams`; never changed. */
  kind?: string | undefined;
  url?: string | undefined;
  description?: string | undefined;
  eventTypes?: string[] | undefined;
  repositories?: RepoRef[] | undefined;
  codeOwners?: string[] | undefined;
  enabled?: boolean | undefined;
  /** A webhook's `whsec_` secret, or a Slack bot's token. */
  secret?: string | undefined;
  /** A Slack bot's channel. */
  channel?: string | undefined;
}

/** An endpoint as shown: its repositories named, never its secret, a credential URL redacted. */
export interface EndpointView extends Omit<EndpointRecord, "secret" | "repositoryIds"> {
  repositories: RepoRef[];
}

export const MAX_ENDPOINTS = 50;

export class WebhookService {
  constructor(private readonly deps: WebhookServiceDeps) {}

  /** The answer's `secret`: a webhook's signing secret; empty for the other kinds. */
  async create(
    principal: Principal,
    input: EndpointInput,
  ): Promise<{ endpoint: EndpointView; secret: string }> {
    const { organizationId } = principal;
    const destination = newDestination(input, this.deps.policy);
    const codeOwners = checkOwners(input.codeOwners ?? []);
    const existing = await this.deps.records.listEndpoints(organizationId);
    if (existing.length >= MAX_ENDPOINTS) {
      throw new ApiError(
        "conflict",
        `An organization has at most ${String(MAX_ENDPOINTS)} endpoints.`,
      );
    }
    const now = this.deps.clock.now();
    const defaultTypes = isChatKind(destination.kind) ? [...CHAT_DEFAULT_EVENT_TYPES] : [];
    const record: EndpointRecord = {
      id: publicId("we"),
      organizationId,
      ...destination,
      eventTypes: checkTypes(input.eventTypes ?? defaultTypes),
      repositoryIds: await this.repositoryIds(organizationId, input.repositories ?? []),
      codeOwners,
      description: input.description ?? "",
      enabled: input.enabled ?? true,
      disabledReason: null,
      disabledAt: input.enabled === false ? now : null,
      failingSince: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.records.createEndpoint(record);
    return {
      endpoint: await this.view(record),
      secret: record.kind === "webhook" ? record.secret : "",
    };
  }

  async list(principal: Principal): Promise<EndpointView[]> {
    const endpoints = await this.deps.records.listEndpoints(principal.organizationId);
    return Promise.all(endpoints.map((endpoint) => this.view(endpoint)));
  }

  async get(principal: Principal, id: string): Promise<EndpointView> {
    return this.view(await this.endpoint(principal, id));
  }

  /** `via` says where a pause came from, in its `disabledReason` ("the API", "the dashboard"). */
  async update(
    principal: Principal,
    id: string,
    input: EndpointInput,
    via = "the API",
  ): Promise<EndpointView> {
    const current = await this.endpoint(principal, id);
    const now = this.deps.clock.now();
    const change: EndpointChange = {
      ...destinationChange(current, input, this.deps.policy),
      ...(input.codeOwners === undefined ? {} : { codeOwners: checkOwners(input.codeOwners) }),
      ...(input.description === undefined ? {} : { description: input.description }),
      ...(input.eventTypes === undefined ? {} : { eventTypes: checkTypes(input.eventTypes) }),
      ...(input.repositories === undefined
        ? {}
        : {
            repositoryIds: await this.repositoryIds(principal.organizationId, input.repositories),
          }),
    };
    if (input.enabled === true && !current.enabled) {
      Object.assign(change, {
        enabled: true,
        disabledReason: null,
        disabledAt: null,
        failingSince: null,
      });
    } else if (input.enabled === false && current.enabled) {
      Object.assign(change, {
        enabled: false,
        disabledReason: `Disabled through ${via}.`,
        disabledAt: now,
      });
    }
    const updated = await this.deps.records.updateEndpoint(
      principal.organizationId,
      id,
      change,
      now,
    );
    if (!updated) throw notFound(id);
    if (change.enabled === true) outboxWritten(0);
    return this.view(updated);
  }

  async remove(principal: Principal, id: string): Promise<void> {
    if (!(await this.deps.records.deleteEndpoint(principal.organizationId, id))) throw notFound(id);
  }

  /**
   * The endpoint's credential: a webhook's signing secret (with `rotate`, a new one first: the
   * old one stops signing at once), a Slack bot's token, a Slack or Teams URL.
   */
  async secret(principal: Principal, id: string, rotate: boolean): Promise<string> {
    const current = await this.endpoint(principal, id);
    if (rotate && current.kind !== "webhook") {
      throw new ApiError(
        "conflict",
        `Only a webhook's signing secret rotates; a ${KIND_LABELS[current.kind]}'s credential is replaced with updateEndpoint (${current.kind === "slack_bot" ? "secret" : "url"}).`,
      );
    }
    if (!rotate) return urlIsCredential(current.kind) ? current.url : current.secret;
    const secret = generateSecret();
    await this.deps.records.updateEndpoint(
      principal.organizationId,
      id,
      { secret },
      this.deps.clock.now(),
    );
    return secret;
  }

  listEvents(principal: Principal, page: { offset: number; limit: number }) {
    return this.deps.records.listEvents(principal.organizationId, page);
  }

  async listDeliveries(
    principal: Principal,
    filter: { endpointId?: string | undefined; eventId?: string | undefined },
    page: { offset: number; limit: number },
  ) {
    return this.deps.records.listDeliveries(principal.organizationId, filter, page);
  }

  /** A new delivery of the event (the same `webhook-id`) to the endpoint. */
  async resend(principal: Principal, eventId: string, endpointId: string): Promise<string> {
    const endpoint = await this.endpoint(principal, endpointId);
    const event = await this.deps.records.findEvent(principal.organizationId, eventId);
    if (!event) throw new ApiError("not_found", `No event ${eventId} in this organization.`);
    if (event.payload === null) {
      throw new ApiError(
        "conflict",
        `The event ${eventId} is not prepared yet (or what it was about is gone).`,
      );
    }
    const id = await this.deps.records.addDelivery(
      event.seq,
      endpoint.id,
      event.subject,
      this.deps.clock.now(),
    );
    outboxWritten(0);
    return id;
  }

  /** A `mainline.ping` event delivered to this endpoint only. */
  async sendTest(
    principal: Principal,
    endpointId: string,
  ): Promise<{ eventId: string; deliveryId: string }> {
    const endpoint = await this.endpoint(principal, endpointId);
    const now = this.deps.clock.now();
    const eventId = publicId("msg");
    const deliveryId = await this.deps.records.addDirectEvent(
      {
        id: eventId,
        organizationId: principal.organizationId,
        repositoryId: null,
        type: PING_EVENT_TYPE,
        subject: `ping:${endpoint.id}`,
        facts: { kind: "ping", at: now },
        payload: JSON.stringify(pingEvent(now, endpoint.id)),
        createdAt: now,
      },
      endpoint.id,
    );
    outboxWritten(0);
    return { eventId, deliveryId };
  }

  private async endpoint(principal: Principal, id: string): Promise<EndpointRecord> {
    const found = await this.deps.records.findEndpoint(principal.organizationId, id);
    if (!found) throw notFound(id);
    return found;
  }

  private async repositoryIds(organizationId: string, refs: readonly RepoRef[]): Promise<string[]> {
    const ids: string[] = [];
    for (const [index, ref] of refs.entries()) {
      const found = await this.deps.repositories.find(organizationId, ref);
      if (!found) {
        throw ApiError.invalid(
          `repositories[${String(index)}]`,
          `names no repository of this organization (${ref.host}/${ref.owner}/${ref.name})`,
        );
      }
      ids.push(found.id);
    }
    return [...new Set(ids)];
  }

  private async view(endpoint: EndpointRecord): Promise<EndpointView> {
    const { repositoryIds, ...withSecret } = endpoint;
    const rest: Omit<EndpointRecord, "secret" | "repositoryIds"> & { secret?: string } = {
      ...withSecret,
    };
    delete rest.secret;
    const repositories: RepoRef[] = [];
    for (const id of repositoryIds) {
      const repository = await this.deps.repositories.findById(id);
      if (repository) {
        repositories.push({
          host: repository.host,
          owner: repository.owner,
          name: repository.name,
        });
      }
    }
    const url = urlIsCredential(endpoint.kind) ? redactedUrl(endpoint.url) : endpoint.url;
    return { ...rest, url, repositories };
  }
}

function notFound(id: string): ApiError {
  return new ApiError("not_found", `No webhook endpoint ${id} in this organization.`);
}

function checkTypes(types: readonly string[]): string[] {
  for (const [index, type] of types.entries()) {
    if (!EVENT_TYPES.includes(type)) {
      throw ApiError.invalid(
        `eventTypes[${String(index)}]`,
        `is not an event type (one of ${EVENT_TYPES.join(", ")})`,
      );
    }
  }
  return [...new Set(types)];
}
