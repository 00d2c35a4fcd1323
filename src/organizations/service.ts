import { randomUUID } from "node:crypto";
import { ApiError } from "../lib/errors.js";
import type { Clock } from "../lib/clock.js";
import { ORG_SLUG_PATTERN, RESERVED_SLUGS } from "./slug.js";
import {
  MIN_SUPPLIED_TOKEN_LENGTH,
  digestsEqual,
  generateToken,
  hashToken,
  publicId,
  tokenHint,
} from "../lib/tokens.js";
import type { ApiTokenRecord, Organization, OrganizationRecords, TokenOwner } from "./records.js";

export const DEFAULT_ORGANIZATION = "default";
/** The name of the token a first start showed. */
export const FIRST_START_TOKEN = "first start";
/** The name of a first start's token until a start that serves has shown it. */
export const FIRST_START_PENDING = "first start (not shown yet)";

/** Who made a request: the organization its token belongs to. */
export interface Principal {
  organizationId: string;
  organizationSlug: string;
  tokenId: string;
}

/**
 * Who a change is recorded as when the caller names no one: the token that made it, or the GitHub
 * user of a session signed in with GitHub (`github:<login>`).
 */
export function tokenActor(principal: Principal): string {
  return principal.tokenId.startsWith("github:") ? principal.tokenId : `token:${principal.tokenId}`;
}

export interface IssuedToken {
  organization: Organization;
  organizationCreated: boolean;
  tokenId: string;
  /** The secret itself: shown once, never stored. */
  token: string;
}

export class OrganizationError extends Error {}

export function assertValidSlug(slug: string): void {
  if (!ORG_SLUG_PATTERN.test(slug)) {
    throw new OrganizationError(
      `Invalid organization slug "${slug}": use 1-63 lowercase letters, digits and dashes, starting with a letter or digit.`,
    );
  }
  if (RESERVED_SLUGS.has(slug)) {
    throw new OrganizationError(
      `The organization slug "${slug}" is reserved: the server's own pages use /${slug}. Choose another.`,
    );
  }
}

export class OrganizationService {
  constructor(
    private readonly store: OrganizationRecords,
    private readonly clock: Clock,
  ) {}

  /** Creates the organization if needed, then issues a new token for it. */
  async createOrganizationWithToken(slug: string, tokenName?: string): Promise<IssuedToken> {
    assertValidSlug(slug);
    const { organization, created } = await this.store.ensure({
      id: randomUUID(),
      slug,
      createdAt: this.clock.now(),
    });
    const { tokenId, token } = await this.storeNewToken(organization.id, tokenName ?? null);
    return { organization, organizationCreated: created, tokenId, token };
  }

  async issueToken(slug: string, tokenName?: string): Promise<IssuedToken> {
    const organization = await this.requireOrganization(slug);
    const { tokenId, token } = await this.storeNewToken(organization.id, tokenName ?? null);
    return { organization, organizationCreated: false, tokenId, token };
  }

  async listTokens(slug: string): Promise<ApiTokenRecord[]> {
    const organization = await this.requireOrganization(slug);
    return this.store.listTokens(organization.id);
  }

  /** The organization with this slug, if there is one. */
  findOrganization(slug: string): Promise<Organization | undefined> {
    return this.store.findBySlug(slug);
  }

  listOrganizations(): Promise<Organization[]> {
    return this.store.list();
  }

  async revokeToken(tokenId: string): Promise<ApiTokenRecord> {
    const token = await this.store.findToken(tokenId);
    if (!token) throw new OrganizationError(`No token with id ${tokenId}.`);
    if (token.revokedAt !== null) return token;
    await this.store.revokeToken(tokenId, this.clock.now());
    const revoked = await this.store.findToken(tokenId);
    if (!revoked) throw new OrganizationError(`No token with id ${tokenId}.`);
    return revoked;
  }

  /**
   * `MAINLINE_BOOTSTRAP_ORG` + `MAINLINE_BOOTSTRAP_TOKEN`: makes sure the organization exists and
   * accepts the token. Refuses a token that already belongs to another organization or was revoked.
   */
  async ensureBootstrap(slug: string, token: string): Promise<{ created: boolean }> {
    assertValidSlug(slug);
    if (token.length < MIN_SUPPLIED_TOKEN_LENGTH) {
      throw new OrganizationError(
        `MAINLINE_BOOTSTRAP_TOKEN must be at least ${MIN_SUPPLIED_TOKEN_LENGTH} characters long (generate one with: openssl rand -hex 32).`,
      );
    }
    const { organization, created } = await this.store.ensure({
      id: randomUUID(),
      slug,
      createdAt: this.clock.now(),
    });
    // Two servers bootstrapping the same database at once: one inserts, the other finds it.
    for (;;) {
      const existing = await this.store.findTokenByHash(hashToken(token));
      if (existing) {
        this.acceptBootstrapToken(existing, organization);
        return { created };
      }
      if (await this.storeToken(organization.id, token, "bootstrap")) return { created };
    }
  }

