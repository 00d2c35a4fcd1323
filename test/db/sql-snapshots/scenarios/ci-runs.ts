import { CiRunStore } from "../../../../src/db/stores/ci-runs.js";
import { NOW, QUEUE_ID } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `CiRunStore` (`src/db/stores/ci-runs.ts`) whose SQL is recorded into
 * `src/db/queries/ci-runs.{sqlite,postgres}.sql`; a method added to the store gets a call here.
 */

const CI_RUN = {
  queueId: QUEUE_ID,
  runId: "run-1",
  request: {} as never,
  status: "queued" as const,
  checks: [],
  error: null,
  flakyOnly: false,
  createdAt: NOW,
  finishedAt: null,
  owner: null,
  leaseUntil: 0,
};

export const ciRunsScenario = scenario({
  file: "ci-runs",
  name: "CiRunStore",
  create: (handle) => new CiRunStore(handle.db),
  calls: [
    { method: "create", run: (s) => s.create(CI_RUN) },
    { method: "get", run: (s) => s.get(QUEUE_ID, "run-1") },
    { method: "update", run: (s) => s.update(CI_RUN) },
    { method: "unfinished", run: (s) => s.unfinished() },
    { method: "claim", run: (s) => s.claim(QUEUE_ID, "run-1", "worker-1", NOW, NOW + 60_000) },
    { method: "renew", run: (s) => s.renew("worker-1", NOW + 60_000) },
    { method: "release", run: (s) => s.release("worker-1") },
    {
      method: "unbuilt",
      variant: "a queue's runs",
      answer: when([
        /from "mq_runs"/,
        [
          {
            id: "run-1",
            status: "failed",
            prs: '[{"number":7}]',
            base_sha: "b",
            started_at: NOW,
          },
        ],
      ]),
      run: (s) => s.unbuilt(QUEUE_ID, 20),
    },
    { method: "unbuilt", variant: "one run", run: (s) => s.unbuilt(QUEUE_ID, 1, "run-1") },
    { method: "list", run: (s) => s.list(QUEUE_ID, 20) },
  ],
});
