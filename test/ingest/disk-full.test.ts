/**
 * A full disk, for real: a 2 MiB tmpfs mounted over the data directory's `uploads/` and `git/`
 * (the database stays on the ordinary disk) and filled to the last byte. Needs root, as the rest
 * of the suite's environment has.
 */
import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, readdirSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, junit, uploadState } from "../helpers/uploads.js";

let server: TestServer;
const mounted: string[] = [];

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.services.worker.idle();
  for (const dir of mounted) execFileSync("umount", [dir]);
  await server.close();
});

/** A small filesystem of its own at `dir`, filled until a write fails with ENOSPC. */
function fullDisk(dir: string): { free(): void } {
  mkdirSync(dir, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", dir]);
  mounted.push(dir);
  const filler = path.join(dir, "filler");
  const fd = openSync(filler, "w");
  try {
    for (const size of [64 * 1024, 4096, 1]) {
      const block = Buffer.alloc(size, 1);
      try {
        for (;;) writeSync(fd, block);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
  return {
    free: () => {
      rmSync(filler);
    },
  };
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

interface ErrorBody {
  error: { code: string; message: string };
}

describe("a full disk", () => {
  it("answers a bundle PUT with 507, keeps nothing, and takes the same URL once there is room", async () => {
    const uploads = path.join(server.database.dataDir, "uploads");
    const disk = fullDisk(uploads);
    const created = await server.call<{ id: string; url: string }>("metrics/createBundleUpload", {
      repo: REPO,
      orgUrlSlug: "acme",
    });
    expect(created.status).toBe(200);
    const body = await bundle({
      files: [junit(Array.from({ length: 200 }, (_, i) => ({ name: `t${i}` })))],
    });

    const refused = await server.request(
      new URL(created.body.url).pathname + new URL(created.body.url).search,
      {
        method: "PUT",
        headers: { "content-type": "application/octet-stream" },
        body,
      },
    );
    expect(refused.status, refused.text).toBe(507);
    const error = (refused.body as ErrorBody).error;
    expect(error.code).toBe("insufficient_storage");
    expect(error.message).toMatch(/disk is full/);
    expect(filesUnder(uploads)).toEqual(["filler"]);
    expect((await server.services.stores.uploads.find(created.body.id))?.state).toBe(
      "awaiting_bundle",
    );

    disk.free();
    const stored = await fetch(created.body.url, {
      method: "PUT",
      headers: { "content-type": "application/octet-stream" },
      body,
    });
    expect(stored.status, await stored.text()).toBe(200);
    await server.services.worker.idle();
    expect(await uploadState(server, created.body.id)).toMatchObject({
      state: "processed",
      tests_passed: 200,
    });
  });

  it("answers local createRepository with 507, creates nothing, and creates it once there is room", async () => {
    const gitDir = path.join(server.database.dataDir, "git");
    const disk = fullDisk(gitDir);
    const repo = { host: "local", owner: "acme", name: "full" };

    const refused = await server.call("local/createRepository", { repo });
    expect(refused.status, refused.text).toBe(507);
    const error = (refused.body as unknown as ErrorBody).error;
    expect(error.code).toBe("insufficient_storage");
    expect(error.message).toMatch(/disk is full/);
    expect(filesUnder(gitDir)).toEqual(["filler"]);
    expect(
      await server.services.stores.repositories.find(
        (await server.services.organizations.authenticate(server.token)).organizationId,
        repo,
      ),
    ).toBeUndefined();

    disk.free();
    const created = await server.call<{ remoteUrl: string }>("local/createRepository", { repo });
    expect(created.status, created.text).toBe(200);
    const head = execFileSync("git", ["--git-dir", created.body.remoteUrl, "symbolic-ref", "HEAD"]);
    expect(head.toString().trim()).toBe("refs/heads/main");
  });
});
