import { GitLabOAuthStateStore } from "../../../../src/db/stores/gitlab-oauth-states.js";
import { NOW, ORG } from "./fixtures.js";
import { scenario } from "./types.js";

/**
 * The calls of `GitLabOAuthStateStore` (`src/db/stores/gitlab-oauth-states.ts`) whose SQL is
 * recorded into `src/db/queries/gitlab-oauth-states.{sqlite,postgres}.sql`.
 */

const STATE = {
  stateHash: "state-hash",
  organizationId: ORG,
  codeVerifier: "verifier",
  redirectUri: "https://mainline.example.com/gitlab/oauth/callback",
  expiresAt: NOW + 600_000,
  createdAt: NOW,
};

export const gitlabOAuthStatesScenario = scenario({
  file: "gitlab-oauth-states",
  name: "GitLabOAuthStateStore",
  create: (handle) => new GitLabOAuthStateStore(handle.db),
  calls: [
    { method: "put", run: (s) => s.put(STATE, NOW) },
    { method: "take", answer: () => [STATE], run: (s) => s.take("state-hash", NOW) },
  ],
});
