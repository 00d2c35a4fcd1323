/**
 * The git host and CI of each repository's host (src/mergequeue/host-router.ts): a host with no
 * provider gets a clear `host_not_connected` error, never an in-memory stand-in.
 */
import { describe, expect, it } from "vitest";
import { CiRouter, GitHostRouter } from "../../src/mergequeue/host-router.js";
import { MemoryCi, MemoryGitHost } from "../../src/mergequeue/simulator/memory-host.js";
import { type OwnedRepoRef } from "../../src/organizations/repositories.js";

const LOCAL: OwnedRepoRef = { organizationId: "o", host: "local", owner: "acme", name: "app" };
const GITHUB: OwnedRepoRef = {
  organizationId: "o",
  host: "github.com",
  owner: "acme",
  name: "app",
};

describe("GitHostRouter", () => {
  it("sends each repository to its host's provider, whatever the letter case", async () => {
    const local = new MemoryGitHost();
    local.repository(LOCAL, "abc");
    const router = new GitHostRouter(new Map([["local", local]]));
    expect(router.connected("local")).toBe(true);
    expect(router.connected("LOCAL")).toBe(true);
    expect(await router.branchHead(LOCAL, "main")).toBe("abc");
  });

  it("answers host_not_connected for a host with no provider", async () => {
    const router = new GitHostRouter(new Map([["local", new MemoryGitHost()]]));
    expect(router.connected("github.com")).toBe(false);
    await expect(router.pullRequest(GITHUB, 1)).rejects.toMatchObject({
      code: "host_not_connected",
      message: expect.stringContaining("no provider for host github.com is configured") as unknown,
    });
    await expect(router.branchHead(GITHUB, "main")).rejects.toMatchObject({
      code: "host_not_connected",
    });
    const ci = new CiRouter(new Map([["local", new MemoryCi()]]));
    await expect(
      ci.start({
        repo: GITHUB,
        queueId: "q",
        runId: "r",
        targetBranch: "main",
        testBranch: "mainline/test/r",
        sha: "s",
        prNumbers: [1],
        requiredStatuses: null,
      }),
    ).rejects.toMatchObject({ code: "host_not_connected" });
  });

  it("uses a fallback when one is given (tests, the simulator)", () => {
    const router = new GitHostRouter(new Map(), new MemoryGitHost());
    expect(router.connected("github.com")).toBe(true);
  });
});
