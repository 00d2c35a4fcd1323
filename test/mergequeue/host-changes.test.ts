/**
 * The host-independent path from "a branch moved / a pull request changed" to queue commands
 * (src/mergequeue/host-changes.ts), over a fake list of queues: every provider reuses it.
 */
import { describe, expect, it } from "vitest";
import { HostChanges } from "../../src/mergequeue/host-changes.js";
import type { QueueCommand } from "../../src/mergequeue/model.js";
import type { QueueListing } from "../../src/mergequeue/records.js";
import { type OwnedRepoRef } from "../../src/organizations/repositories.js";

const APP: OwnedRepoRef = {
  organizationId: "org-1",
  host: "github.com",
  owner: "acme",
  name: "app",
};
const LIB: OwnedRepoRef = {
  organizationId: "org-1",
  host: "github.com",
  owner: "acme",
  name: "lib",
};
const LOCAL: OwnedRepoRef = { organizationId: "org-2", host: "local", owner: "acme", name: "app" };

const QUEUES: QueueListing[] = [
  { id: "q-app-main", targetBranch: "main", repo: APP },
  { id: "q-app-release", targetBranch: "release", repo: APP },
  { id: "q-lib-main", targetBranch: "main", repo: LIB },
  { id: "q-local-main", targetBranch: "main", repo: LOCAL },
];

function setup() {
  const sent: { queueId: string; command: QueueCommand }[] = [];
  const changes = new HostChanges({
    queues: {
      listForHost: (host, repo) =>
        Promise.resolve(
          QUEUES.filter(
            (queue) =>
              queue.repo.host === host &&
              (repo === undefined ||
                (queue.repo.organizationId === repo.organizationId &&
                  queue.repo.owner === repo.owner &&
                  queue.repo.name === repo.name)),
          ),
        ),
    },
    engine: {
      notify: (queueId, command) => {
        sent.push({ queueId, command });
        return Promise.resolve();
      },
    },
  });
  return { changes, sent };
}

describe("HostChanges", () => {
  it("a target branch that moved reaches its queue, the PRs on it every queue of the repository", async () => {
    const { changes, sent } = setup();
    await changes.apply({ type: "branch_moved", repo: APP, branch: "main", pullRequests: [] });
    expect(sent).toEqual([{ queueId: "q-app-main", command: { type: "branch_moved" } }]);

    sent.length = 0;
    await changes.apply({
      type: "branch_moved",
      repo: APP,
      branch: "feature/x",
      pullRequests: [4, 9],
    });
    expect(sent).toEqual([
      { queueId: "q-app-main", command: { type: "pr_changed", prNumber: 4 } },
      { queueId: "q-app-main", command: { type: "pr_changed", prNumber: 9 } },
      { queueId: "q-app-release", command: { type: "pr_changed", prNumber: 4 } },
      { queueId: "q-app-release", command: { type: "pr_changed", prNumber: 9 } },
    ]);
  });

  it("a changed pull request (closed, retargeted) is read again by every queue of its repository", async () => {
    const { changes, sent } = setup();
    await changes.apply({ type: "pull_request_changed", repo: APP, number: 12 });
    expect(sent.map((s) => s.queueId)).toEqual(["q-app-main", "q-app-release"]);
    expect(sent.every((s) => s.command.type === "pr_changed")).toBe(true);
  });

  it("a repository without a queue gets nothing", async () => {
    const { changes, sent } = setup();
    const other = { ...APP, name: "docs" };
    await changes.apply({ type: "branch_moved", repo: other, branch: "main", pullRequests: [1] });
    await changes.apply({ type: "pull_request_changed", repo: other, number: 1 });
    expect(sent).toEqual([]);
    expect(await changes.hasQueues(other)).toBe(false);
    expect(await changes.hasQueues(APP)).toBe(true);
  });

  it("watches the repositories of one host that have a queue, each once", async () => {
    const { changes } = setup();
    expect(await changes.watched("github.com")).toEqual([APP, LIB]);
    expect(await changes.watched("local")).toEqual([LOCAL]);
  });
});
