import type { Kysely } from "kysely";
import { precompile, type PrecompiledQuery } from "../precompiled.js";
import type { Database } from "../schema.js";
import type {
  NewSession,
  SessionEndReason,
  SessionListing,
  SessionRecords,
  StoredSession,
} from "../../organizations/sessions.js";

const LISTING_COLUMNS = [
  "webSessions.id",
  "webSessions.organizationId",
  "webSessions.tokenId",
  "webSessions.createdAt",
  "webSessions.lastSeenAt",
  "webSessions.expiresAt",
  "webSessions.revokedAt",
  "webSessions.revokedReason",
  "webSessions.githubUserId",
  "webSessions.githubLogin",
  "webSessions.githubInstallationId",
  "apiTokens.name as tokenName",
  "apiTokens.revokedAt as tokenRevokedAt",
  "githubInstallations.organizationId as installationOrganizationId",
] as const;

/**
 * The dashboard's sessions. Part of the tokens' aggregate: a session is deleted with its token and
 * ends when the token is revoked (the lookup joins the token). A GitHub session has no token: the
 * lookup joins its installation instead (while GitHub has it: not deleted), whose link it depends
 * on.
 */
export class SessionStore implements SessionRecords {
  private readonly byHash: PrecompiledQuery<[idHash: string], StoredSession>;

  constructor(private readonly db: Kysely<Database>) {
    // Every page view looks its session up: compiled once.
    this.byHash = precompile(
      db,
      (idHash: string) =>
        db
          .selectFrom("webSessions")
          .leftJoin("apiTokens", "apiTokens.id", "webSessions.tokenId")
          .leftJoin("githubInstallations", (join) =>
            join
              .onRef("githubInstallations.id", "=", "webSessions.githubInstallationId")
              .on("githubInstallations.deletedAt", "is", null),
          )
          .innerJoin("organizations", "organizations.id", "webSessions.organizationId")
          .select([
            "webSessions.id",
            "webSessions.idHash",
            "webSessions.organizationId",
            "webSessions.tokenId",
            "webSessions.createdAt",
            "webSessions.lastSeenAt",
            "webSessions.expiresAt",
            "webSessions.revokedAt",
            "webSessions.revokedReason",
            "webSessions.githubUserId",
            "webSessions.githubLogin",
            "webSessions.githubInstallationId",
            "organizations.slug as organizationSlug",
            "apiTokens.revokedAt as tokenRevokedAt",
            "githubInstallations.organizationId as installationOrganizationId",
          ])
          .where("webSessions.idHash", "=", idHash)
          .compile(),
      ["$idHash"],
    );
  }

  async insertSession(session: NewSession): Promise<void> {
    await this.db
      .insertInto("webSessions")
      .values({ ...session, revokedAt: null, revokedReason: null })
      .execute();
  }

  async findSessionByHash(idHash: string): Promise<StoredSession | undefined> {
    const [row] = await this.byHash(idHash);
    return row;
  }

  async touchSession(id: string, at: number): Promise<void> {
    await this.db
      .updateTable("webSessions")
      .set({ lastSeenAt: at })
      .where("id", "=", id)
      .where("lastSeenAt", "<", at)
      .execute();
  }

  async revokeSession(id: string, at: number, reason: SessionEndReason): Promise<boolean> {
    const result = await this.db
      .updateTable("webSessions")
      .set({ revokedAt: at, revokedReason: reason })
      .where("id", "=", id)
      .where("revokedAt", "is", null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  listSessions(organizationId: string): Promise<SessionListing[]> {
    return this.db
      .selectFrom("webSessions")
      .leftJoin("apiTokens", "apiTokens.id", "webSessions.tokenId")
      .leftJoin("githubInstallations", (join) =>
        join
          .onRef("githubInstallations.id", "=", "webSessions.githubInstallationId")
          .on("githubInstallations.deletedAt", "is", null),
      )
      .select(LISTING_COLUMNS)
      .where("webSessions.organizationId", "=", organizationId)
      .orderBy("webSessions.createdAt", "desc")
      .orderBy("webSessions.id")
      .execute();
  }

  findSession(id: string): Promise<SessionListing | undefined> {
    return this.db
      .selectFrom("webSessions")
      .leftJoin("apiTokens", "apiTokens.id", "webSessions.tokenId")
      .leftJoin("githubInstallations", (join) =>
        join
          .onRef("githubInstallations.id", "=", "webSessions.githubInstallationId")
          .on("githubInstallations.deletedAt", "is", null),
      )
      .select(LISTING_COLUMNS)
      .where("webSessions.id", "=", id)
      .executeTakeFirst();
  }
}
