import { TestCaseStore } from "../../../../src/db/stores/test-cases.js";
import { REPO_ID, QUARANTINE } from "./fixtures.js";
import { scenario } from "./types.js";

/**
 * The calls of `TestCaseStore` (`src/db/stores/test-cases.ts`) whose SQL is recorded into
 * `src/db/queries/test-cases.{sqlite,postgres}.sql`; a method added to the store gets a call here.
 */

export const testCasesScenario = scenario({
  file: "test-cases",
  name: "TestCaseStore",
  create: (handle) => new TestCaseStore(handle.db),
  calls: [
    {
      method: "quarantinedIds",
      variant: "auto-quarantine on",
      run: (s) => s.quarantinedIds(REPO_ID, QUARANTINE),
    },
    {
      method: "quarantinedIds",
      variant: "overrides only",
      run: (s) => s.quarantinedIds(REPO_ID, { ...QUARANTINE, autoQuarantine: false }),
    },
    {
      method: "flakyOrQuarantined",
      run: (s) => s.flakyOrQuarantined(REPO_ID, ["test-1", "test-2"], QUARANTINE),
    },
    {
      method: "flakyOrQuarantined",
      variant: "quarantining off",
      run: (s) =>
        s.flakyOrQuarantined(REPO_ID, ["test-1"], { ...QUARANTINE, quarantiningEnabled: false }),
    },
    {
      method: "standing",
      run: (s) => s.standing(REPO_ID, ["test-1", "test-2"]),
    },
  ],
});
