import { readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, uploadState } from "../helpers/uploads.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

describe("upload protocol", () => {
  it("stores a bundle, processes it in the background and counts its tests", async () => {
    const id = await ingest(
      server,
      await bundle({
        files: [
          junit([
            { name: "passes" },
            { name: "fails", status: "failed" },
            { name: "skipped", status: "skipped" },
          ]),
        ],
      }),
    );
    const upload = await uploadState(server, id);
    expect(upload).toMatchObject({
      id,
      state: "processed",
      reason: null,
      tests_passed: 1,
      tests_failed: 1,
      tests_skipped: 1,
      files_total: 1,
      files_failed: 0,
      branch: "main",
      infrastructure_failure: false,
    });
  });

  it("records a bad bundle as failed with a clear reason", async () => {
    const id = await ingest(server, Buffer.from("this is not a tar archive at all"));
    const upload = await uploadState(server, id);
    expect(upload.state).toBe("failed");
    expect(upload.reason).toMatch(/tar|compress|archive/i);
  });

  it("records invalid XML as a failed upload", async () => {
    const id = await ingest(server, await bundle({ files: ["<testsuites><testsuite>"] }));
    const upload = await uploadState(server, id);
    expect(upload.state).toBe("failed");
    expect(upload.file_errors).toHaveLength(1);
  });

  it("a failed upload keeps the commit, branch and PR it was sent with", async () => {
    const commit = "f1".repeat(20);
    const id = await ingest(
      server,
      await bundle({ commit, branch: "feature/login", pr: 31, files: ["not JUnit at all"] }),
    );
    const expected = {
      id,
      state: "failed",
      reason: "reports/junit-0.xml: not XML: the file does not start with '<'",
      commit_sha: commit,
      branch: "feature/login",
      pr_number: 31,
      files_total: 1,
      files_failed: 1,
      tests_passed: 0,
    };
    const upload = await uploadState(server, id);
    expect(upload).toMatchObject(expected);
    expect(upload.uploaded_at).toEqual(expect.any(String));
    const listed = await server.call<{ uploads: Record<string, unknown>[] }>(
      "flaky-tests/list-uploads",
      { repo: REPO, org_url_slug: "acme", page_query: { page_size: 100 } },
    );
    expect(listed.status).toBe(200);
    expect(listed.body.uploads.find((u) => u.id === id)).toMatchObject(expected);
    // A bundle whose meta.json was never read has nothing to keep.
    const unread = await uploadState(server, await ingest(server, Buffer.from("not a bundle")));
    expect(unread).toMatchObject({ state: "failed", commit_sha: null, branch: null });
  });

  it("counts the same bundle once", async () => {
    const body = await bundle({
      files: [junit([{ name: "dup", status: "failed" }])],
      commit: "ab".repeat(20),
    });
    const first = await ingest(server, body);
    const second = await ingest(server, body);
    expect(await uploadState(server, first)).toMatchObject({ state: "processed", tests_failed: 1 });
    expect(await uploadState(server, second)).toMatchObject({
      state: "processed",
      duplicate_of: first,
      tests_failed: 0,
    });
  });

  it("lists uploads newest first with all six page fields", async () => {
    const answer = await server.call<{ uploads: { id: string }[]; page: Record<string, unknown> }>(
      "flaky-tests/list-uploads",
      { repo: REPO, org_url_slug: "acme", page_query: { page_size: 2 } },
    );
    expect(answer.status).toBe(200);
    expect(answer.body.uploads).toHaveLength(2);
    expect(Object.keys(answer.body.page).sort()).toEqual([
      "last_page_token",
      "next_page_token",
      "page_index",
      "prev_page_token",
      "total_pages",
      "total_rows",
    ]);
  });

  it("answers quarantined ids of a flaky test through getQuarantineConfig", async () => {
    const commit = "cd".repeat(20);
    await ingest(
      server,
      await bundle({ commit, files: [junit([{ name: "flip", status: "failed" }])] }),
    );
    await ingest(server, await bundle({ commit, files: [junit([{ name: "flip" }])] }));
    const config = await server.call<{ isDisabled: boolean; testIds: string[] }>(
      "metrics/getQuarantineConfig",
      { repo: REPO, orgUrlSlug: "acme", testIdentifiers: [] },
    );
    expect(config.status).toBe(200);
    expect(config.body.isDisabled).toBe(false);
    expect(config.body.testIds).toHaveLength(1);
  });

  it("refuses a reused, tampered or expired URL", async () => {
    const created = await server.call<{ url: string }>("metrics/createBundleUpload", {
      repo: REPO,
      orgUrlSlug: "acme",
    });
    const body = await bundle({ files: [junit([{ name: "x" }])] });
    // One character of the signature changed (to another one: a fixed replacement would leave a
    // signature that starts with it unchanged, one time in 64).
    const tampered = created.body.url.replace(
      /signature=(.)/,
      (_, first: string) => `signature=${first === "A" ? "B" : "A"}`,
    );
    expect(tampered).not.toBe(created.body.url);
    expect((await fetch(tampered, { method: "PUT", body })).status).toBe(403);
    expect((await fetch(created.body.url, { method: "PUT", body })).status).toBe(200);
    const again = await fetch(created.body.url, { method: "PUT", body });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe("conflict");
  });

  it("keeps the first bundle of a URL used twice, one PUT after the other or both at once", async () => {
    // Bundles of other commits: the same bundle twice would be counted once.
    const one = (commit: string) => bundle({ commit, files: [junit([{ name: "one" }])] });
    const three = (commit: string) =>
      bundle({ commit, files: [junit([{ name: "t1" }, { name: "t2" }, { name: "t3" }])] });
    const create = async () =>
      (
        await server.call<{ id: string; url: string }>("metrics/createBundleUpload", {
          repo: REPO,
          orgUrlSlug: "acme",
        })
      ).body;
    const put = (url: string, body: Buffer) => fetch(url, { method: "PUT", body });
    const stored = (id: string) =>
      readdirSync(path.join(server.database.dataDir, "uploads")).filter((f) =>
        f.startsWith(`${id}.`),
      );

    const after = await create();
    expect((await put(after.url, await one("c1".repeat(20)))).status).toBe(200);
    expect((await put(after.url, await three("c2".repeat(20)))).status).toBe(409);

    const atOnce = await create();
    const bodies = [await one("c3".repeat(20)), await three("c4".repeat(20))];
    const answers = await Promise.all(bodies.map((body) => put(atOnce.url, body)));
    const statuses = answers.map((a) => a.status);
    expect([...statuses].sort()).toEqual([200, 409]);
    const winner = statuses[0] === 200 ? 1 : 3;

    await server.services.worker.idle();
    expect(await uploadState(server, after.id)).toMatchObject({
      state: "processed",
      tests_passed: 1,
    });
    expect(await uploadState(server, atOnce.id)).toMatchObject({
      state: "processed",
      tests_passed: winner,
    });
    // Nothing left on disk: a processed bundle goes, and so does the refused PUT's.
    expect(stored(after.id)).toEqual([]);
    expect(stored(atOnce.id)).toEqual([]);
  });

  it("answers 404 for a signed URL whose upload is gone, and keeps nothing of its body", async () => {
    const created = await server.call<{ id: string; url: string }>("metrics/createBundleUpload", {
      repo: REPO,
      orgUrlSlug: "acme",
    });
    await server.database.handle.db
      .deleteFrom("uploads")
      .where("id", "=", created.body.id)
      .execute();
    const answer = await fetch(created.body.url, {
      method: "PUT",
      body: await bundle({ files: [junit([{ name: "x" }])] }),
    });
    expect(answer.status).toBe(404);
    const left = readdirSync(path.join(server.database.dataDir, "uploads")).filter((f) =>
      f.startsWith(created.body.id),
    );
    expect(left).toEqual([]);
  });
});
