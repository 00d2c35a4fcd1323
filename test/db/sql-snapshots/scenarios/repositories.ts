import { RepositoryStore } from "../../../../src/db/stores/repositories.js";
import { NOW, ORG, REPO_ID, REPO, REPOSITORY_ROW } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `RepositoryStore` (`src/db/stores/repositories.ts`) whose SQL is recorded into
 * `src/db/queries/repositories.{sqlite,postgres}.sql`; a method added to the store gets a call
 * here.
 */

export const repositoriesScenario = scenario({
  file: "repositories",
  name: "RepositoryStore",
  create: (handle) => new RepositoryStore(handle.db),
  calls: [
    { method: "find", run: (s) => s.find(ORG, REPO) },
    { method: "oldestAnywhere", run: (s) => s.oldestAnywhere(REPO) },
    { method: "findById", run: (s) => s.findById(REPO_ID) },
    {
      method: "ensure",
      variant: "created by another request meanwhile",
      answer: (_sql, index) => (index === 2 ? [REPOSITORY_ROW] : []),
      run: (s) => s.ensure(ORG, REPO, NOW),
    },
    { method: "publicId", run: (s) => s.publicId(REPO_ID) },
    {
      method: "setPublicId",
      variant: "unless it has one",
      answer: when([/^select/, [{ public_id: "pub-1" }]]),
      run: (s) => s.setPublicId(REPO_ID, "pub-1", false),
    },
    {
      method: "setPublicId",
      variant: "replacing it",
      answer: when([/^select/, [{ public_id: "pub-1" }]]),
      run: (s) => s.setPublicId(REPO_ID, "pub-1", true),
    },
    { method: "findByPublicId", run: (s) => s.findByPublicId("pub-1") },
  ],
});
