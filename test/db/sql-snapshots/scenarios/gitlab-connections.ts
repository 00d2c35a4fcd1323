import { GitLabConnectionStore } from "../../../../src/db/stores/gitlab-connections.js";
import { NOW, ORG } from "./fixtures.js";
import { scenario } from "./types.js";

/**
 * The calls of `GitLabConnectionStore` (`src/db/stores/gitlab-connections.ts`) whose SQL is
 * recorded into `src/db/queries/gitlab-connections.{sqlite,postgres}.sql`.
 */

const ROW = {
  organizationId: ORG,
  hookKey: "hook-key",
  instanceUrl: "https://gitlab.example.com",
  token: "glpat-token",
  userId: 7,
  username: "mainline-bot",
  scopes: '["api","write_repository"]',
  expiresAt: null,
  webhookSecret: "secret",
  createdAt: NOW,
  updatedAt: NOW,
  method: "oauth",
  refreshToken: "refresh",
  redirectUri: "https://mainline.example.com/gitlab/oauth/callback",
  issuedAt: NOW,
  refreshLeaseUntil: null,
  problem: null,
};

const RECORD = {
  ...ROW,
  method: "oauth" as const,
  scopes: ["api", "write_repository"],
  oauth: { refreshToken: "refresh", redirectUri: ROW.redirectUri, issuedAt: NOW },
};

export const gitlabConnectionsScenario = scenario({
  file: "gitlab-connections",
  name: "GitLabConnectionStore",
  create: (handle) => new GitLabConnectionStore(handle.db),
  calls: [
    {
      method: "put",
      run: (s) => s.put(RECORD),
    },
    { method: "get", answer: () => [ROW], run: (s) => s.get(ORG) },
    { method: "byHookKey", answer: () => [ROW], run: (s) => s.byHookKey("hook-key") },
    { method: "remove", run: (s) => s.remove(ORG) },
    { method: "claimRefresh", run: (s) => s.claimRefresh(ORG, "refresh", NOW, NOW + 120_000) },
    {
      method: "renewed",
      run: (s) =>
        s.renewed(
          ORG,
          "refresh",
          { token: "t2", refreshToken: "r2", issuedAt: NOW, expiresAt: NOW, scopes: ["api"] },
          NOW,
        ),
    },
    { method: "releaseRefresh", run: (s) => s.releaseRefresh(ORG, "refresh") },
    { method: "markProblem", run: (s) => s.markProblem(ORG, "refresh", "revoked", NOW) },
  ],
});
