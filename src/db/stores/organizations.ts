import type { Kysely } from "kysely";
import { cachedLookup, lookupsChanged } from "../lookup-cache.js";
import { precompile, type PrecompiledQuery } from "../precompiled.js";
import type { Database } from "../schema.js";
import type {
  ApiTokenRecord,
  NewApiToken,
  Organization,
  OrganizationRecords,
  TokenOwner,
} from "../../organizations/records.js";

/** Organizations and their API tokens (one aggregate: a token never outlives its organization). */
export class OrganizationStore implements OrganizationRecords {
  private readonly activeTokenOwner: PrecompiledQuery<[tokenHash: string], TokenOwner>;

  constructor(private readonly db: Kysely<Database>) {
    this.activeTokenOwner = precompile(
      db,
      (tokenHash: string) =>
        db
          .selectFrom("apiTokens")
          .innerJoin("organizations", "organizations.id", "apiTokens.organizationId")
          .select([
            "apiTokens.id as tokenId",
            "apiTokens.tokenHash as tokenHash",
            "organizations.id as organizationId",
            "organizations.slug as organizationSlug",
          ])
          .where("apiTokens.tokenHash", "=", tokenHash)
          .where("apiTokens.revokedAt", "is", null)
          .compile(),
      ["$tokenHash"],
    );
  }

  /** Inserts the organization unless one with this slug exists; returns the stored one. */
  async ensure(org: Organization): Promise<{ organization: Organization; created: boolean }> {
    const inserted = await this.db
      .insertInto("organizations")
      .values(org)
      .onConflict((oc) => oc.column("slug").doNothing())
      .returning(["id", "slug", "createdAt"])
      .executeTakeFirst();
    if (inserted) lookupsChanged(this.db);
    if (inserted) return { organization: inserted, created: true };
    const existing = await this.findBySlug(org.slug);
    if (!existing) throw new Error(`organization ${org.slug} vanished while being created`);
    return { organization: existing, created: false };
  }

  findBySlug(slug: string): Promise<Organization | undefined> {
    return this.db
      .selectFrom("organizations")
      .select(["id", "slug", "createdAt"])
      .where("slug", "=", slug)
      .executeTakeFirst();
  }

  list(): Promise<Organization[]> {
    return this.db
      .selectFrom("organizations")
      .select(["id", "slug", "createdAt"])
      .orderBy("slug")
      .execute();
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom("organizations")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    return row.n;
  }

  async insertToken(token: NewApiToken): Promise<boolean> {
    const inserted = await this.db
      .insertInto("apiTokens")
      .values({ ...token, revokedAt: null })
      .onConflict((oc) => oc.column("tokenHash").doNothing())
      .returning("id")
      .executeTakeFirst();
    if (inserted) lookupsChanged(this.db);
    return inserted !== undefined;
  }

  /** Any token with this hash, revoked or not (to detect a bootstrap token reused elsewhere). */
  findTokenByHash(tokenHash: string): Promise<ApiTokenRecord | undefined> {
    return this.db
      .selectFrom("apiTokens")
      .select(["id", "organizationId", "name", "tokenHint", "createdAt", "revokedAt"])
      .where("tokenHash", "=", tokenHash)
      .executeTakeFirst();
  }

  /**
   * Cached (a change to `organizations` anywhere forgets it): ingestion asks for the slug of every
   * upload's organization. Each caller gets a copy of its own.
   */
  async findById(id: string): Promise<Organization | undefined> {
    const found = await cachedLookup(this.db, "organizationById", id, () =>
      this.db.selectFrom("organizations").selectAll().where("id", "=", id).executeTakeFirst(),
    );
    return found && { ...found };
  }

  /** Every authenticated request starts here: cached, compiled once. */
  findActiveTokenOwner(tokenHash: string): Promise<TokenOwner | undefined> {
    return cachedLookup(this.db, "tokenOwner", tokenHash, async () => {
      const [owner] = await this.activeTokenOwner(tokenHash);
      return owner;
    });
  }

  listTokens(organizationId: string): Promise<ApiTokenRecord[]> {
    return this.db
      .selectFrom("apiTokens")
      .select(["id", "organizationId", "name", "tokenHint", "createdAt", "revokedAt"])
      .where("organizationId", "=", organizationId)
      .orderBy("createdAt")
      .orderBy("id")
      .execute();
  }

  findToken(tokenId: string): Promise<ApiTokenRecord | undefined> {
    return this.db
      .selectFrom("apiTokens")
      .select(["id", "organizationId", "name", "tokenHint", "createdAt", "revokedAt"])
      .where("id", "=", tokenId)
      .executeTakeFirst();
  }

  /** Revokes an active token; false when it does not exist or was already revoked. */
  async revokeToken(tokenId: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("apiTokens")
      .set({ revokedAt: now })
      .where("id", "=", tokenId)
      .where("revokedAt", "is", null)
      .executeTakeFirst();
    lookupsChanged(this.db);
    return result.numUpdatedRows > 0n;
  }

  async renameToken(tokenId: string, name: string | null): Promise<void> {
    await this.db.updateTable("apiTokens").set({ name }).where("id", "=", tokenId).execute();
  }
}
