import { TestListStore } from "../../../../src/db/stores/test-lists.js";
import { NOW, DAY, REPO_ID, QUARANTINE } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `TestListStore` (`src/db/stores/test-lists.ts`) whose SQL is recorded into
 * `src/db/queries/test-lists.{sqlite,postgres}.sql`; a method added to the store gets a call here.
 */

export const testListsScenario = scenario({
  file: "test-lists",
  name: "TestListStore",
  create: (handle) => new TestListStore(handle.db, handle.dialect),
  calls: [
    {
      method: "failing",
      variant: "a week, first read",
      answer: (sql) =>
        /'e' as kind/.test(sql)
          ? [
              { kind: "d", unit: Math.floor(NOW / DAY) * DAY - DAY, a: 2, b: 3 },
              { kind: "e", unit: 3, a: 1, b: 0 },
            ]
          : /as tests/.test(sql)
            ? [{ unit: Math.floor(NOW / DAY) * DAY - DAY, tests: "[1,2]", failures: "[1,2]" }]
            : undefined,
      run: (s) => s.failing(REPO_ID, { start: NOW - 7 * DAY, end: NOW }, 0, 25),
    },
    {
      method: "unhealthy",
      variant: "a page past the end",
      run: (s) => s.unhealthy(REPO_ID, "flaky", NOW, 50, 25),
    },
    {
      method: "quarantined",
      variant: "a page past the end",
      answer: when([/count\(\*\) as "n"/, [{ n: 3 }]]),
      run: (s) => s.quarantined(REPO_ID, QUARANTINE, 50, 25),
    },
  ],
});
