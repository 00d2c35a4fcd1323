import { MergeQueueStore } from "../../../../src/db/stores/merge-queues.js";
import { DEFAULT_QUEUE_SETTINGS } from "../../../../src/mergequeue/settings.js";
import { NOW, ORG, REPO_ID, QUEUE_ID, REPO, OWNED_REPO } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `MergeQueueStore` (`src/db/stores/merge-queues.ts`) whose SQL is recorded into
 * `src/db/queries/merge-queues.{sqlite,postgres}.sql`; a method added to the store gets a call
 * here.
 */

const CONFIGURATION = { ...DEFAULT_QUEUE_SETTINGS, state: "running" as const, pendingMode: null };

const QUEUE_ROW = {
  id: QUEUE_ID,
  repository_id: REPO_ID,
  target_branch: "main",
  required_statuses: null,
  version: 1,
};

export const mergeQueuesScenario = scenario({
  file: "merge-queues",
  name: "MergeQueueStore",
  create: (handle) => new MergeQueueStore(handle.db, handle.dialect),
  calls: [
    { method: "find", run: (s) => s.find(ORG, REPO, "main") },
    {
      method: "overview",
      answer: when([/from "merge_queues"/, [{ id: QUEUE_ID, target_branch: "main" }]]),
      run: (s) => s.overview(ORG),
    },
    {
      method: "listForOrganization",
      variant: "every repository",
      run: (s) => s.listForOrganization(ORG),
    },
    {
      method: "listForOrganization",
      variant: "one repository",
      run: (s) => s.listForOrganization(ORG, REPO),
    },
    { method: "listForHost", variant: "every repository", run: (s) => s.listForHost("local") },
    {
      method: "listForHost",
      variant: "one repository",
      run: (s) => s.listForHost("local", OWNED_REPO),
    },
    {
      method: "insert",
      answer: () => [{ id: QUEUE_ID }],
      run: (s) =>
        s.insert({
          id: QUEUE_ID,
          repositoryId: REPO_ID,
          targetBranch: "main",
          createdAt: NOW,
          configuration: CONFIGURATION,
        }),
    },
    {
      method: "modify",
      answer: () => [QUEUE_ROW],
      run: (s) => s.modify(ORG, REPO, "main", NOW, () => CONFIGURATION),
    },
    { method: "findById", run: (s) => s.findById(QUEUE_ID) },
    {
      method: "setConfiguration",
      run: (s) => s.setConfiguration(QUEUE_ID, CONFIGURATION, NOW),
    },
    { method: "delete", run: (s) => s.delete(QUEUE_ID) },
  ],
});
