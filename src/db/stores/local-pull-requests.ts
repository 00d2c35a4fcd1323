import type { Kysely, Selectable } from "kysely";
import type {
  LocalPullRequestRecord,
  LocalPullRequestStorage,
  LocalPullRequestState,
  OpenPullRequest,
} from "../../mergequeue/local-pull-request-records.js";
import { compileTemplate, type QueryTemplate } from "../precompiled.js";
import type { Database, LocalPullRequestsTable } from "../schema.js";
import { RepositoryStore } from "./repositories.js";
import { type OwnedRepoRef } from "../../organizations/repositories.js";

/** Attempts at taking the next number when concurrent opens race for it. */
const NUMBER_ATTEMPTS = 20;

function toRecord(row: Selectable<LocalPullRequestsTable>): LocalPullRequestRecord {
  return { ...row, state: row.state as LocalPullRequestState };
}

/**
 * Pull requests of local repositories, numbered 1, 2, … per repository. The git host's view finds
 * the repository by its organization and host/owner/name (two organizations may each have one
 * with the same name).
 */
export class LocalPullRequestStore implements LocalPullRequestStorage {
  private readonly repositories: RepositoryStore;
  /** `get`, on every submission of a local pull request: compiled once. */
  private readonly byNumber: QueryTemplate<Selectable<LocalPullRequestsTable>>;

  constructor(private readonly db: Kysely<Database>) {
    this.repositories = new RepositoryStore(db);
    this.byNumber = compileTemplate(2, (args) =>
      db
        .selectFrom("localPullRequests")
        .selectAll()
        .where("repositoryId", "=", args[0] as string)
        .where("number", "=", args[1] as unknown as number)
        .compile(),
    );
  }

  /** Opens a pull request with the repository's next number. */
  async open(input: OpenPullRequest): Promise<LocalPullRequestRecord> {
    for (let attempt = 0; attempt < NUMBER_ATTEMPTS; attempt++) {
      const last = await this.db
        .selectFrom("localPullRequests")
        .select((eb) => eb.fn.max<number | string | null>("number").as("number"))
        .where("repositoryId", "=", input.repositoryId)
        .executeTakeFirst();
      const record: LocalPullRequestRecord = {
        repositoryId: input.repositoryId,
        number: Number(last?.number ?? 0) + 1,
        headBranch: input.headBranch,
        baseBranch: input.baseBranch,
        title: input.title,
        author: input.author,
        description: input.description ?? "",
        state: "open",
        mergingSha: null,
        mergedSha: null,
        createdAt: input.now,
        closedAt: null,
      };
      const inserted = await this.db
        .insertInto("localPullRequests")
        .values(record)
        .onConflict((oc) => oc.columns(["repositoryId", "number"]).doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return record;
    }
    throw new Error(`could not number a pull request in repository ${input.repositoryId}`);
  }

  /** Closes an open pull request; a closed or merged one is returned as it is. */
  async close(
    repositoryId: string,
    number: number,
    now: number,
  ): Promise<LocalPullRequestRecord | undefined> {
    await this.db
      .updateTable("localPullRequests")
      .set({ state: "closed", closedAt: now })
      .where("repositoryId", "=", repositoryId)
      .where("number", "=", number)
      .where("state", "=", "open")
      .execute();
    return this.get(repositoryId, number);
  }

  async get(repositoryId: string, number: number): Promise<LocalPullRequestRecord | undefined> {
    const [row] = await this.byNumber.run(this.db, [repositoryId, number]);
    return row ? toRecord(row) : undefined;
  }

  /** A repository's pull requests, newest first, optionally in one state. */
  async list(
    repositoryId: string,
    state?: LocalPullRequestState,
  ): Promise<LocalPullRequestRecord[]> {
    let query = this.db
      .selectFrom("localPullRequests")
      .selectAll()
      .where("repositoryId", "=", repositoryId);
    if (state) query = query.where("state", "=", state);
    const rows = await query.orderBy("number", "desc").execute();
    return rows.map(toRecord);
  }

  // ---- LocalPullRequestRecords (the git host's view) -------------------------------------------

  async find(repo: OwnedRepoRef, number: number): Promise<LocalPullRequestRecord | undefined> {
    const id = await this.repositoryId(repo);
    return id === undefined ? undefined : this.get(id, number);
  }

  async listOpen(repo: OwnedRepoRef): Promise<LocalPullRequestRecord[]> {
    const id = await this.repositoryId(repo);
    return id === undefined ? [] : this.list(id, "open");
  }

  async listMerged(repo: OwnedRepoRef): Promise<LocalPullRequestRecord[]> {
    const id = await this.repositoryId(repo);
    return id === undefined ? [] : this.list(id, "merged");
  }

  async markMerging(repo: OwnedRepoRef, number: number, sha: string): Promise<void> {
    await this.setWhere(repo, number, { mergingSha: sha });
  }

  async markMerged(repo: OwnedRepoRef, number: number, sha: string, now: number): Promise<void> {
    await this.setWhere(repo, number, { state: "merged", mergedSha: sha, closedAt: now });
  }

  private async setWhere(
    repo: OwnedRepoRef,
    number: number,
    values: Partial<LocalPullRequestsTable>,
  ): Promise<void> {
    const id = await this.repositoryId(repo);
    if (id === undefined) {
      throw new Error(
        `no local repository ${repo.owner}/${repo.name} in organization ${repo.organizationId}`,
      );
    }
    await this.db
      .updateTable("localPullRequests")
      .set(values)
      .where("repositoryId", "=", id)
      .where("number", "=", number)
      .execute();
  }

  private async repositoryId(repo: OwnedRepoRef): Promise<string | undefined> {
    return (await this.repositories.find(repo.organizationId, repo))?.id;
  }
}
