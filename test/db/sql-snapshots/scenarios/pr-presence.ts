import { PrPresenceStore } from "../../../../src/db/stores/pr-presence.js";
import { NOW, QUEUE_ID } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `PrPresenceStore` (`src/db/stores/pr-presence.ts`) whose SQL is recorded
 * into `src/db/queries/pr-presence.{sqlite,postgres}.sql`; a method added to the store gets a
 * call here.
 */

export const prPresenceScenario = scenario({
  file: "pr-presence",
  name: "PrPresenceStore",
  create: (handle) => new PrPresenceStore(handle.db),
  calls: [
    {
      method: "claimCursor",
      answer: when([/^select/, [{ maxId: 41 }]], [/^update/, [{ last_id: 41 }]]),
      run: (s) => s.claimCursor("github-presence", "worker-1", NOW, NOW + 30_000),
    },
    {
      method: "advanceCursor",
      run: (s) => s.advanceCursor("github-presence", "worker-1", 42, NOW),
    },
    { method: "releaseCursor", run: (s) => s.releaseCursor("github-presence", "worker-1") },
    { method: "transitionsAfter", run: (s) => s.transitionsAfter(41, 500) },
    { method: "find", run: (s) => s.find(QUEUE_ID, 7) },
    {
      method: "save",
      run: (s) =>
        s.save({
          queueId: QUEUE_ID,
          prNumber: 7,
          commentId: 1001,
          checkRunId: 2002,
          checkSha: "a".repeat(40),
          stateLabel: "trunk:testing",
          presented: "{}",
          updatedAt: NOW,
        }),
    },
  ],
});
