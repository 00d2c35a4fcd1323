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
  type GitLabTokenSource,
} from "./client.js";
import {
  brokenConnection,
  type FinishedAuthorization,
  type GitLabOAuthGrants,
} from "./oauth-grants.js";

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
  /** The OAuth application's grants, when the operator configured one. */
  oauth?: GitLabOAuthGrants | undefined;
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
  /** OAuth connections as last read or renewed, for their clients' tokens. */
  private readonly grants = new Map<string, GitLabConnectionRecord>();

  constructor(private readonly deps: GitLabConnectionsDeps) {}

  /** The OAuth application's grants, or none when the operator configured no application. */
  get oauth(): GitLabOAuthGrants | undefined {
    return this.deps.oauth;
  }

  /** A client over a token (the organization's, or one being checked). */
  clientFor(token: string | GitLabTokenSource): GitLabClient {
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
      // Instances before 15.5 have no such route: scopes unknown.
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
    const { record } = await this.store(organizationId, {
      token,
      userId: user.id,
      username: user.username,
      scopes,
      expiresAt: self?.expires_at ? Date.parse(self.expires_at) : null,
      method: "token",
      oauth: null,
    });
    return record;
  }

  /**
   * Stores what an OAuth authorization granted as the organization's connection, once GitLab says
   * whose it is and the scopes suffice (else the grant is revoked and nothing changes).
   */
  async connectOAuth(finished: FinishedAuthorization): Promise<GitLabConnectionRecord> {
    const { organizationId, tokens, redirectUri } = finished;
    const missing = REQUIRED_SCOPES.filter((scope) => !tokens.scopes.includes(scope));
    const client = this.clientFor({
      current: () => Promise.resolve(tokens.accessToken),
      renew: () => Promise.resolve(undefined),
    });
    const user = await this.read(() =>
      client.get<{ id: number; username: string }>("/user").then((answer) => answer.data),
    ).catch(async (error: unknown) => {
      await this.deps.oauth?.app.revoke(tokens.accessToken);
      throw error;
    });
    if (missing.length > 0) {
      await this.deps.oauth?.app.revoke(tokens.accessToken);
      throw new ApiError(
        "invalid_request",
        `GitLab granted the application without ${missing.join(", ")}: Mainline needs ${REQUIRED_SCOPES.join(" and ")}; the operator adds them to the OAuth application (docs/gitlab.md).`,
      );
    }
    const { record, existing } = await this.store(organizationId, {
      token: tokens.accessToken,
      userId: user.id,
      username: user.username,
      scopes: tokens.scopes,
      expiresAt: tokens.expiresAt,
      method: "oauth",
      oauth: { refreshToken: tokens.refreshToken, redirectUri, issuedAt: tokens.issuedAt },
    });
    if (existing?.method === "oauth" && existing.token !== record.token) {
      await this.deps.oauth?.app.revoke(existing.token);
    }
    return record;
  }

  /** Stores the organization's connection, keeping the webhook address and secret it had. */
  private async store(
    organizationId: string,
    fields: Pick<
      GitLabConnectionRecord,
      "token" | "userId" | "username" | "scopes" | "expiresAt" | "method" | "oauth"
    >,
  ): Promise<{ record: GitLabConnectionRecord; existing: GitLabConnectionRecord | undefined }> {
    const now = this.deps.clock.now();
    const existing = await this.deps.records.get(organizationId);
    const record: GitLabConnectionRecord = {
      ...fields,
      organizationId,
      hookKey: existing?.hookKey ?? randomBytes(16).toString("base64url"),
      instanceUrl: this.deps.url,
      webhookSecret: existing?.webhookSecret ?? randomBytes(24).toString("base64url"),
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
      problem: null,
    };
    await this.deps.records.put(record);
    this.forget(organizationId);
    return { record, existing };
  }

  async disconnect(organizationId: string): Promise<boolean> {
    this.forget(organizationId);
    const existing = await this.deps.records.get(organizationId);
    const removed = await this.deps.records.remove(organizationId);
    if (existing?.method === "oauth") await this.deps.oauth?.app.revoke(existing.token);
    return removed;
  }

  private forget(organizationId: string): void {
    this.clients.delete(organizationId);
    this.grants.delete(organizationId);
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
    let connection = await this.deps.records.get(organizationId);
    if (!connection) {
      throw new ApiError(
        "host_not_connected",
        `This organization is not connected to GitLab at ${this.deps.url}: connect it with an access token (POST /v1/gitlab/connect; docs/gitlab.md).`,
      );
    }
    if (connection.method === "oauth") connection = await this.fresh(connection);
    const cached = this.clients.get(organizationId);
    if (connection.method === "oauth") {
      // One client per grant: its token source follows the renewals.
      if (cached?.token === "oauth") return { connection, client: cached.client };
      const client = this.clientFor(this.tokenSource(organizationId));
      this.clients.set(organizationId, { token: "oauth", client });
      return { connection, client };
    }
    if (cached?.token === connection.token) return { connection, client: cached.client };
    const client = this.clientFor(connection.token);
    this.clients.set(organizationId, { token: connection.token, client });
    return { connection, client };
  }

  /** An OAuth connection with a token that works now (renewed when due). */
  private async fresh(connection: GitLabConnectionRecord): Promise<GitLabConnectionRecord> {
    const grants = this.deps.oauth;
    if (connection.problem !== null) throw brokenConnection(connection.problem);
    if (!grants) {
      throw new ApiError(
        "host_not_connected",
        "The organization connected to GitLab through an OAuth application this server no longer has (MAINLINE_GITLAB_OAUTH_CLIENT_ID): connect it again (docs/gitlab.md).",
      );
    }
    const renewed = grants.due(connection, this.deps.clock.now())
      ? await grants.renew(connection.organizationId)
      : connection;
    this.grants.set(connection.organizationId, renewed);
    return renewed;
  }

  /** The token of an organization's OAuth connection, renewed when due or refused. */
  private tokenSource(organizationId: string): GitLabTokenSource {
    return {
      current: async () => {
        const known = this.grants.get(organizationId);
        if (known && !this.deps.oauth?.due(known, this.deps.clock.now())) return known.token;
        const record = await this.deps.records.get(organizationId);
        if (!record) {
          throw new ApiError("host_not_connected", "This organization is not connected to GitLab.");
        }
        return (await this.fresh(record)).token;
      },
      renew: async (stale) => {
        const grants = this.deps.oauth;
        if (!grants) return undefined;
        const renewed = await grants.renew(organizationId, stale);
        this.grants.set(organizationId, renewed);
        return renewed.token;
      },
    };
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
