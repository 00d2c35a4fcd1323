import { RepositoryTableStore } from "../../../../src/db/stores/repository-table.js";
import { NOW, REPO_ID } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `RepositoryTableStore` (`src/db/stores/repository-table.ts`) whose SQL is recorded
 * into `src/db/queries/repository-table.{sqlite,postgres}.sql`; a method added to the store gets a
 * call here.
 */

export const repositoryTableScenario = scenario({
  file: "repository-table",
  name: "RepositoryTableStore",
  create: (handle) => new RepositoryTableStore(handle),
  calls: [
    {
      method: "refreshFigures",
      variant: "some figures expired",
      answer: when([/^select/, [{ key: 1 }]]),
      run: (s) => s.refreshFigures(REPO_ID, NOW),
    },
    {
      method: "tablePage",
      variant: "by failure rate",
      run: (s) =>
        s.tablePage(
          REPO_ID,
          undefined,
          { quarantiningEnabled: true, autoQuarantine: true },
          "failure_rate",
          0,
          50,
        ),
    },
    {
      method: "tablePage",
      variant: "flaky, by impacted pull requests",
      run: (s) =>
        s.tablePage(
          REPO_ID,
          "flaky",
          { quarantiningEnabled: true, autoQuarantine: true },
          "prs_impacted",
          50,
          50,
        ),
    },
    {
      method: "tablePage",
      variant: "quarantined, by last failure",
      run: (s) =>
        s.tablePage(
          REPO_ID,
          "quarantined",
          { quarantiningEnabled: true, autoQuarantine: true },
          "last_failure",
          0,
          50,
        ),
    },
    {
      method: "tableCount",
      run: (s) =>
        s.tableCount(REPO_ID, undefined, { quarantiningEnabled: true, autoQuarantine: true }),
    },
    { method: "testFiles", run: (s) => s.testFiles(REPO_ID) },
  ],
});
