/**
 * Organizations' OAuth grants (docs/gitlab.md, "Connecting with an OAuth application"): starting
 * an authorization (a single-use `state` kept ten minutes, PKCE), finishing it when GitLab sends
 * the person back, and renewing the two-hour access tokens.
 *
 * GitLab revokes the previous pair the moment it issues a new one, so one process at a time
 * renews an organization's grant, under a lease in the database; the others wait for the renewed
 * token and read it. A refresh GitLab refuses, or one it did whose answer was lost, is recorded as
 * the connection's problem: the queue then says that a person must authorize again.
 */
import { createHash, randomBytes } from "node:crypto";
import type { Clock } from "../../lib/clock.js";
import { ApiError } from "../../lib/errors.js";
import { MINUTE_MS, SECOND_MS } from "../../lib/time.js";
import type {
  GitLabConnectionRecord,
  GitLabConnectionRecords,
  GitLabOAuthStates,
} from "../../organizations/gitlab-connections.js";
import { GitLabUnreachable } from "./client.js";
import {
  GitLabGrantLost,
  GitLabOAuthRefused,
  type GitLabOAuthApp,
  type OAuthTokens,
} from "./oauth-app.js";

/** How long a started authorization waits for its person. */
export const AUTHORIZATION_TTL_MS = 10 * MINUTE_MS;
/** How long a renewal may hold the lease before another process may take over. */
const LEASE_MS = 2 * MINUTE_MS;
/** How long a process waits for another's renewal before it gives up (for now). */
const WAIT_MS = 45 * SECOND_MS;

export interface GitLabOAuthGrantsDeps {
  app: GitLabOAuthApp;
  records: GitLabConnectionRecords;
  states: GitLabOAuthStates;
  clock: Clock;
  /** Between looks at another process's renewal (default 250 ms). */
  pollMs?: number;
  /** How long a renewal holds the lease before another process may take over (default 2 min). */
  leaseMs?: number;
}

/** A finished authorization: whose it is and what GitLab granted. */
export interface FinishedAuthorization {
  organizationId: string;
  tokens: OAuthTokens;
  redirectUri: string;
}

export class GitLabOAuthGrants {
  constructor(private readonly deps: GitLabOAuthGrantsDeps) {}

  get app(): GitLabOAuthApp {
    return this.deps.app;
  }

  /** Starts an authorization for the organization: the address its person opens on GitLab. */
  async start(
    organizationId: string,
    redirectUri: string,
  ): Promise<{ url: string; expiresAt: number }> {
    const now = this.deps.clock.now();
    const state = randomBytes(24).toString("base64url");
    const codeVerifier = randomBytes(48).toString("base64url");
    const expiresAt = now + AUTHORIZATION_TTL_MS;
    await this.deps.states.put(
      {
        stateHash: hashOf(state),
        organizationId,
        codeVerifier,
        redirectUri,
        expiresAt,
        createdAt: now,
      },
      now,
    );
    return { url: this.deps.app.authorizeUrl({ redirectUri, state, codeVerifier }), expiresAt };
  }

  /**
   * GitLab sent the person back: the authorization its `state` names (once), its code exchanged.
   * Refused (400) when the state is unknown, used or expired, or the person denied it.
   */
  async finish(input: {
    state?: string | undefined;
    code?: string | undefined;
    error?: string | undefined;
    errorDescription?: string | undefined;
  }): Promise<FinishedAuthorization> {
    const pending =
      input.state === undefined
        ? undefined
        : await this.deps.states.take(hashOf(input.state), this.deps.clock.now());
    if (!pending) {
      throw new ApiError(
        "invalid_request",
        "This authorization is unknown, was used already or has expired (each lasts ten minutes): start a new one.",
      );
    }
    if (input.error !== undefined) {
      throw new ApiError(
        "invalid_request",
        input.error === "access_denied"
          ? "The authorization was denied on GitLab: nothing changed."
          : `GitLab did not authorize Mainline (${input.error.slice(0, 60)}): ${(input.errorDescription ?? "").slice(0, 200)}`,
      );
    }
    if (input.code === undefined || input.code === "") {
      throw new ApiError("invalid_request", "GitLab sent no authorization code: start again.");
    }
    try {
      const tokens = await this.deps.app.exchange(
        input.code,
        pending.redirectUri,
        pending.codeVerifier,
      );
      return { organizationId: pending.organizationId, tokens, redirectUri: pending.redirectUri };
    } catch (error) {
      throw grantError(error, "exchange");
    }
  }

  /** Whether the connection's access token is due for renewal (the last quarter of its life, at most 5 minutes). */
  due(record: GitLabConnectionRecord, now: number): boolean {
    if (record.oauth === null || record.expiresAt === null) return false;
    const margin = Math.min(5 * MINUTE_MS, (record.expiresAt - record.oauth.issuedAt) / 4);
    return now >= record.expiresAt - margin;
  }

