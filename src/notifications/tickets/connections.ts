/**
 * Ticket connections as the API, CLI and dashboard manage them, always within the caller's
 * organization (another organization's connection is not found). The credential is taken, kept
 * and used, never shown back: a view says only whether one is set.
 */
import type { Clock } from "../../lib/clock.js";
import { ApiError } from "../../lib/errors.js";
import { publicId } from "../../lib/tokens.js";
import type { Principal } from "../../organizations/service.js";
import { urlRefusal, type AddressPolicy } from "../addresses.js";
import type {
  TicketConnectionChange,
  TicketConnectionRecord,
  TicketConnectionRecords,
} from "./records.js";
import type { TicketProviderKind } from "./types.js";

export const TICKET_PROVIDER_KINDS = ["jira_cloud", "jira_dc", "linear", "github"] as const;

/** How each kind is named in messages and the dashboard. */
export const PROVIDER_NAMES: Record<TicketProviderKind, string> = {
  jira_cloud: "Jira",
  jira_dc: "Jira",
  linear: "Linear",
  github: "GitHub",
};

export const MAX_CONNECTIONS = 20;
export const DEFAULT_LABELS = ["flaky-test"];
export const LIMITS = {
  name: 100,
  labels: 10,
  label: 255,
  credential: 1000,
  issueType: 100,
  /** Jira project keys: a letter, then letters, digits or underscores. */
  projectKey: /^[A-Za-z][A-Za-z0-9_]{0,99}$/,
  /** GitHub `owner/name`. */
  repository: /^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/,
  /** A Linear team or project id (a UUID) or key. */
  linearId: /^[A-Za-z0-9-]{1,100}$/,
  email: /^[^\s@]{1,200}@[^\s@]{1,200}$/,
} as const;

export interface ConnectionInput {
  kind?: string | undefined;
  name?: string | undefined;
  baseUrl?: string | null | undefined;
  target?: string | null | undefined;
  issueType?: string | null | undefined;
  labels?: string[] | undefined;
  email?: string | null | undefined;
  credential?: string | null | undefined;
}

/** A connection as shown: never its credential, only whether one is set. */
export interface ConnectionView extends Omit<TicketConnectionRecord, "credential"> {
  credentialSet: boolean;
}

export interface ConnectionServiceDeps {
  records: TicketConnectionRecords;
  clock: Clock;
  policy: AddressPolicy;
}

function isKind(kind: string): kind is TicketProviderKind {
  return (TICKET_PROVIDER_KINDS as readonly string[]).includes(kind);
}

export function viewOf(record: TicketConnectionRecord): ConnectionView {
  const { credential, ...rest } = record;
  return { ...rest, credentialSet: credential !== null && credential !== "" };
}

function notFound(id: string): ApiError {
  return new ApiError("not_found", `No ticket connection ${id} in this organization.`);
}

const blank = (value: string | null | undefined) =>
  value === null || value === undefined || value.trim() === "";

export class TicketConnectionService {
  constructor(private readonly deps: ConnectionServiceDeps) {}

