import { beforeAll, describe, expect, it } from "vitest";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
let otherToken: string;
const address = { repo: REPO, targetBranch: "main" };

beforeAll(async () => {
  server = await startTestServer();
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
