/**
 * Tenancy's records and the store port the organization service needs (src/db/stores implements
 * it; the composition root hands it in).
 */

export interface Organization {
  id: string;
  slug: string;
  createdAt: number;
}

export interface ApiTokenRecord {
  id: string;
  organizationId: string;
  name: string | null;
  tokenHint: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface NewApiToken {
  id: string;
  organizationId: string;
  name: string | null;
  tokenHash: string;
  tokenHint: string;
  createdAt: number;
}

/** The organization a presented token belongs to, if the token is known and not revoked. */
export interface TokenOwner {
  tokenId: string;
  tokenHash: string;
  organizationId: string;
  organizationSlug: string;
}

/** Organizations and their API tokens (one aggregate: a token never outlives its organization). */
export interface OrganizationRecords {
  ensure(org: Organization): Promise<{ organization: Organization; created: boolean }>;
  findBySlug(slug: string): Promise<Organization | undefined>;
  findById(id: string): Promise<Organization | undefined>;
  list(): Promise<Organization[]>;
  count(): Promise<number>;
  /** False when a token with this hash exists already (nothing is written then). */
  insertToken(token: NewApiToken): Promise<boolean>;
  findTokenByHash(tokenHash: string): Promise<ApiTokenRecord | undefined>;
  findActiveTokenOwner(tokenHash: string): Promise<TokenOwner | undefined>;
  listTokens(organizationId: string): Promise<ApiTokenRecord[]>;
  findToken(tokenId: string): Promise<ApiTokenRecord | undefined>;
  revokeToken(tokenId: string, now: number): Promise<boolean>;
  renameToken(tokenId: string, name: string | null): Promise<void>;
}
