import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import {
  runCliInProcess,
  startServer,
  stopAllProcesses,
  type RunningServer,
} from "../helpers/process.js";
import { failed, post, succeeded } from "./support.js";

let database: TestDatabase;
let server: RunningServer;
const TOKEN = randomBytes(32).toString("hex");

beforeAll(async () => {
  database = await createTestDatabase();
  server = await startServer({
    ...database.env,
    MAINLINE_BOOTSTRAP_ORG: "acme",
    MAINLINE_BOOTSTRAP_TOKEN: TOKEN,
  });
});

afterAll(async () => {
  await server.stop();
  await stopAllProcesses();
  await database.cleanup();
});

const publicId = (...args: string[]) =>
  runCliInProcess(["repo", "public-id", ...args], {
    MAINLINE_URL: server.url,
    MAINLINE_TOKEN: TOKEN,
  });

const REPO = { host: "github.com", owner: "acme", name: "app" };

/** createBundleUpload with only the public id, as Trunk's uploader sends it from a fork. */
const uploadWith = (id: string) =>
  fetch(`${server.url}/v1/metrics/createBundleUpload`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-trunk-public-repo-id": id },
    body: JSON.stringify({ repo: REPO, orgUrlSlug: "acme", remoteUrls: [] }),
  });

describe("mainline repo public-id", () => {
  it("prints the repository's public id, the one the API answers", async () => {
    const shown = succeeded(await publicId("github.com/acme/app")).stdout.trim();
    expect(shown).toMatch(/^mlpub_[A-Za-z0-9_-]{24}$/);
    expect(succeeded(await publicId("github.com/acme/app")).stdout.trim()).toBe(shown);
    const api = await post(
      server.url,
      "flaky-tests/get-public-repo-id",
      { repo: REPO, org_url_slug: "acme" },
      TOKEN,
    );
    expect(api.body).toEqual({ public_repo_id: shown });
    expect((await uploadWith(shown)).status).toBe(200);
  });

  it("rotates it: the old id stops working", async () => {
    const before = succeeded(await publicId("github.com/acme/app")).stdout.trim();
    const rotated = succeeded(await publicId("github.com/acme/app", "--rotate"));
    const after = rotated.stdout.trim();
    expect(after).not.toBe(before);
    expect(rotated.stderr).toContain("no longer works");
    expect(succeeded(await publicId("github.com/acme/app")).stdout.trim()).toBe(after);
    expect((await uploadWith(before)).status).toBe(401);
    expect((await uploadWith(after)).status).toBe(200);
  });

  it("says what is wrong with a bad repository argument", async () => {
    expect(failed(await publicId("not-a-repo"))).toContain("host/owner/name");
  });
});
