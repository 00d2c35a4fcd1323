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
};

export const gitlabConnectionsScenario = scenario({
  file: "gitlab-connections",
  name: "GitLabConnectionStore",
  create: (handle) => new GitLabConnectionStore(handle.db),
  calls: [
    {
      method: "put",
      run: (s) => s.put({ ...ROW, scopes: ["api", "write_repository"] }),
    },
    { method: "get", answer: () => [ROW], run: (s) => s.get(ORG) },
    { method: "byHookKey", answer: () => [ROW], run: (s) => s.byHookKey("hook-key") },
    { method: "remove", run: (s) => s.remove(ORG) },
  ],
});
