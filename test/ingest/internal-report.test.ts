import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  collect,
  encodeTestReport,
  TEST_CASE_RUN_STATUS,
  trunkMetaJson,
  writeArchive,
  type ArchiveEntry,
  type TestCaseRunMessage,
} from "../../src/testhealth/bundle/index.js";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { rspecPluginReport } from "../helpers/trunk-reports.js";
import { ingest, junit, uploadState } from "../helpers/uploads.js";

// Trunk's uploader puts `internal.bin` (a protobuf report of every test it read) beside the JUnit
// files; its RSpec plugin writes nothing else. Both count, once.

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const { success, failure } = TEST_CASE_RUN_STATUS;

let commitCounter = 0;

/** A Trunk-shaped bundle from named entries after meta.json (each bundle its own commit). */
async function trunkBundle(
  entries: readonly ArchiveEntry[],
  internalBundledFile: string | null = "internal.bin",
): Promise<Buffer> {
  commitCounter += 1;
  const meta = trunkMetaJson({
    meta: {
      orgSlug: "acme",
      repo: REPO,
      commitSha: commitCounter.toString(16).padStart(40, "c"),
      cliVersion: "0.10.0",
      uploadTimeEpochSeconds: Math.floor(Date.now() / 1000),
      branch: "main",
    },
    junitFiles: [],
  });
  if (internalBundledFile !== null) {
    meta.internal_bundled_file = {
      original_path: `/tmp/x/${internalBundledFile}`,
      path: internalBundledFile,
      owners: [],
      team: null,
    };
  }
  return collect(
    writeArchive([{ name: "meta.json", content: { data: JSON.stringify(meta) } }, ...entries]),
  );
}

const run = (name: string, status: number, extra: TestCaseRunMessage = {}): TestCaseRunMessage => ({
  name,
  classname: "pkg.Class",
  parent_name: "suite",
  status,
  ...extra,
});

const report = (runs: TestCaseRunMessage[]) =>
  encodeTestReport({
    uploader_metadata: { version: "0.10.0", origin: "trunk-analytics-cli" },
    test_results: [{ test_case_runs: runs }],
  });

const sameTestsAsJunit = junit([{ name: "a" }, { name: "b", status: "failed" }]);
const sameTestsAsReport = () => report([run("a", success), run("b", failure)]);

describe("internal.bin", () => {
  it("counts the tests of a bundle that holds only the binary report", async () => {
    const id = await ingest(
      server,
      await trunkBundle([
        {
          name: "internal.bin",
          content: {
            data: report([run("one", success), run("two", failure), run("three", success)]),
          },
        },
      ]),
    );
    expect(await uploadState(server, id)).toMatchObject({
      state: "processed",
      tests_passed: 2,
      tests_failed: 1,
      files_total: 1,
      files_failed: 0,
    });
  });

  it("counts a test once when the bundle holds the report and its JUnit file", async () => {
    const id = await ingest(
      server,
      await trunkBundle([
        { name: "internal.bin", content: { data: sameTestsAsReport() } },
        { name: "junit/0", content: { data: sameTestsAsJunit } },
      ]),
    );
    expect(await uploadState(server, id)).toMatchObject({
      state: "processed",
      tests_passed: 1,
      tests_failed: 1,
      files_total: 1,
    });
  });

  it("counts once whatever the order of the entries", async () => {
    const id = await ingest(
      server,
      await trunkBundle([
        { name: "junit/0", content: { data: sameTestsAsJunit } },
        { name: "junit/1", content: { data: junit([{ name: "only-in-junit" }]) } },
        { name: "internal.bin", content: { data: sameTestsAsReport() } },
      ]),
    );
    expect(await uploadState(server, id)).toMatchObject({
      state: "processed",
      tests_passed: 1,
      tests_failed: 1,
    });
  });

  it("ingests a report shaped as Trunk's RSpec plugin writes it", async () => {
    const bytes = rspecPluginReport();
    const id = await ingest(
      server,
      await trunkBundle([{ name: "internal/0", content: { data: bytes } }], "internal/0"),
    );
    expect(await uploadState(server, id)).toMatchObject({
      state: "processed",
      tests_passed: 13,
      tests_failed: 0,
    });
  });

  it("counts internal/<n> beside JUnit files when no report stands for the bundle", async () => {
    const id = await ingest(
      server,
      await trunkBundle(
        [
          { name: "junit/0", content: { data: junit([{ name: "from-xml", status: "failed" }]) } },
          { name: "internal/0", content: { data: report([run("from-bin", success)]) } },
        ],
        null,
      ),
    );
    expect(await uploadState(server, id)).toMatchObject({
      state: "processed",
      tests_passed: 1,
      tests_failed: 1,
      files_total: 2,
    });
  });

  it("falls back to the JUnit files when internal.bin is not a report", async () => {
    const id = await ingest(
      server,
      await trunkBundle([
        { name: "internal.bin", content: { data: Buffer.from("<not protobuf>\u0007") } },
        { name: "junit/0", content: { data: sameTestsAsJunit } },
      ]),
    );
    const upload = await uploadState(server, id);
    expect(upload).toMatchObject({ state: "processed", tests_passed: 1, tests_failed: 1 });
    expect(upload.file_errors).toEqual([
      {
        file: "internal.bin",
        reason: expect.stringMatching(/Trunk test report/) as unknown,
      },
    ]);
  });
});
