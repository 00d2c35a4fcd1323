import { TestSettingsStore } from "../../../../src/db/stores/test-settings.js";
import { NOW, REPO_ID, QUARANTINE } from "./fixtures.js";
import { scenario } from "./types.js";

/**
 * The calls of `TestSettingsStore` (`src/db/stores/test-settings.ts`) whose SQL is recorded into
 * `src/db/queries/test-settings.{sqlite,postgres}.sql`; a method added to the store gets a call
 * here.
 */

export const testSettingsScenario = scenario({
  file: "test-settings",
  name: "TestSettingsStore",
  create: (handle) => new TestSettingsStore(handle.db),
  calls: [
    { method: "get", run: (s) => s.get(REPO_ID) },
    {
      method: "put",
      run: (s) =>
        s.put(
          REPO_ID,
          {
            monitors: {} as never,
            quarantine: QUARANTINE,
            ticketBaseUrl: "https://tickets.example/",
            pullRequestComments: true,
            tickets: {
              connectionId: "tc_1",
              rule: { flaky: true, broken: false, afterHours: 24, requireOwner: true },
            },
          },
          NOW,
        ),
    },
    { method: "putCodeowners", run: (s) => s.putCodeowners(REPO_ID, "* @acme/core\n", NOW) },
  ],
});
