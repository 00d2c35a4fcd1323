import { TestOverviewStore } from "../../../../src/db/stores/test-overview.js";
import { NOW, DAY, ORG, REPO_ID } from "./fixtures.js";
import { scenario } from "./types.js";

/**
 * The calls of `TestOverviewStore` (`src/db/stores/test-overview.ts`) whose SQL is recorded into
 * `src/db/queries/test-overview.{sqlite,postgres}.sql`; a method added to the store gets a call
 * here.
 */

export const testOverviewScenario = scenario({
  file: "test-overview",
  name: "TestOverviewStore",
  create: (handle) => new TestOverviewStore(handle.db),
  calls: [
    { method: "repositories", run: (s) => s.repositories(ORG) },
    { method: "statusCounts", run: (s) => s.statusCounts([REPO_ID, "repo-2"]) },
    { method: "overrideCounts", run: (s) => s.overrideCounts([REPO_ID, "repo-2"]) },
    { method: "statusChanges", run: (s) => s.statusChanges([REPO_ID, "repo-2"], NOW - 30 * DAY) },
  ],
});
