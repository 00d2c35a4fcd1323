import { TestViewStore } from "../../../../src/db/stores/test-views.js";
import { NOW, REPO_ID } from "./fixtures.js";
import { scenario } from "./types.js";

/**
 * The calls of `TestViewStore` (`src/db/stores/test-views.ts`) whose SQL is recorded into
 * `src/db/queries/test-views.{sqlite,postgres}.sql`; a method added to the store gets a call here.
 */

export const testViewsScenario = scenario({
  file: "test-views",
  name: "TestViewStore",
  create: (handle) => new TestViewStore(handle.db, handle.dialect),
  calls: [
    { method: "rowsByKey", run: (s) => s.rowsByKey([1, 2]) },
    { method: "findById", run: (s) => s.findById(REPO_ID, "test-1") },
    { method: "figures", run: (s) => s.figures([1, 2], NOW) },
  ],
});
