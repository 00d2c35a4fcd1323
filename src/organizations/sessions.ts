/**
 * The dashboard's sign-in sessions: an API token (or GitHub, through a linked installation) signs a
 * browser in once; then the browser holds a random session id (`mls_…`) the server knows only by
 * its SHA-256. A session ends when signed out, revoked, idle or too old, or when its token is
 * revoked or its installation unlinked. ADR 0023 says why.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "../lib/clock.js";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../lib/time.js";
import { digestsEqual, hashToken, publicId } from "../lib/tokens.js";
import type { Organization } from "./records.js";
import { OrganizationError, type OrganizationService, type Principal } from "./service.js";

/** Session ids: this prefix and 32 random bytes (base64url), so that logs can redact them. */
export const SESSION_PREFIX = "mls_";
const SESSION_ID_PATTERN = /^mls_[A-Za-z0-9_-]{43}$/;
const CSRF_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/**
 * Default lifetimes. Idle: a day without a page seen ends the session (a working day's breaks keep
 * it, a weekend does not). Absolute: a week, however busy, so a stolen cookie is worth at most
 * that; the API token itself is what people keep.
 */
export const DEFAULT_SESSION_LIFETIMES: SessionLifetimes = {
  idleMs: 24 * HOUR_MS,
  absoluteMs: 7 * DAY_MS,
};

/** How often a session in use writes when it was last seen (idle expiry is this coarse). */
const TOUCH_INTERVAL_MS = MINUTE_MS;

export interface SessionLifetimes {
  idleMs: number;
  absoluteMs: number;
}

export type SessionEndReason = "signed_out" | "revoked";

/** A session as stored (never its id: only the hash of it). */
export interface SessionRecord {
  /** Public name (`ses_…`): listings and revocation; not a secret. */
  id: string;
  organizationId: string;
  /** The API token it was signed in with; null for a GitHub session. */
  tokenId: string | null;
  /** A GitHub session: the user and the installation it entered through (else all null). */
  githubUserId: number | null;
  githubLogin: string | null;
  githubInstallationId: number | null;
  createdAt: number;
  lastSeenAt: number;
  /** The absolute end. */
  expiresAt: number;
  revokedAt: number | null;
  revokedReason: string | null;
}

export interface NewSession extends Omit<SessionRecord, "revokedAt" | "revokedReason"> {
  idHash: string;
}

/** A session found by its hash, with what the lookup joined. */
export interface StoredSession extends SessionRecord {
  idHash: string;
  organizationSlug: string;
  /** When the session's token was revoked; null while it is active (or without a token). */
  tokenRevokedAt: number | null;
  /** A GitHub session's installation: the organization it is linked to now (null: none). */
  installationOrganizationId: string | null;
}

/** A session as an operator's listing shows it. */
export interface SessionListing extends SessionRecord {
  tokenName: string | null;
  tokenRevokedAt: number | null;
  installationOrganizationId: string | null;
}

/** Who signs in with GitHub, through which linked installation. */
export interface GitHubSignIn {
  organizationId: string;
  organizationSlug: string;
  userId: number;
  login: string;
  installationId: number;
}

/** Sessions in storage (implemented by `db/stores/sessions.ts`). */
export interface SessionRecords {
  insertSession(session: NewSession): Promise<void>;
  findSessionByHash(idHash: string): Promise<StoredSession | undefined>;
  touchSession(id: string, at: number): Promise<void>;
  /** Ends a session that is not ended yet; false when it was. */
  revokeSession(id: string, at: number, reason: SessionEndReason): Promise<boolean>;
  listSessions(organizationId: string): Promise<SessionListing[]>;
  findSession(id: string): Promise<SessionListing | undefined>;
}

/** A live session: who it signs in, and until when. */
export interface WebSession {
  id: string;
  principal: Principal;
  createdAt: number;
  lastSeenAt: number;
  /** When it ends if nothing else ends it first: the idle or the absolute limit. */
  endsAt: number;
}

/** Where a session stands, for listings. */
export type SessionState =
  "active" | "expired" | "signed_out" | "revoked" | "token_revoked" | "installation_unlinked";

export function sessionState(
  session: Pick<
    SessionListing,
    | "revokedAt"
    | "revokedReason"
    | "tokenRevokedAt"
    | "lastSeenAt"
    | "expiresAt"
    | "organizationId"
    | "githubInstallationId"
    | "installationOrganizationId"
  >,
  now: number,
  lifetimes: SessionLifetimes,
): SessionState {
  if (session.revokedAt !== null) {
    return session.revokedReason === "signed_out" ? "signed_out" : "revoked";
  }
  if (session.tokenRevokedAt !== null) return "token_revoked";
  if (
    session.githubInstallationId !== null &&
    session.installationOrganizationId !== session.organizationId
  ) {
    return "installation_unlinked";
  }
  if (now >= session.expiresAt || now >= session.lastSeenAt + lifetimes.idleMs) return "expired";
  return "active";
}

export class SessionService {
  readonly lifetimes: SessionLifetimes;

  constructor(
    private readonly deps: {
      sessions: SessionRecords;
      organizations: Pick<OrganizationService, "authenticate" | "findOrganization">;
      clock: Clock;
      lifetimes?: SessionLifetimes | undefined;
    },
  ) {
    this.lifetimes = deps.lifetimes ?? DEFAULT_SESSION_LIFETIMES;
  }

