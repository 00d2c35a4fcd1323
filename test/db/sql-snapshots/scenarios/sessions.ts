import { SessionStore } from "../../../../src/db/stores/sessions.js";
import { NOW, DAY, ORG } from "./fixtures.js";
import { scenario } from "./types.js";

/**
 * The calls of `SessionStore` (`src/db/stores/sessions.ts`) whose SQL is recorded into
 * `src/db/queries/sessions.{sqlite,postgres}.sql`; a method added to the store gets a call here.
 */

export const sessionsScenario = scenario({
  file: "sessions",
  name: "SessionStore",
  create: (handle) => new SessionStore(handle.db),
  calls: [
    {
      method: "insertSession",
      run: (s) =>
        s.insertSession({
          id: "ses_1",
          idHash: "hash",
          organizationId: ORG,
          tokenId: "token-1",
          githubUserId: null,
          githubLogin: null,
          githubInstallationId: null,
          createdAt: NOW,
          lastSeenAt: NOW,
          expiresAt: NOW + 7 * DAY,
        }),
    },
    { method: "findSessionByHash", run: (s) => s.findSessionByHash("hash") },
    { method: "touchSession", run: (s) => s.touchSession("ses_1", NOW) },
    { method: "revokeSession", run: (s) => s.revokeSession("ses_1", NOW, "signed_out") },
    { method: "listSessions", run: (s) => s.listSessions(ORG) },
    { method: "findSession", run: (s) => s.findSession("ses_1") },
  ],
});
