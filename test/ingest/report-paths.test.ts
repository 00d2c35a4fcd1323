/**
 * A report that names its files by absolute path (Node's test runner since 22 does) gives the
 * same test, with the same id, from every checkout directory: a path under the bundle's
 * `repo_root` counts relative to it. The built-in CI checks out every run in a directory of its
 * own, so without this each run would mint new tests and no failure would ever be known flaky.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRelativeFile } from "../../src/testhealth/report-paths.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, testIdOf } from "../helpers/uploads.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const COMMIT = "ab".repeat(20);

async function rows(name: string) {
  return server.services.database.db
    .selectFrom("testCases")
    .select(["id", "file"])
    .where("name", "=", name)
    .execute();
}

describe("absolute file paths in reports", () => {
  it("are one test from two checkouts, relative to repo_root, and a retry that passed makes it flaky", async () => {
    for (const [root, file, status] of [
      ["/runner/work-1/shop", "/runner/work-1/shop/test/cart.test.js", "failed"],
      ["/runner/work-2/shop/", "/runner/work-2/shop/test/cart.test.js", "passed"],
    ] as const) {
      await ingest(
        server,
        await bundle({
          commit: COMMIT,
          repoRoot: root,
          files: [junit([{ name: "adds an item", file, status }])],
        }),
      );
    }
    const found = await rows("adds an item");
    expect(found).toEqual([
      {
        id: testIdOf({ name: "adds an item", file: "test/cart.test.js" }),
        file: "test/cart.test.js",
      },
    ]);
    const status = await server.services.database.db
      .selectFrom("testCases")
      .select("status")
      .where("name", "=", "adds an item")
      .executeTakeFirstOrThrow();
    expect(status.status).toBe("flaky");
  });

  it("keeps a path outside repo_root, and any path when the bundle names no root, as written", async () => {
    await ingest(
      server,
      await bundle({
        commit: "cd".repeat(20),
        repoRoot: "/runner/work-3/shop",
        files: [junit([{ name: "elsewhere", file: "/opt/shared/test/x.test.js" }])],
      }),
    );
    await ingest(
      server,
      await bundle({
        commit: "ef".repeat(20),
        files: [junit([{ name: "no root", file: "/runner/work-4/shop/test/y.test.js" }])],
      }),
    );
    expect((await rows("elsewhere"))[0]?.file).toBe("/opt/shared/test/x.test.js");
    expect((await rows("no root"))[0]?.file).toBe("/runner/work-4/shop/test/y.test.js");
  });
});

describe("repoRelativeFile", () => {
  it.each([
    ["/a/b/test/x.js", "/a/b", "test/x.js"],
    ["/a/b/test/x.js", "/a/b/", "test/x.js"],
    ["/a/bc/test/x.js", "/a/b", "/a/bc/test/x.js"],
    ["/a/b", "/a/b", "/a/b"],
    ["test/x.js", "/a/b", "test/x.js"],
    ["C:\\work\\shop\\test\\x.js", "C:\\work\\shop", "test/x.js"],
    ["/a/b/test/x.js", null, "/a/b/test/x.js"],
    [null, "/a/b", null],
  ])("%s under %s → %s", (file, root, expected) => {
    expect(repoRelativeFile(file, root)).toBe(expected);
  });
});