  async create(principal: Principal, input: ConnectionInput): Promise<ConnectionView> {
    const kind = input.kind ?? "";
    if (!isKind(kind)) {
      throw ApiError.invalid("kind", `must be one of ${TICKET_PROVIDER_KINDS.join(", ")}`);
    }
    const existing = await this.deps.records.listConnections(principal.organizationId);
    if (existing.length >= MAX_CONNECTIONS) {
      throw new ApiError(
        "conflict",
        `An organization has at most ${MAX_CONNECTIONS} ticket connections.`,
      );
    }
    const now = this.deps.clock.now();
    const fields = this.checked(kind, {
      name: input.name ?? defaultName(kind, input.target ?? null),
      baseUrl: input.baseUrl ?? null,
      target: input.target ?? null,
      issueType: input.issueType ?? null,
      labels: input.labels ?? DEFAULT_LABELS,
      email: input.email ?? null,
      credential: input.credential ?? null,
    });
    const record: TicketConnectionRecord = {
      id: publicId("tc"),
      organizationId: principal.organizationId,
      kind,
      ...fields,
      lastError: null,
      lastErrorAt: null,
      lastSuccessAt: null,
      failures: 0,
      pausedUntil: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.records.createConnection(record);
    return viewOf(record);
  }

  async list(principal: Principal): Promise<ConnectionView[]> {
    return (await this.deps.records.listConnections(principal.organizationId)).map(viewOf);
  }

  async get(principal: Principal, id: string): Promise<ConnectionView> {
    return viewOf(await this.connection(principal, id));
  }

  /** The connection as stored, credential included (for the ticket service only). */
  async connection(principal: Principal, id: string): Promise<TicketConnectionRecord> {
    const found = await this.deps.records.findConnection(principal.organizationId, id);
    if (!found) throw notFound(id);
    return found;
  }

  /** Fields left out are kept; `kind` cannot change. */
  async update(principal: Principal, id: string, input: ConnectionInput): Promise<ConnectionView> {
    const current = await this.connection(principal, id);
    if (input.kind !== undefined && input.kind !== current.kind) {
      throw ApiError.invalid("kind", "cannot change: add a new connection instead");
    }
    const merged = this.checked(current.kind, {
      name: input.name ?? current.name,
      baseUrl: input.baseUrl === undefined ? current.baseUrl : input.baseUrl,
      target: input.target === undefined ? current.target : input.target,
      issueType: input.issueType === undefined ? current.issueType : input.issueType,
      labels: input.labels ?? current.labels,
      email: input.email === undefined ? current.email : input.email,
      credential: input.credential === undefined ? current.credential : input.credential,
    });
    const change: TicketConnectionChange = merged;
    const updated = await this.deps.records.updateConnection(
      principal.organizationId,
      id,
      change,
      this.deps.clock.now(),
    );
    if (!updated) throw notFound(id);
    return viewOf(updated);
  }

  async remove(principal: Principal, id: string): Promise<void> {
    if (!(await this.deps.records.deleteConnection(principal.organizationId, id))) {
      throw notFound(id);
    }
  }

  /** Whether the organization has this connection (a repository's settings may name it). */
  async exists(organizationId: string, id: string): Promise<boolean> {
    return (await this.deps.records.findConnection(organizationId, id)) !== undefined;
  }

  /** The fields a kind needs, checked and normalized; 400 naming the first problem. */
  private checked(kind: TicketProviderKind, fields: Required<TicketConnectionChange>) {
    const name = fields.name.trim();
    if (name === "" || name.length > LIMITS.name) {
      throw ApiError.invalid("name", `must be 1 to ${LIMITS.name} characters`);
    }
    const labels = checkLabels(fields.labels);
    const credential = blank(fields.credential) ? null : (fields.credential ?? "").trim();
    if (credential !== null && (credential.length > LIMITS.credential || /\s/.test(credential))) {
      throw ApiError.invalid(
        "credential",
        `must be at most ${LIMITS.credential} characters, without spaces`,
      );
    }
    const common = { name, labels, credential };
    if (kind === "jira_cloud" || kind === "jira_dc") {
      return { ...common, ...this.jiraFields(kind, fields, credential) };
    }
    if (!blank(fields.baseUrl)) {
      throw ApiError.invalid(
        "baseUrl",
        `is not taken for ${PROVIDER_NAMES[kind]}: the server's configuration names its API (${kind === "linear" ? "MAINLINE_LINEAR_API_URL" : "MAINLINE_GITHUB_API_URL"})`,
      );
    }
    if (!blank(fields.email)) throw ApiError.invalid("email", "is for Jira Cloud only");
    if (kind === "linear") {
      const target = (fields.target ?? "").trim();
      if (!LIMITS.linearId.test(target)) {
        throw ApiError.invalid(
          "target",
          "must be the Linear team's id (Settings → Teams → copy id)",
        );
      }
      const project = blank(fields.issueType) ? null : (fields.issueType ?? "").trim();
      if (project !== null && !LIMITS.linearId.test(project)) {
        throw ApiError.invalid("issueType", "for Linear, a project id (or leave it out)");
      }
      if (credential === null)
        throw ApiError.invalid("credential", "is required (a Linear API key)");
      return { ...common, baseUrl: null, target, issueType: project, email: null };
    }
    const target = blank(fields.target) ? null : (fields.target ?? "").trim();
    if (target !== null && !LIMITS.repository.test(target)) {
      throw ApiError.invalid(
        "target",
        "must be owner/name of a GitHub repository, or left out for each test's own repository",
      );
    }
    if (!blank(fields.issueType)) throw ApiError.invalid("issueType", "is not used by GitHub");
    return { ...common, baseUrl: null, target, issueType: null, email: null };
  }

  private jiraFields(
    kind: "jira_cloud" | "jira_dc",
    fields: Required<TicketConnectionChange>,
    credential: string | null,
  ) {
    const baseUrl = (fields.baseUrl ?? "").trim().replace(/\/+$/, "");
    if (baseUrl === "") {
      throw ApiError.invalid(
        "baseUrl",
        kind === "jira_cloud"
          ? "is required: the Jira site, e.g. https://acme.atlassian.net"
          : "is required: the Jira Data Center base URL, e.g. https://jira.example.com",
      );
    }
    const refusal = urlRefusal(baseUrl, this.deps.policy);
    if (refusal !== undefined) throw ApiError.invalid("baseUrl", refusal);
    const url = new URL(baseUrl);
    if (url.search !== "" || url.hash !== "") {
      throw ApiError.invalid("baseUrl", "must have no query or fragment");
    }
    const target = (fields.target ?? "").trim().toUpperCase();
    if (!LIMITS.projectKey.test(target)) {
      throw ApiError.invalid("target", "must be the Jira project's key, e.g. ENG");
    }
    const issueType = blank(fields.issueType) ? null : (fields.issueType ?? "").trim();
    if (issueType !== null && issueType.length > LIMITS.issueType) {
      throw ApiError.invalid("issueType", `must be at most ${LIMITS.issueType} characters`);
    }
    const email = blank(fields.email) ? null : (fields.email ?? "").trim();
    if (kind === "jira_cloud" && (email === null || !LIMITS.email.test(email))) {
      throw ApiError.invalid(
        "email",
        "is required for Jira Cloud: the account the API token is of",
      );
    }
    if (kind === "jira_dc" && email !== null) {
      throw ApiError.invalid(
        "email",
        "is for Jira Cloud only (Data Center takes a personal access token)",
      );
    }
    if (credential === null) {
      throw ApiError.invalid(
        "credential",
        kind === "jira_cloud"
          ? "is required: an API token of the account (id.atlassian.com → Security → API tokens)"
          : "is required: a personal access token (Profile → Personal Access Tokens)",
      );
    }
    return { baseUrl, target, issueType, email };
  }
}

function checkLabels(labels: readonly string[]): string[] {
  if (labels.length > LIMITS.labels) {
    throw ApiError.invalid("labels", `must have at most ${LIMITS.labels} items`);
  }
  for (const [index, label] of labels.entries()) {
    if (label === "" || label.length > LIMITS.label || /\s/.test(label)) {
      throw ApiError.invalid(
        `labels[${index}]`,
        `must be 1 to ${LIMITS.label} characters without spaces (Jira refuses labels with spaces)`,
      );
    }
  }
  return [...new Set(labels)];
}

function defaultName(kind: TicketProviderKind, target: string | null): string {
  const provider = PROVIDER_NAMES[kind];
  return target === null || target.trim() === "" ? provider : `${provider} ${target.trim()}`;
}
