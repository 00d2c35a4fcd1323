import { LocalPullRequestStore } from "../../../../src/db/stores/local-pull-requests.js";
import { NOW, REPO_ID, OWNED_REPO, REPOSITORY_ROW } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `LocalPullRequestStore` (`src/db/stores/local-pull-requests.ts`) whose SQL is
 * recorded into `src/db/queries/local-pull-requests.{sqlite,postgres}.sql`; a method added to the
 * store gets a call here.
 */

export const localPullRequestsScenario = scenario({
  file: "local-pull-requests",
  name: "LocalPullRequestStore",
  create: (handle) => new LocalPullRequestStore(handle.db),
  calls: [
    {
      method: "open",
      run: (s) =>
        s.open({
          repositoryId: REPO_ID,
          headBranch: "feature",
          baseBranch: "main",
          title: "Add widgets",
          author: "ada",
          now: NOW,
        }),
    },
    { method: "close", run: (s) => s.close(REPO_ID, 7, NOW) },
    { method: "get", run: (s) => s.get(REPO_ID, 7) },
    { method: "list", variant: "every state", run: (s) => s.list(REPO_ID) },
    { method: "list", variant: "one state", run: (s) => s.list(REPO_ID, "open") },
    {
      method: "find",
      answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
      run: (s) => s.find(OWNED_REPO, 7),
    },
    {
      method: "listOpen",
      answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
      run: (s) => s.listOpen(OWNED_REPO),
    },
    {
      method: "listMerged",
      answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
      run: (s) => s.listMerged(OWNED_REPO),
    },
    {
      method: "markMerging",
      answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
      run: (s) => s.markMerging(OWNED_REPO, 7, "c".repeat(40)),
    },
    {
      method: "markMerged",
      answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
      run: (s) => s.markMerged(OWNED_REPO, 7, "c".repeat(40), NOW),
    },
  ],
});