  /**
   * A new session for an API token (401 `unauthorized` for an unknown or revoked one). The id is
   * returned once, for the cookie; only its hash is stored.
   */
  async signIn(token: string): Promise<{ sessionId: string; session: WebSession }> {
    const principal = await this.deps.organizations.authenticate(token);
    const now = this.deps.clock.now();
    const sessionId = SESSION_PREFIX + randomBytes(32).toString("base64url");
    const record: NewSession = {
      id: publicId("ses"),
      idHash: hashToken(sessionId),
      organizationId: principal.organizationId,
      tokenId: principal.tokenId,
      githubUserId: null,
      githubLogin: null,
      githubInstallationId: null,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + this.lifetimes.absoluteMs,
    };
    await this.deps.sessions.insertSession(record);
    return { sessionId, session: this.live(record, principal.organizationSlug) };
  }

  /**
   * A new session for a GitHub user who reaches an installation linked to the organization (the
   * web layer has checked that with GitHub, with the user's token, which is not kept).
   */
  async signInWithGitHub(
    github: GitHubSignIn,
  ): Promise<{ sessionId: string; session: WebSession }> {
    const now = this.deps.clock.now();
    const sessionId = SESSION_PREFIX + randomBytes(32).toString("base64url");
    const record: NewSession = {
      id: publicId("ses"),
      idHash: hashToken(sessionId),
      organizationId: github.organizationId,
      tokenId: null,
      githubUserId: github.userId,
      githubLogin: github.login,
      githubInstallationId: github.installationId,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + this.lifetimes.absoluteMs,
    };
    await this.deps.sessions.insertSession(record);
    return { sessionId, session: this.live(record, github.organizationSlug) };
  }

  /** The live session a cookie's id names; undefined when there is none (or it ended). */
  async resume(sessionId: string): Promise<WebSession | undefined> {
    if (!SESSION_ID_PATTERN.test(sessionId)) return undefined;
    const digest = hashToken(sessionId);
    const found = await this.deps.sessions.findSessionByHash(digest);
    if (!found || !digestsEqual(found.idHash, digest)) return undefined;
    const now = this.deps.clock.now();
    if (sessionState(found, now, this.lifetimes) !== "active") return undefined;
    if (now - found.lastSeenAt >= TOUCH_INTERVAL_MS) {
      await this.deps.sessions.touchSession(found.id, now);
      found.lastSeenAt = now;
    }
    return this.live(found, found.organizationSlug);
  }

  /** Ends the session the cookie names (nothing happens for an unknown or ended one). */
  async signOut(sessionId: string): Promise<void> {
    if (!SESSION_ID_PATTERN.test(sessionId)) return;
    const found = await this.deps.sessions.findSessionByHash(hashToken(sessionId));
    if (found)
      await this.deps.sessions.revokeSession(found.id, this.deps.clock.now(), "signed_out");
  }

  /** Every session of an organization, newest first, with its state (operators: `session list`). */
  async list(slug: string): Promise<(SessionListing & { state: SessionState })[]> {
    const organization = await this.requireOrganization(slug);
    const now = this.deps.clock.now();
    const sessions = await this.deps.sessions.listSessions(organization.id);
    return sessions.map((s) => ({ ...s, state: sessionState(s, now, this.lifetimes) }));
  }

  /**
   * Revokes a session of the organization by its public id (operators: `session revoke`); a
   * session of another organization is reported as unknown.
   */
  async revoke(slug: string, id: string): Promise<SessionListing & { state: SessionState }> {
    const organization = await this.requireOrganization(slug);
    const found = await this.deps.sessions.findSession(id);
    if (!found || found.organizationId !== organization.id) {
      throw new OrganizationError(`No session ${id} in organization "${slug}".`);
    }
    const now = this.deps.clock.now();
    await this.deps.sessions.revokeSession(id, now, "revoked");
    const after = (await this.deps.sessions.findSession(id)) ?? found;
    return { ...after, state: sessionState(after, now, this.lifetimes) };
  }

  /** The anti-forgery token of a session's forms: derived from its id, so nothing is stored. */
  csrfToken(sessionId: string): string {
    return createHmac("sha256", sessionId).update("mainline form v1").digest("base64url");
  }

  /** Whether a form's anti-forgery field is the session's. */
  csrfMatches(sessionId: string, presented: unknown): boolean {
    if (typeof presented !== "string" || !CSRF_PATTERN.test(presented)) return false;
    return timingSafeEqual(Buffer.from(this.csrfToken(sessionId)), Buffer.from(presented));
  }

  private live(
    record: Omit<SessionRecord, "revokedAt" | "revokedReason">,
    organizationSlug: string,
  ): WebSession {
    return {
      id: record.id,
      principal: {
        organizationId: record.organizationId,
        organizationSlug,
        // What acts in the audit trail: the token, or the GitHub user.
        tokenId: record.tokenId ?? `github:${record.githubLogin ?? String(record.githubUserId)}`,
      },
      createdAt: record.createdAt,
      lastSeenAt: record.lastSeenAt,
      endsAt: Math.min(record.expiresAt, record.lastSeenAt + this.lifetimes.idleMs),
    };
  }

  private async requireOrganization(slug: string): Promise<Organization> {
    const organization = await this.deps.organizations.findOrganization(slug);
    if (!organization) throw new OrganizationError(`No organization with slug "${slug}".`);
    return organization;
  }
}
