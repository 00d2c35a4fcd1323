import type { Kysely, Selectable } from "kysely";
import type {
  GitLabConnectionRecord,
  GitLabConnectionRecords,
  GitLabRenewal,
} from "../../organizations/gitlab-connections.js";
import type { Database, GitlabConnectionsTable } from "../schema.js";

/** Organizations' GitLab connections (`gitlab_connections`), one per organization. */
export class GitLabConnectionStore implements GitLabConnectionRecords {
  constructor(private readonly db: Kysely<Database>) {}

  async put(record: GitLabConnectionRecord): Promise<void> {
    const { oauth, scopes, ...rest } = record;
    const row = {
      ...rest,
      scopes: JSON.stringify(scopes),
      refreshToken: oauth?.refreshToken ?? null,
      redirectUri: oauth?.redirectUri ?? null,
      issuedAt: oauth?.issuedAt ?? null,
      refreshLeaseUntil: null,
    };
    const changed: Partial<typeof row> = { ...row };
    delete changed.organizationId;
    delete changed.createdAt;
    await this.db
      .insertInto("gitlabConnections")
      .values(row)
      .onConflict((oc) => oc.column("organizationId").doUpdateSet(changed))
      .execute();
  }

  async get(organizationId: string): Promise<GitLabConnectionRecord | undefined> {
    const row = await this.db
      .selectFrom("gitlabConnections")
      .selectAll()
      .where("organizationId", "=", organizationId)
      .executeTakeFirst();
    return row && toRecord(row);
  }

  async byHookKey(hookKey: string): Promise<GitLabConnectionRecord | undefined> {
    const row = await this.db
      .selectFrom("gitlabConnections")
      .selectAll()
      .where("hookKey", "=", hookKey)
      .executeTakeFirst();
    return row && toRecord(row);
  }

  async remove(organizationId: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom("gitlabConnections")
      .where("organizationId", "=", organizationId)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async claimRefresh(
    organizationId: string,
    refreshToken: string,
    now: number,
    until: number,
  ): Promise<boolean> {
    const result = await this.db
      .updateTable("gitlabConnections")
      .set({ refreshLeaseUntil: until })
      .where("organizationId", "=", organizationId)
      .where("refreshToken", "=", refreshToken)
      .where("problem", "is", null)
      .where((eb) =>
        eb.or([eb("refreshLeaseUntil", "is", null), eb("refreshLeaseUntil", "<", now)]),
      )
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async renewed(
    organizationId: string,
    previous: string,
    renewal: GitLabRenewal,
    now: number,
  ): Promise<boolean> {
    const result = await this.db
      .updateTable("gitlabConnections")
      .set({
        token: renewal.token,
        refreshToken: renewal.refreshToken,
        issuedAt: renewal.issuedAt,
        expiresAt: renewal.expiresAt,
        scopes: JSON.stringify(renewal.scopes),
        refreshLeaseUntil: null,
        updatedAt: now,
      })
      .where("organizationId", "=", organizationId)
      .where("refreshToken", "=", previous)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async releaseRefresh(organizationId: string, refreshToken: string): Promise<void> {
    await this.db
      .updateTable("gitlabConnections")
      .set({ refreshLeaseUntil: null })
      .where("organizationId", "=", organizationId)
      .where("refreshToken", "=", refreshToken)
      .execute();
  }

  async markProblem(
    organizationId: string,
    refreshToken: string,
    problem: string,
    now: number,
  ): Promise<void> {
    await this.db
      .updateTable("gitlabConnections")
      .set({ problem, refreshLeaseUntil: null, updatedAt: now })
      .where("organizationId", "=", organizationId)
      .where("refreshToken", "=", refreshToken)
      .execute();
  }
}

function toRecord(row: Selectable<GitlabConnectionsTable>): GitLabConnectionRecord {
  const { refreshToken, redirectUri, issuedAt, method } = row;
  return {
    organizationId: row.organizationId,
    hookKey: row.hookKey,
    instanceUrl: row.instanceUrl,
    token: row.token,
    userId: row.userId,
    username: row.username,
    expiresAt: row.expiresAt,
    webhookSecret: row.webhookSecret,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    problem: row.problem,
    method: method === "oauth" ? "oauth" : "token",
    scopes: JSON.parse(row.scopes) as string[],
    oauth:
      refreshToken === null || redirectUri === null
        ? null
        : { refreshToken, redirectUri, issuedAt: issuedAt ?? row.updatedAt },
  };
}
