import { RepositoryHealthStore } from "../../../../src/db/stores/repository-health.js";
import { NOW, DAY, REPO_ID } from "./fixtures.js";
import { scenario } from "./types.js";

/**
 * The calls of `RepositoryHealthStore` (`src/db/stores/repository-health.ts`) whose SQL is recorded
 * into `src/db/queries/repository-health.{sqlite,postgres}.sql`; a method added to the store gets a
 * call here.
 */

export const repositoryHealthScenario = scenario({
  file: "repository-health",
  name: "RepositoryHealthStore",
  create: (handle) => new RepositoryHealthStore(handle.db),
  calls: [
    {
      method: "tests",
      run: (s) => s.tests(REPO_ID, undefined, { quarantiningEnabled: true, autoQuarantine: true }),
    },
    {
      method: "tests",
      variant: "flaky",
      run: (s) => s.tests(REPO_ID, "flaky", { quarantiningEnabled: true, autoQuarantine: true }),
    },
    {
      method: "tests",
      variant: "quarantined",
      run: (s) =>
        s.tests(REPO_ID, "quarantined", { quarantiningEnabled: true, autoQuarantine: true }),
    },
    { method: "recentCounts", run: (s) => s.recentCounts(REPO_ID, NOW - 7 * DAY) },
    { method: "prsImpacted", run: (s) => s.prsImpacted(REPO_ID, NOW - 7 * DAY) },
    { method: "prsImpactedByFlaky", run: (s) => s.prsImpactedByFlaky(REPO_ID, NOW - 7 * DAY) },
    { method: "dailyFailures", run: (s) => s.dailyFailures(REPO_ID, NOW - 30 * DAY) },
    { method: "testDaily", run: (s) => s.testDaily(1, NOW - 30 * DAY) },
  ],
});
