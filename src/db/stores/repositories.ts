import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "../schema.js";
import { cachedLookup, lookupsChanged } from "../lookup-cache.js";

import {
  repositoryLookupKey,
  type RepoRef,
  type Repository,
} from "../../organizations/repositories.js";
import type { RepositoryRecords } from "../../testhealth/ports.js";

const COLUMNS = ["id", "organizationId", "host", "owner", "name", "createdAt"] as const;

/** Repositories of an organization, looked up case-insensitively by host/owner/name. */
export class RepositoryStore implements RepositoryRecords {
  constructor(private readonly db: Kysely<Database>) {}

  /** Cached: most requests name a repository. */
  async find(organizationId: string, ref: RepoRef): Promise<Repository | undefined> {
    const lookupKey = repositoryLookupKey(ref);
    const found = await cachedLookup(
      this.db,
      "repository",
      `${organizationId}\u0000${lookupKey}`,
      () =>
        this.db
          .selectFrom("repositories")
          .select(COLUMNS)
          .where("organizationId", "=", organizationId)
          .where("lookupKey", "=", lookupKey)
          .executeTakeFirst(),
    );
    return found && { ...found };
  }

  /**
   * The oldest repository with this host/owner/name in any organization. Only for upgrading the
   * old layout of local repositories, where one directory served every organization and
   * belonged to whichever created it first; requests always look up within an organization.
   */
  oldestAnywhere(ref: RepoRef): Promise<Repository | undefined> {
    return this.db
      .selectFrom("repositories")
      .select(COLUMNS)
      .where("lookupKey", "=", repositoryLookupKey(ref))
      .orderBy("createdAt")
      .orderBy("id")
      .executeTakeFirst();
  }

  async findById(id: string): Promise<Repository | undefined> {
    const found = await cachedLookup(this.db, "repositoryById", id, () =>
      this.db.selectFrom("repositories").select(COLUMNS).where("id", "=", id).executeTakeFirst(),
    );
    return found && { ...found };
  }

  /** Returns the repository, creating it with the given spelling if it is new. */
  async ensure(organizationId: string, ref: RepoRef, now: number): Promise<Repository> {
    const existing = await this.find(organizationId, ref);
    if (existing) return existing;
    const inserted = await this.db
      .insertInto("repositories")
      .values({
        id: randomUUID(),
        organizationId,
        host: ref.host,
        owner: ref.owner,
        name: ref.name,
        lookupKey: repositoryLookupKey(ref),
        createdAt: now,
        publicId: null,
      })
      .onConflict((oc) => oc.columns(["organizationId", "lookupKey"]).doNothing())
      .returning(COLUMNS)
      .executeTakeFirst();
    if (inserted) lookupsChanged(this.db);
    if (inserted) return inserted;
    // Another request created it between our read and our insert.
    const raced = await this.find(organizationId, ref);
    if (!raced) throw new Error("repository vanished while being created");
    return raced;
  }

  /** The repository's public id, null until one is given. */
  async publicId(repositoryId: string): Promise<string | null> {
    const row = await this.db
      .selectFrom("repositories")
      .select("publicId")
      .where("id", "=", repositoryId)
      .executeTakeFirst();
    return row?.publicId ?? null;
  }

  /**
   * Gives the repository `candidate` as its public id unless it has one (or, with `replace`,
   * always); answers the id it has afterwards.
   */
  async setPublicId(repositoryId: string, candidate: string, replace: boolean): Promise<string> {
    let update = this.db
      .updateTable("repositories")
      .set({ publicId: candidate })
      .where("id", "=", repositoryId);
    if (!replace) update = update.where("publicId", "is", null);
    await update.execute();
    lookupsChanged(this.db);
    const current = await this.publicId(repositoryId);
    if (current === null) throw new Error(`repository ${repositoryId} vanished`);
    return current;
  }

  /** The repository a public id belongs to, in whichever organization. */
  findByPublicId(publicId: string): Promise<Repository | undefined> {
    return this.db
      .selectFrom("repositories")
      .select(COLUMNS)
      .where("publicId", "=", publicId)
      .executeTakeFirst();
  }
}
