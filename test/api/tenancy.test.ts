import { beforeAll, describe, expect, it } from "vitest";
import {
  PROJECT_FILES,
  createLocalProject,
  git,
  type LocalProject,
} from "../helpers/local-project.js";
import { waitFor } from "../helpers/process.js";
import { REPO, ok, startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
let otherToken: string;
const address = { repo: REPO, targetBranch: "main" };

beforeAll(async () => {
  server = await startTestServer({ engine: { pollMs: 100 }, watchIntervalMs: 200 });
  otherToken = (await server.services.organizations.createOrganizationWithToken("globex")).token;
  await server.call("createQueue", address);
  await server.call("updateQueue", {
    ...address,
    concurrency: 7,
    requiredStatuses: ["secret-check"],
  });
  return () => server.close();
});

describe("organizations are isolated", () => {
  it("another organization's token cannot read the queue", async () => {
    const response = await server.call("getQueue", address, { token: otherToken });
    expect(response.status).toBe(404);
    expect(response.text).not.toContain("secret-check");
  });

  it("another organization's token cannot change or delete the queue", async () => {
    expect(
      (await server.call("updateQueue", { ...address, concurrency: 1 }, { token: otherToken }))
        .status,
    ).toBe(404);
    expect((await server.call("deleteQueue", address, { token: otherToken })).status).toBe(404);
    expect((await server.call("getQueue", address)).body).toMatchObject({
      concurrency: 7,
      requiredStatuses: ["secret-check"],
    });
  });

  it("another organization has its own repository and queue of the same name", async () => {
    const created = await server.call("createQueue", address, { token: otherToken });
    expect(created.status).toBe(200);
    await server.call("updateQueue", { ...address, concurrency: 2 }, { token: otherToken });
    expect((await server.call("getQueue", address, { token: otherToken })).body).toMatchObject({
      concurrency: 2,
      requiredStatuses: null,
    });
    expect((await server.call("getQueue", address)).body).toMatchObject({ concurrency: 7 });
    expect((await server.call("deleteQueue", address, { token: otherToken })).status).toBe(200);
    expect((await server.call("getQueue", address)).status).toBe(200);
  });

  it("answers the same 404 whether the queue is another organization's or nobody's", async () => {
    const foreign = await server.call("getQueue", address, { token: otherToken });
    const missing = await server.call(
      "getQueue",
      { ...address, repo: { ...REPO, name: "zzz" } },
      { token: otherToken },
    );
    expect(foreign.status).toBe(missing.status);
    expect((foreign.body as { error: { code: string } }).error.code).toBe("not_found");
  });
});

describe("a local repository belongs to one organization", () => {
  const lr = { host: "local", owner: "a", name: "lr" };
  const queue = { repo: lr, targetBranch: "main" };
  let other: { token: string; organizationId: string };
  let acmeProject: LocalProject;

  beforeAll(async () => {
    const issued = await server.services.organizations.createOrganizationWithToken("initech");
    other = { token: issued.token, organizationId: issued.organization.id };
    const { remoteUrl } = await ok(
      server.call<{ remoteUrl: string }>("local/createRepository", { repo: lr }),
    );
    acmeProject = await createLocalProject(remoteUrl);
    await acmeProject.branch("feature", { "numbers/f.txt": "2\n" });
    await ok(server.call("local/openPullRequest", { repo: lr, head: "feature", base: "main" }));
  });

  it("another organization cannot put a queue on it: 404, and no repository row of its own", async () => {
    const response = await server.call("createQueue", queue, { token: other.token });
    expect(response.status, response.text).toBe(404);
    expect((response.body as { error: { code: string } }).error.code).toBe("not_found");
    expect(
      await server.services.stores.repositories.find(other.organizationId, lr),
    ).toBeUndefined();
    // In any letter case.
    const shouted = { ...queue, repo: { ...lr, owner: "A", name: "LR" } };
    expect((await server.call("createQueue", shouted, { token: other.token })).status).toBe(404);
    // Nor can it submit acme's pull request through a queue of its own.
    expect(
      (
        await server.call(
          "submitPullRequest",
          { ...queue, pr: { number: 1 } },
          { token: other.token },
        )
      ).status,
    ).toBe(404);
  });

  it("another organization reaches none of its pull requests", async () => {
    for (const [operation, body] of [
      ["local/listPullRequests", { repo: lr }],
      ["local/openPullRequest", { repo: lr, head: "feature", base: "main" }],
      ["local/closePullRequest", { repo: lr, number: 1 }],
    ] as const) {
      const response = await server.call(operation, body, { token: other.token });
      expect(response.status, `${operation}: ${response.text}`).toBe(404);
    }
    const listed = await ok(
      server.call<{ pullRequests: { number: number; state: string }[] }>("local/listPullRequests", {
        repo: lr,
      }),
    );
    expect(listed.pullRequests).toEqual([expect.objectContaining({ number: 1, state: "open" })]);
  });

  it("two organizations' queues on repositories of the same name each merge into their own", async () => {
    const { remoteUrl } = await ok(
      server.call<{ remoteUrl: string }>(
        "local/createRepository",
        { repo: lr },
        { token: other.token },
      ),
    );
    expect(remoteUrl).not.toBe(acmeProject.remote);
    const otherProject = await createLocalProject(remoteUrl, {
      ...PROJECT_FILES,
      "numbers/other.txt": "7\n",
    });
    await otherProject.branch("theirs", { "numbers/t.txt": "3\n" }, "Their change");
    const theirs = await ok(
      server.call<{ number: number }>(
        "local/openPullRequest",
        { repo: lr, head: "theirs", base: "main" },
        { token: other.token },
      ),
    );
    expect(theirs.number).toBe(1);

    for (const token of [server.token, other.token]) {
      await ok(server.call("createQueue", queue, { token }));
      await ok(server.call("submitPullRequest", { ...queue, pr: { number: 1 } }, { token }));
    }
    const state = async (token: string) =>
      (
        await ok(
          server.call<{ state: string }>(
            "getSubmittedPullRequest",
            { ...queue, pr: { number: 1 } },
            { token },
          ),
        )
      ).state;
    await waitFor(
      async () =>
        (await state(server.token)) === "merged" && (await state(other.token)) === "merged",
      "both pull requests to merge",
    );
    expect(await acmeProject.mainHistory()).toEqual(["Start the project", "feature (#1)"]);
    expect(await otherProject.mainHistory()).toEqual(["Start the project", "theirs (#1)"]);
    expect(
      await git(acmeProject.remote, "ls-tree", "--name-only", "main", "numbers/"),
    ).not.toContain("other.txt");
  });
});
