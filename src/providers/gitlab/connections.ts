/**
 * Organizations' connections to the configured GitLab instance: connecting checks the token with
 * GitLab (its user, its scopes, its expiry) before anything is stored, keeps the webhook address
 * and secret across a token's rotation, and hands the rest of the provider a client per
 * organization. A repository is reached only through its own organization's connection.
 */
import { randomBytes } from "node:crypto";
import type { Clock } from "../../lib/clock.js";
import { ApiError } from "../../lib/errors.js";
import type {
  GitLabConnectionRecord,
  GitLabConnectionRecords,
} from "../../organizations/gitlab-connections.js";
import {
  GitLabClient,
  GitLabError,
  GitLabUnreachable,
  type GitLabClientOptions,
} from "./client.js";

/** The scopes Mainline needs: the REST API, and git pushes of test branches. */
export const REQUIRED_SCOPES = ["api", "write_repository"] as const;

export interface GitLabConnectionsDeps {
  records: GitLabConnectionRecords;
  clock: Clock;
  url: string;
  userAgent: string;
  retryBaseMs?: number | undefined;
  /** Every request any client makes (for counting); never sees the token. */
  onRequest?: GitLabClientOptions["onRequest"];
}

/** What an organization's connection is, as the API shows it (never the token or secret). */
export interface ConnectionView {
  instanceUrl: string;
  username: string;
  scopes: string[];
  expiresAt: number | null;
  connectedAt: number;
}

export class GitLabConnections {
  private readonly clients = new Map<string, { token: string; client: GitLabClient }>();

  constructor(private readonly deps: GitLabConnectionsDeps) {}

  /** A client over a token (the organization's, or one being checked). */
  clientFor(token: string): GitLabClient {
    const { url, userAgent, retryBaseMs, onRequest } = this.deps;
    return new GitLabClient({
      url,
      token,
      userAgent,
      ...(retryBaseMs === undefined ? {} : { retryBaseMs }),
      ...(onRequest ? { onRequest } : {}),
    });
  }

  /**
   * Checks `token` with GitLab and stores it as the organization's connection (replacing one it
   * had, keeping its webhook address and secret). A token GitLab refuses, or whose scopes lack
   * what Mainline needs, is refused and nothing changes.
   */
  async connect(organizationId: string, token: string): Promise<GitLabConnectionRecord> {
    const client = this.clientFor(token);
    const user = await this.read(() =>
      client.get<{ id: number; username: string }>("/user").then((answer) => answer.data),
    );
    const self = await this.read(() =>
      client.find<{ scopes?: string[]; expires_at?: string | null; active?: boolean }>(
        "/personal_access_tokens/self",
      ),
    ).catch((error: unknown) => {
      // OAuth tokens, and instances before 15.5, have no such route: scopes unknown.
      if (error instanceof ApiError && error.code === "forbidden") return undefined;
      throw error;
    });
    const scopes = self?.scopes ?? [];
    const missing = self?.scopes ? REQUIRED_SCOPES.filter((scope) => !scopes.includes(scope)) : [];
    if (missing.length > 0) {
      throw new ApiError(
        "invalid_request",
        `The GitLab token lacks the scope${missing.length === 1 ? "" : "s"} ${missing.join(", ")}: Mainline needs ${REQUIRED_SCOPES.join(" and ")} (docs/gitlab.md, "Tokens").`,
      );
    }
    const now = this.deps.clock.now();
    const existing = await this.deps.records.get(organizationId);
    const record: GitLabConnectionRecord = {
      organizationId,
      hookKey: existing?.hookKey ?? randomBytes(16).toString("base64url"),
      instanceUrl: this.deps.url,
      token,
      userId: user.id,
      username: user.username,
      scopes,
      expiresAt: self?.expires_at ? Date.parse(self.expires_at) : null,
      webhookSecret: existing?.webhookSecret ?? randomBytes(24).toString("base64url"),
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    await this.deps.records.put(record);
    this.clients.delete(organizationId);
    return record;
  }

  async disconnect(organizationId: string): Promise<boolean> {
    this.clients.delete(organizationId);
    return this.deps.records.remove(organizationId);
  }

  get(organizationId: string): Promise<GitLabConnectionRecord | undefined> {
    return this.deps.records.get(organizationId);
  }

  byHookKey(hookKey: string): Promise<GitLabConnectionRecord | undefined> {
    return this.deps.records.byHookKey(hookKey);
  }

  /** The organization's connection and a client over its token, or `host_not_connected`. */
  async access(
    organizationId: string,
  ): Promise<{ connection: GitLabConnectionRecord; client: GitLabClient }> {
    const connection = await this.deps.records.get(organizationId);
    if (!connection) {
      throw new ApiError(
        "host_not_connected",
        `This organization is not connected to GitLab at ${this.deps.url}: connect it with an access token (POST /v1/gitlab/connect; docs/gitlab.md).`,
      );
    }
    const cached = this.clients.get(organizationId);
    if (cached?.token === connection.token) return { connection, client: cached.client };
    const client = this.clientFor(connection.token);
    this.clients.set(organizationId, { token: connection.token, client });
    return { connection, client };
  }

  /** A read of GitLab with its failures in the API's words (never a 500 for GitLab's trouble). */
  private async read<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw asApiError(error);
    }
  }
}

/** GitLab's failure as the API answers it: the token refused, forbidden, or GitLab unreachable. */
export function asApiError(error: unknown): unknown {
  if (error instanceof GitLabUnreachable) {
    return new ApiError("unavailable", `${error.message}; try again later.`);
  }
  if (!(error instanceof GitLabError)) return error;
  if (error.status === 401) {
    return new ApiError(
      "invalid_request",
      "GitLab refused the token (401): it is unknown, revoked or expired.",
    );
  }
  if (error.status === 403) return new ApiError("forbidden", `GitLab refused: ${error.detail}`);
  if (error.status === 404)
    return new ApiError("not_found", `GitLab has no such thing: ${error.detail}`);
  return new ApiError("unavailable", `${error.message}; try again later.`);
}
