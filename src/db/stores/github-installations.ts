import { randomUUID } from "node:crypto";
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import type { DialectName } from "../connection.js";
import { sqlDialect } from "../dialect.js";
import type { Database, GithubInstallationsTable, GithubRepositoriesTable } from "../schema.js";
import {
  diffRepositories,
  type GitHubInstallationFacts,
  type GitHubInstallationRecord,
  type GitHubInstallationRecords,
  type GitHubRepositoryFacts,
  type GitHubRepositoryRecord,
  type RepositorySyncOutcome,
  type ResolvedGitHubRepository,
} from "../../organizations/github-installations.js";
import { repositoryLookupKey, type OwnedRepoRef } from "../../organizations/repositories.js";
import { lookupsChanged } from "../lookup-cache.js";

type Db = Kysely<Database> | Transaction<Database>;

function toInstallation(row: Selectable<GithubInstallationsTable>): GitHubInstallationRecord {
  return { ...row };
}

function toRepository(row: Selectable<GithubRepositoriesTable>): GitHubRepositoryRecord {
  return { ...row };
}

/**
 * GitHub App installations, their link to an organization, and the repositories they grant. A sync
 * of an installation's repositories is one transaction, serialized per installation, that also
 * keeps the organization's `repositories` rows in step: added ones are created (or found, when
 * uploads made them first), renamed ones renamed, removed ones left with their data.
 */
export class GitHubInstallationStore implements GitHubInstallationRecords {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  async find(installationId: number, db: Db = this.db) {
    const row = await db
      .selectFrom("githubInstallations")
      .selectAll()
      .where("id", "=", installationId)
      .executeTakeFirst();
    return row ? toInstallation(row) : undefined;
  }

  async list(): Promise<GitHubInstallationRecord[]> {
    const rows = await this.db
      .selectFrom("githubInstallations")
      .selectAll()
      .orderBy("id")
      .execute();
    return rows.map(toInstallation);
  }

  async listForOrganization(organizationId: string): Promise<GitHubInstallationRecord[]> {
    const rows = await this.db
      .selectFrom("githubInstallations")
      .selectAll()
      .where("organizationId", "=", organizationId)
      .orderBy("id")
      .execute();
    return rows.map(toInstallation);
  }

  async upsert(facts: GitHubInstallationFacts, now: number): Promise<GitHubInstallationRecord> {
    const row = await this.db
      .insertInto("githubInstallations")
      .values({
        ...facts,
        organizationId: null,
        linkedAt: null,
        deletedAt: null,
        syncedAt: null,
        createdAt: now,
        updatedAt: now,
      })
      .onConflict((oc) =>
        oc.column("id").doUpdateSet({
          accountId: facts.accountId,
          accountLogin: facts.accountLogin,
          accountType: facts.accountType,
          repositorySelection: facts.repositorySelection,
          suspendedAt: facts.suspendedAt,
          deletedAt: null,
          updatedAt: now,
        }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
    return toInstallation(row);
  }

  async markDeleted(installationId: number, now: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable("githubInstallations")
        .set({ deletedAt: now, updatedAt: now })
        .where("id", "=", installationId)
        .where("deletedAt", "is", null)
        .execute();
      await trx
        .updateTable("githubRepositories")
        .set({ removedAt: now, updatedAt: now })
        .where("installationId", "=", installationId)
        .where("removedAt", "is", null)
        .execute();
    });
  }

  async link(
    installationId: number,
    organizationId: string,
    now: number,
  ): Promise<
    { outcome: "linked" | "unchanged" } | { outcome: "elsewhere"; organizationId: string }
  > {
    const updated = await this.db
      .updateTable("githubInstallations")
      .set({ organizationId, linkedAt: now, updatedAt: now })
      .where("id", "=", installationId)
      .where("organizationId", "is", null)
      .executeTakeFirst();
    if (updated.numUpdatedRows > 0n) return { outcome: "linked" };
    const current = await this.find(installationId);
    if (!current) throw new Error(`installation ${installationId} is not stored`);
    if (current.organizationId === organizationId) return { outcome: "unchanged" };
    if (current.organizationId === null) return this.link(installationId, organizationId, now);
    return { outcome: "elsewhere", organizationId: current.organizationId };
  }

