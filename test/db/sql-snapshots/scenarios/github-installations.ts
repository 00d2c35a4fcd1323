import { GitHubInstallationStore } from "../../../../src/db/stores/github-installations.js";
import { NOW, ORG, REPO_ID, OWNED_REPO } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `GitHubInstallationStore` (`src/db/stores/github-installations.ts`) whose SQL is
 * recorded into `src/db/queries/github-installations.{sqlite,postgres}.sql`; a method added to the
 * store gets a call here.
 */

const INSTALLATION_ROW = {
  id: 42,
  account_id: 7,
  account_login: "acme",
  account_type: "Organization",
  repository_selection: "selected",
  organization_id: ORG,
  linked_at: NOW,
  suspended_at: null,
  deleted_at: null,
  synced_at: null,
  created_at: NOW,
  updated_at: NOW,
};
const GITHUB_REPOSITORY_ROW = (githubId: number, name: string) => ({
  github_id: githubId,
  installation_id: 42,
  owner: "acme",
  name,
  organization_id: ORG,
  repository_id: REPO_ID,
  removed_at: null,
  updated_at: NOW,
});

export const githubInstallationsScenario = scenario({
  file: "github-installations",
  name: "GitHubInstallationStore",
  create: (handle) => new GitHubInstallationStore(handle.db, handle.dialect),
  calls: [
    { method: "find", run: (s) => s.find(42) },
    { method: "list", run: (s) => s.list() },
    { method: "listForOrganization", run: (s) => s.listForOrganization(ORG) },
    {
      method: "upsert",
      answer: when([/github_installations/, [INSTALLATION_ROW]]),
      run: (s) =>
        s.upsert(
          {
            id: 42,
            accountId: 7,
            accountLogin: "acme",
            accountType: "Organization",
            repositorySelection: "selected",
            suspendedAt: null,
          },
          NOW,
        ),
    },
    { method: "markDeleted", run: (s) => s.markDeleted(42, NOW) },
    { method: "link", run: (s) => s.link(42, ORG, NOW) },
    { method: "unlink", run: (s) => s.unlink(42, ORG, NOW) },
    {
      method: "syncRepositories",
      variant: "one renamed, one new, one removed",
      answer: when(
        [/from "github_installations"/, [INSTALLATION_ROW]],
        [
          /from "github_repositories" where "installation_id"/,
          [GITHUB_REPOSITORY_ROW(1, "old-name"), GITHUB_REPOSITORY_ROW(3, "gone")],
        ],
      ),
      run: (s) =>
        s.syncRepositories(
          42,
          [
            { githubId: 1, owner: "acme", name: "new-name" },
            { githubId: 2, owner: "acme", name: "fresh" },
          ],
          "github.com",
          NOW,
        ),
    },
    { method: "repositories", run: (s) => s.repositories(42) },
    { method: "findRepository", run: (s) => s.findRepository(1) },
    {
      method: "resolve",
      answer: when(
        [/from "repositories"/, [GITHUB_REPOSITORY_ROW(1, "widgets")]],
        [/from "github_installations"/, [INSTALLATION_ROW]],
      ),
      run: (s) => s.resolve({ ...OWNED_REPO, host: "github.com" }),
    },
  ],
});
