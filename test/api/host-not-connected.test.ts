/**
 * A repository on a git host with no provider (here github.com, before the GitHub provider):
 * its queue can be configured, but a pull request submitted to it is refused at once with
 * `host_not_connected` instead of waiting in the queue forever.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/app.js";

let server: TestApp;

beforeAll(async () => {
  server = await createTestApp();
  return () => server.close();
});

describe("a host with no provider", () => {
  it("createQueue creates the queue and answers Mainline's warning (Trunk's answer is {})", async () => {
    const address = {
      repo: { host: "github.com", owner: "acme", name: "warned" },
      targetBranch: "main",
    };
    const created = await server.call<{ warnings?: { code: string; message: string }[] }>(
      "createQueue",
      address,
    );
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      warnings: [
        {
          code: "host_not_connected",
          message: expect.stringMatching(
            /^No provider for host github\.com is configured on this server: the queue was created, but it cannot read, test or merge its pull requests/,
          ) as unknown,
        },
      ],
    });
    // The queue is there all the same: Trunk's Terraform provider creates queues this way.
    const read = await server.call<{ state: string }>("getQueue", address);
    expect(read.status).toBe(200);
    expect(read.body.state).toBe("running");
    expect((await server.call("createQueue", address)).status).toBe(409);
  });

  it("createQueue on a connected host answers {}, as Trunk does", async () => {
    const repo = { host: "local", owner: "acme", name: "connected" };
    expect((await server.call("local/createRepository", { repo })).status).toBe(200);
    const created = await server.call("createQueue", { repo, targetBranch: "main" });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({});
  });

  it("answers submitPullRequest with host_not_connected at once", async () => {
    const address = {
      repo: { host: "github.com", owner: "acme", name: "app" },
      targetBranch: "main",
    };
    expect((await server.call("createQueue", address)).status).toBe(200);

    const submitted = await server.call<{ error: { code: string; message: string } }>(
      "submitPullRequest",
      { ...address, pr: { number: 7 } },
    );
    expect(submitted.status).toBe(409);
    expect(submitted.body.error.code).toBe("host_not_connected");
    expect(submitted.body.error.message).toContain("no provider for host github.com is configured");

    // Nothing was queued.
    const listed = await server.call<{ pullRequests?: unknown[] }>("getSubmittedPullRequest", {
      ...address,
      pr: { number: 7 },
    });
    expect(listed.status).toBe(404);
  });

  it("still serves the local host's repositories", async () => {
    const created = await server.call("createQueue", {
      repo: { host: "local", owner: "acme", name: "missing" },
      targetBranch: "main",
    });
    // The local provider answers for its host: the repository does not exist there.
    expect(created.status).toBe(404);
    expect((created.body as { error: { code: string } }).error.code).toBe("not_found");
  });
});
