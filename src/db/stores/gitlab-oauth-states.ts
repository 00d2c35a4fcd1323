import type { Kysely } from "kysely";
import type {
  GitLabOAuthState,
  GitLabOAuthStates,
} from "../../organizations/gitlab-connections.js";
import type { Database } from "../schema.js";

/** OAuth authorizations under way (`gitlab_oauth_states`). */
export class GitLabOAuthStateStore implements GitLabOAuthStates {
  constructor(private readonly db: Kysely<Database>) {}

  async put(state: GitLabOAuthState, now: number): Promise<void> {
    await this.db.deleteFrom("gitlabOauthStates").where("expiresAt", "<", now).execute();
    await this.db.insertInto("gitlabOauthStates").values(state).execute();
  }

  async take(stateHash: string, now: number): Promise<GitLabOAuthState | undefined> {
    const row = await this.db
      .deleteFrom("gitlabOauthStates")
      .where("stateHash", "=", stateHash)
      .returningAll()
      .executeTakeFirst();
    return row && row.expiresAt >= now ? row : undefined;
  }
}
