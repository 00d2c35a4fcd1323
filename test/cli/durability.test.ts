import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { startServer, stopAllProcesses } from "../helpers/process.js";
import { post } from "./support.js";

/** What the API acknowledged is on disk: a server killed without warning loses none of it. */
let database: TestDatabase;
beforeEach(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await database.cleanup();
});
afterAll(stopAllProcesses);

describe("a crash after acknowledged writes", () => {
  it("SIGKILL loses no acknowledged queue setting", async () => {
    const token = randomBytes(32).toString("hex");
    const env = {
      ...database.env,
      MAINLINE_BOOTSTRAP_ORG: "acme",
      MAINLINE_BOOTSTRAP_TOKEN: token,
    };
    const repo = { host: "github.com", owner: "acme", name: "app" };

    const first = await startServer(env);
    const acknowledged: Record<string, number> = {};
    for (let i = 0; i < 20; i++) {
      const targetBranch = `branch-${i}`;
      expect((await post(first.url, "createQueue", { repo, targetBranch }, token)).status).toBe(
        200,
      );
      const update = await post(
        first.url,
        "updateQueue",
        { repo, targetBranch, concurrency: i + 2 },
        token,
      );
      expect(update.status).toBe(200);
      acknowledged[targetBranch] = i + 2;
    }
    expect(await first.stop("SIGKILL")).toMatchObject({ signal: "SIGKILL" });

    const second = await startServer(env);
    try {
      for (const [targetBranch, concurrency] of Object.entries(acknowledged)) {
        const read = await post(second.url, "getQueue", { repo, targetBranch }, token);
        expect(read.status).toBe(200);
        expect(read.body).toMatchObject({ concurrency });
      }
    } finally {
      await second.stop();
    }
  });
});
