/**
 * An organization's connection to the GitLab instance this server is configured for: the access
 * token Mainline acts with on the organization's GitLab projects (a group or project access
 * token, or a bot user's personal token), what GitLab said of it when it was connected, and the
 * secret GitLab's webhooks for the organization carry. One per organization; the token is never
 * shown again once stored (docs/gitlab.md).
 */

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
}

export interface GitLabConnectionRecords {
  /** Stores the organization's connection, replacing the one it had. */
  put(record: GitLabConnectionRecord): Promise<void>;
  get(organizationId: string): Promise<GitLabConnectionRecord | undefined>;
  byHookKey(hookKey: string): Promise<GitLabConnectionRecord | undefined>;
  /** Answers whether there was one. */
  remove(organizationId: string): Promise<boolean>;
}