  private acceptBootstrapToken(existing: ApiTokenRecord, organization: Organization): void {
    if (existing.organizationId !== organization.id) {
      throw new OrganizationError(
        "MAINLINE_BOOTSTRAP_TOKEN already belongs to another organization.",
      );
    }
    if (existing.revokedAt !== null) {
      throw new OrganizationError("MAINLINE_BOOTSTRAP_TOKEN was revoked; configure a new one.");
    }
  }

  /**
   * The token a first start shows, issued by a start that serves (it listens on its port). On an
   * empty database: the `default` organization and a token for it. Later, while no start has
   * shown one (it stopped before it could: the port was taken, the process died), a new one; the
   * earlier ones, never shown, are revoked. Undefined otherwise, and when another process
   * starting at the same time (its token issued since `startedAt`, when this start began) shows
   * it. The token stays `FIRST_START_PENDING` until `firstStartTokenShown`.
   */
  async issueFirstStartToken(startedAt: number): Promise<IssuedToken | undefined> {
    if ((await this.store.count()) === 0) {
      const { organization, created } = await this.store.ensure({
        id: randomUUID(),
        slug: DEFAULT_ORGANIZATION,
        createdAt: this.clock.now(),
      });
      // Two processes starting at once on an empty database: the creator shows the token.
      if (!created) return undefined;
      return this.issuePending(organization, true);
    }
    const organization = await this.store.findBySlug(DEFAULT_ORGANIZATION);
    if (!organization) return undefined;
    const tokens = await this.store.listTokens(organization.id);
    // Any other token (the first start's, shown; one made by `token create`): nothing to show.
    if (tokens.some((token) => token.name !== FIRST_START_PENDING)) return undefined;
    const unshown = tokens.filter((token) => token.revokedAt === null);
    if (unshown.some((token) => token.createdAt >= startedAt)) return undefined;
    for (const token of unshown) await this.store.revokeToken(token.id, this.clock.now());
    return this.issuePending(organization, false);
  }

  /** The first start's token was shown: it is the first start's from now on. */
  async firstStartTokenShown(tokenId: string): Promise<void> {
    await this.store.renameToken(tokenId, FIRST_START_TOKEN);
  }

  private async issuePending(
    organization: Organization,
    organizationCreated: boolean,
  ): Promise<IssuedToken> {
    const { tokenId, token } = await this.storeNewToken(organization.id, FIRST_START_PENDING);
    return { organization, organizationCreated, tokenId, token };
  }

  /** A freshly generated token, stored (32 random bytes: a clash is drawn again, never kept). */
  private async storeNewToken(
    organizationId: string,
    name: string | null,
  ): Promise<{ tokenId: string; token: string }> {
    for (;;) {
      const token = generateToken();
      const tokenId = await this.storeToken(organizationId, token, name);
      if (tokenId) return { tokenId, token };
    }
  }

  /** Resolves an `x-api-token` header to its organization; 401 for anything else. */
  async authenticate(presented: string | undefined): Promise<Principal> {
    if (!presented) {
      throw new ApiError("unauthorized", "Missing API token: send it in the x-api-token header.");
    }
    const digest = hashToken(presented);
    const owner: TokenOwner | undefined = await this.store.findActiveTokenOwner(digest);
    if (!owner || !digestsEqual(owner.tokenHash, digest)) {
      throw new ApiError("unauthorized", "The API token is not valid or has been revoked.");
    }
    return {
      organizationId: owner.organizationId,
      organizationSlug: owner.organizationSlug,
      tokenId: owner.tokenId,
    };
  }

  private async requireOrganization(slug: string): Promise<Organization> {
    const organization = await this.store.findBySlug(slug);
    if (!organization) throw new OrganizationError(`No organization with slug "${slug}".`);
    return organization;
  }

  private async storeToken(
    organizationId: string,
    token: string,
    name: string | null,
  ): Promise<string | undefined> {
    const id = publicId("tok");
    const inserted = await this.store.insertToken({
      id,
      organizationId,
      name,
      tokenHash: hashToken(token),
      tokenHint: tokenHint(token),
      createdAt: this.clock.now(),
    });
    return inserted ? id : undefined;
  }
}