  async unlink(installationId: number, organizationId: string, now: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable("githubInstallations")
        .set({ organizationId: null, linkedAt: null, updatedAt: now })
        .where("id", "=", installationId)
        .where("organizationId", "=", organizationId)
        .executeTakeFirst();
      if (updated.numUpdatedRows === 0n) return false;
      // Its repositories stop being the organization's; their rows (and data) stay.
      await trx
        .updateTable("githubRepositories")
        .set({ organizationId: null, repositoryId: null, updatedAt: now })
        .where("installationId", "=", installationId)
        .execute();
      return true;
    });
  }

  async syncRepositories(
    installationId: number,
    listed: readonly GitHubRepositoryFacts[],
    host: string,
    now: number,
  ): Promise<RepositorySyncOutcome> {
    try {
      return await this.syncRepositoriesInTransaction(installationId, listed, host, now);
    } finally {
      // Repositories may have been created or renamed: the lookup cache forgets them.
      lookupsChanged(this.db);
    }
  }

  private syncRepositoriesInTransaction(
    installationId: number,
    listed: readonly GitHubRepositoryFacts[],
    host: string,
    now: number,
  ): Promise<RepositorySyncOutcome> {
    return this.db.transaction().execute(async (trx) => {
      await sqlDialect(this.dialect).lockKey(trx, `github-installation:${installationId}`);
      const installation = await this.find(installationId, trx);
      if (!installation) throw new Error(`installation ${installationId} is not stored`);
      const stored = (
        await trx
          .selectFrom("githubRepositories")
          .selectAll()
          .where("installationId", "=", installationId)
          .execute()
      ).map(toRepository);
      const diff = diffRepositories(stored, listed);
      const organizationId = installation.deletedAt === null ? installation.organizationId : null;
      const storedById = new Map(stored.map((row) => [row.githubId, row]));
      for (const repo of listed) {
        const kept = storedById.get(repo.githubId);
        const unchanged =
          kept !== undefined &&
          kept.removedAt === null &&
          kept.owner === repo.owner &&
          kept.name === repo.name &&
          kept.organizationId === organizationId &&
          (organizationId === null) === (kept.repositoryId === null);
        // Most syncs change nothing: those repositories cost no statement.
        if (unchanged) continue;
        const previous =
          storedById.get(repo.githubId) ??
          // Another installation had it (a transfer): it is this one's now.
          (await trx
            .selectFrom("githubRepositories")
            .selectAll()
            .where("githubId", "=", repo.githubId)
            .executeTakeFirst()
            .then((row) => (row ? toRepository(row) : undefined)));
        const repositoryId =
          organizationId === null
            ? null
            : await this.organizationRepository(trx, organizationId, host, repo, previous, now);
        const granted = {
          installationId,
          owner: repo.owner,
          name: repo.name,
          organizationId,
          repositoryId,
          removedAt: null,
          updatedAt: now,
        };
        await trx
          .insertInto("githubRepositories")
          .values({ githubId: repo.githubId, ...granted })
          .onConflict((oc) => oc.column("githubId").doUpdateSet(granted))
          .execute();
      }
      if (diff.removed.length > 0) {
        await trx
          .updateTable("githubRepositories")
          .set({ removedAt: now, updatedAt: now })
          .where("installationId", "=", installationId)
          .where(
            "githubId",
            "in",
            diff.removed.map((row) => row.githubId),
          )
          .execute();
      }
      await trx
        .updateTable("githubInstallations")
        .set({ syncedAt: now })
        .where("id", "=", installationId)
        .execute();
      const facts = (row: GitHubRepositoryFacts) => ({
        githubId: row.githubId,
        owner: row.owner,
        name: row.name,
      });
      return {
        added: [...diff.added, ...diff.restored.map((r) => r.listed)].map(facts),
        renamed: diff.renamed.map(({ stored: from, listed: to }) => ({
          from: { owner: from.owner, name: from.name },
          to: facts(to),
        })),
        removed: diff.removed.map(facts),
      };
    });
  }

  /**
   * The organization's repository row that a GitHub repository is. A repository that was this
   * organization's under another name (renamed or transferred on GitHub) keeps its row, renamed,
   * so its queues and history follow it; unless the organization already has a row of the new
   * name (uploads made it), which it then becomes (the old row keeps its data).
   */
  private async organizationRepository(
    trx: Transaction<Database>,
    organizationId: string,
    host: string,
    repo: GitHubRepositoryFacts,
    previous: GitHubRepositoryRecord | undefined,
    now: number,
  ): Promise<string> {
    const ref = { host, owner: repo.owner, name: repo.name };
    const lookupKey = repositoryLookupKey(ref);
    const existing = await trx
      .selectFrom("repositories")
      .select(["id", "owner", "name"])
      .where("organizationId", "=", organizationId)
      .where("lookupKey", "=", lookupKey)
      .executeTakeFirst();
    const before =
      previous?.repositoryId && previous.organizationId === organizationId
        ? previous.repositoryId
        : null;
    if (existing) {
      if (existing.owner !== repo.owner || existing.name !== repo.name) {
        // The same repository, spelled differently on GitHub now: take GitHub's spelling.
        await trx
          .updateTable("repositories")
          .set({ owner: repo.owner, name: repo.name })
          .where("id", "=", existing.id)
          .execute();
      }
      return existing.id;
    }
    if (before !== null) {
      const renamed = await trx
        .updateTable("repositories")
        .set({ owner: repo.owner, name: repo.name, lookupKey })
        .where("id", "=", before)
        .where("organizationId", "=", organizationId)
        .executeTakeFirst();
      if (renamed.numUpdatedRows > 0n) return before;
    }
    const id = randomUUID();
    await trx
      .insertInto("repositories")
      .values({
        id,
        organizationId,
        host,
        owner: repo.owner,
        name: repo.name,
        lookupKey,
        createdAt: now,
        publicId: null,
      })
      .execute();
    return id;
  }

  async repositories(installationId: number): Promise<GitHubRepositoryRecord[]> {
    const rows = await this.db
      .selectFrom("githubRepositories")
      .selectAll()
      .where("installationId", "=", installationId)
      .orderBy("owner")
      .orderBy("name")
      .execute();
    return rows.map(toRepository);
  }

  async findRepository(githubId: number): Promise<GitHubRepositoryRecord | undefined> {
    const row = await this.db
      .selectFrom("githubRepositories")
      .selectAll()
      .where("githubId", "=", githubId)
      .executeTakeFirst();
    return row ? toRepository(row) : undefined;
  }

  async resolve(repo: OwnedRepoRef): Promise<ResolvedGitHubRepository | undefined> {
    const row = await this.db
      .selectFrom("repositories as r")
      .innerJoin("githubRepositories as g", (join) =>
        join
          .onRef("g.repositoryId", "=", "r.id")
          .onRef("g.organizationId", "=", "r.organizationId"),
      )
      .innerJoin("githubInstallations as i", "i.id", "g.installationId")
      .select([
        "g.githubId",
        "g.installationId",
        "g.owner",
        "g.name",
        "g.organizationId",
        "g.repositoryId",
        "g.removedAt",
        "g.updatedAt",
      ])
      .where("r.organizationId", "=", repo.organizationId)
      .where("r.lookupKey", "=", repositoryLookupKey(repo))
      // Only through an installation linked to this very organization.
      .where("i.organizationId", "=", repo.organizationId)
      // A grant in force before any that was removed (a repository deleted and made anew).
      .orderBy(sql`g.removed_at is null`, "desc")
      .orderBy("g.updatedAt", "desc")
      .executeTakeFirst();
    if (!row) return undefined;
    const installation = await this.find(row.installationId);
    if (!installation) return undefined;
    return { installation, repository: toRepository(row) };
  }
}