  /**
   * The organization's connection with a token that works: renewed when due, or when GitLab
   * refused `stale` (and nobody renewed it since). Waits for another process's renewal.
   */
  async renew(organizationId: string, stale?: string): Promise<GitLabConnectionRecord> {
    const { records, clock } = this.deps;
    const deadline = clock.now() + WAIT_MS;
    for (;;) {
      const record = await records.get(organizationId);
      if (!record?.oauth) {
        throw new ApiError("host_not_connected", "This organization is not connected to GitLab.");
      }
      if (record.problem !== null) throw brokenConnection(record.problem);
      const now = clock.now();
      const fresh = stale === undefined ? !this.due(record, now) : record.token !== stale;
      if (fresh) return record;
      const until = now + (this.deps.leaseMs ?? LEASE_MS);
      if (await records.claimRefresh(organizationId, record.oauth.refreshToken, now, until)) {
        return this.refreshHeld(record);
      }
      if (clock.now() >= deadline) {
        throw new ApiError(
          "unavailable",
          "Another Mainline process is renewing the organization's GitLab authorization; try again shortly.",
        );
      }
      await new Promise((resolve) => setTimeout(resolve, this.deps.pollMs ?? 250));
    }
  }

  /** The refresh, under the lease this process holds. */
  private async refreshHeld(record: GitLabConnectionRecord): Promise<GitLabConnectionRecord> {
    const { records, clock } = this.deps;
    const grant = record.oauth;
    if (grant === null) throw new Error("refreshHeld: not an OAuth connection");
    let tokens: OAuthTokens;
    try {
      tokens = await this.deps.app.refresh(grant.refreshToken, grant.redirectUri);
    } catch (error) {
      const lost = error instanceof GitLabGrantLost;
      const refused = error instanceof GitLabOAuthRefused && error.error === "invalid_grant";
      if (lost || refused) {
        // A process that took over after this one's lease ran out may have renewed it meanwhile.
        const latest = await records.get(record.organizationId);
        if (latest?.oauth && latest.oauth.refreshToken !== grant.refreshToken && !latest.problem) {
          return latest;
        }
        const problem = lost
          ? `${error.message}.`
          : "GitLab no longer accepts the authorization (it was revoked in GitLab, its application was deleted, or a renewal by a process that stopped mid-way was lost).";
        await records.markProblem(record.organizationId, grant.refreshToken, problem, clock.now());
        throw brokenConnection(problem);
      }
      await records.releaseRefresh(record.organizationId, grant.refreshToken);
      throw grantError(error, "refresh");
    }
    const renewal = {
      token: tokens.accessToken,
      refreshToken: tokens.refreshToken,
      issuedAt: tokens.issuedAt,
      expiresAt: tokens.expiresAt,
      scopes: tokens.scopes.length > 0 ? tokens.scopes : record.scopes,
    };
    const now = clock.now();
    if (!(await records.renewed(record.organizationId, grant.refreshToken, renewal, now))) {
      // Disconnected or connected anew meanwhile: the new pair belongs to nothing stored.
      await this.deps.app.revoke(tokens.accessToken);
      return this.renew(record.organizationId);
    }
    return {
      ...record,
      token: renewal.token,
      expiresAt: renewal.expiresAt,
      scopes: renewal.scopes,
      oauth: { ...grant, refreshToken: renewal.refreshToken, issuedAt: renewal.issuedAt },
      updatedAt: now,
    };
  }
}

function hashOf(state: string): string {
  return createHash("sha256").update(state).digest("base64url");
}

/** The connection stopped working: a person must authorize again. */
export function brokenConnection(problem: string): ApiError {
  return new ApiError(
    "host_not_connected",
    `The organization's GitLab connection no longer works: ${problem} An admin connects it again (POST /v1/gitlab/authorize, or /v1/gitlab/connect with an access token; docs/gitlab.md).`,
  );
}

/** A failed exchange or refresh in the API's words (never a 500 for GitLab's trouble). */
function grantError(error: unknown, what: "exchange" | "refresh"): unknown {
  if (error instanceof GitLabUnreachable) {
    return new ApiError(
      "unavailable",
      `${error.message}${what === "exchange" ? ": start the authorization again" : ""}; try again later.`,
    );
  }
  if (!(error instanceof GitLabOAuthRefused)) return error;
  if (error.error === "invalid_client") {
    return new ApiError(
      "unavailable",
      "GitLab refused Mainline's OAuth application (invalid_client): the operator checks MAINLINE_GITLAB_OAUTH_CLIENT_ID and MAINLINE_GITLAB_OAUTH_CLIENT_SECRET against the application in GitLab (docs/gitlab.md).",
    );
  }
  if (error.status >= 500 || error.status === 429 || error.error === "invalid_response") {
    return new ApiError(
      "unavailable",
      `GitLab answered ${String(error.status)}${error.error === "invalid_response" ? " without a token pair" : ""}${what === "exchange" ? ": start the authorization again" : ""}; try again later.`,
    );
  }
  return new ApiError(
    "invalid_request",
    `GitLab refused the ${what === "exchange" ? "authorization code" : "refresh"} (${error.error}): ${error.description} Start the authorization again.`,
  );
}
