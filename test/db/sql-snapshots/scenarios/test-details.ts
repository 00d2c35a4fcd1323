import { TestDetailsStore } from "../../../../src/db/stores/test-details.js";
import { NOW, ORG, REPO_ID, REPO, REPOSITORY_ROW } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `TestDetailsStore` (`src/db/stores/test-details.ts`) whose SQL is recorded into
 * `src/db/queries/test-details.{sqlite,postgres}.sql`; a method added to the store gets a call
 * here.
 */

const TEST_CASE_ROW = { key: 1, repository_id: REPO_ID, id: "test-1", status: "flaky" };

export const testDetailsScenario = scenario({
  file: "test-details",
  name: "TestDetailsStore",
  create: (handle) => new TestDetailsStore(handle.db, handle.dialect),
  calls: [
    { method: "runsPage", run: (s) => s.runsPage(1, 0, 25) },
    { method: "statusHistory", run: (s) => s.statusHistory(1, 100) },
    {
      method: "setOverride",
      answer: when([/^update/, [TEST_CASE_ROW]]),
      run: (s) =>
        s.setOverride(
          1,
          { override: "ALWAYS_QUARANTINE", actor: "ada", reason: "noisy", at: NOW },
          "quarantined by ada",
        ),
    },
    {
      method: "setTicket",
      answer: when([/^select/, [{ ...TEST_CASE_ROW, ticket: null }]], [/^update/, [TEST_CASE_ROW]]),
      run: (s) => s.setTicket(1, { ticket: "BUG-1", actor: "ada", at: NOW }, () => "linked BUG-1"),
    },
    {
      method: "modifySettings",
      run: (s) => s.modifySettings(REPO_ID, NOW, (current) => current),
    },
    {
      method: "findTestByRepositoryName",
      variant: "any host",
      answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
      run: (s) => s.findTestByRepositoryName(ORG, "test-1", { owner: "acme", name: "widgets" }),
    },
    {
      method: "findTestByRepositoryName",
      variant: "one host",
      run: (s) => s.findTestByRepositoryName(ORG, "test-1", REPO),
    },
  ],
});
