import type { Kysely, Selectable } from "kysely";
import type {
  GitLabConnectionRecord,
  GitLabConnectionRecords,
} from "../../organizations/gitlab-connections.js";
import type { Database, GitlabConnectionsTable } from "../schema.js";

/** Organizations' GitLab connections (`gitlab_connections`), one per organization. */
export class GitLabConnectionStore implements GitLabConnectionRecords {
  constructor(private readonly db: Kysely<Database>) {}

  async put(record: GitLabConnectionRecord): Promise<void> {
    const row = { ...record, scopes: JSON.stringify(record.scopes) };
    const changed = {
      hookKey: row.hookKey,
      instanceUrl: row.instanceUrl,
      token: row.token,
      userId: row.userId,
      username: row.username,
      scopes: row.scopes,
      expiresAt: row.expiresAt,
      webhookSecret: row.webhookSecret,
      updatedAt: row.updatedAt,
    };
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
}

function toRecord(row: Selectable<GitlabConnectionsTable>): GitLabConnectionRecord {
  return { ...row, scopes: JSON.parse(row.scopes) as string[] };
}
