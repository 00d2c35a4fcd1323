/**
 * An organization's connection to the GitLab instance this server is configured for: the access
 * token Mainline acts with on the organization's GitLab projects (a group or project access
 * token, a bot user's personal token, or the token an OAuth application was granted), what GitLab
 * said of it when it was connected, and the secret GitLab's webhooks for the organization carry.
 * One per organization; the token is never shown again once stored (docs/gitlab.md).
 */

/** What an OAuth application's grant needs to renew its two-hour access token. */
export interface GitLabOAuthGrant {
  refreshToken: string;
  /** The redirect URI the grant was made with (GitLab's refresh asks for it again). */
  redirectUri: string;
  /** When the current access token was issued (epoch ms). */
  issuedAt: number;
}

export interface GitLabConnectionRecord {
  organizationId: string;
  /** The public key of the connection's webhook address (`/v1/gitlab/webhooks/{key}`). */
  hookKey: string;
  /** The instance it was made on (`https://gitlab.example.com`). */
  instanceUrl: string;
  token: string;
  /** The token's user, as `GET /user` answered. */
  userId: number;
  username: string;
  /** The token's scopes, where GitLab said (`GET /personal_access_tokens/self`). */
  scopes: string[];
  /** When the token expires (epoch ms), where GitLab said. */
  expiresAt: number | null;
  /** What GitLab sends in `X-Gitlab-Token` with the organization's webhooks. */
  webhookSecret: string;
  createdAt: number;
  updatedAt: number;
  /** An access token given to Mainline (`token`), or an OAuth application's grant (`oauth`). */
  method: "token" | "oauth";
  /** The grant, for `oauth`. */
  oauth: GitLabOAuthGrant | null;
  /** Why the connection stopped working, when Mainline found out (GitLab refused a refresh). */
  problem: string | null;
}

/** A renewed OAuth access token, as stored. */
export interface GitLabRenewal {
  token: string;
  refreshToken: string;
  issuedAt: number;
  expiresAt: number | null;
  scopes: string[];
}

/** An OAuth authorization under way: what its callback needs, found by its state's hash. */
export interface GitLabOAuthState {
  stateHash: string;
  organizationId: string;
  codeVerifier: string;
  redirectUri: string;
  expiresAt: number;
  createdAt: number;
}

export interface GitLabConnectionRecords {
  /** Stores the organization's connection, replacing the one it had. */
  put(record: GitLabConnectionRecord): Promise<void>;
  get(organizationId: string): Promise<GitLabConnectionRecord | undefined>;
  byHookKey(hookKey: string): Promise<GitLabConnectionRecord | undefined>;
  /** Answers whether there was one. */
  remove(organizationId: string): Promise<boolean>;
  /**
   * Takes the lease to refresh the organization's OAuth grant while its refresh token is
   * `refreshToken`, no other process holds the lease (or it ran out before `now`) and no problem
   * is recorded. Answers whether this caller holds it now (until `until`).
   */
  claimRefresh(
    organizationId: string,
    refreshToken: string,
    now: number,
    until: number,
  ): Promise<boolean>;
  /** Stores the renewed token in place of the grant whose refresh token was `previous`; frees the lease. */
  renewed(
    organizationId: string,
    previous: string,
    renewal: GitLabRenewal,
    now: number,
  ): Promise<boolean>;
  /** Frees the lease taken for `refreshToken` (a refresh that did not happen). */
  releaseRefresh(organizationId: string, refreshToken: string): Promise<void>;
  /** Records why the grant with `refreshToken` no longer works; frees the lease. */
  markProblem(
    organizationId: string,
    refreshToken: string,
    problem: string,
    now: number,
  ): Promise<void>;
}

export interface GitLabOAuthStates {
  /** Stores an authorization under way (and forgets those that expired before `now`). */
  put(state: GitLabOAuthState, now: number): Promise<void>;
  /** The authorization with this state hash, removed so that it serves once; none once expired. */
  take(stateHash: string, now: number): Promise<GitLabOAuthState | undefined>;
}
