/**
 * The whole third-party JUnit corpus through the upload protocol: one bundle per corpus folder.
 * Every readable report lands with the test cases it holds; every known-bad one is listed in its
 * upload's file errors with a reason; an upload with no readable report is failed.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mergeRepeatedTestcases, parseJunitText } from "../../src/testhealth/junit/index.js";
import { corpusRoot, KNOWN_BAD, reportFiles } from "../helpers/corpus.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, uploadState } from "../helpers/uploads.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const byFolder = new Map<string, string[]>();
for (const file of reportFiles()) {
  const folder = file.split(path.sep)[0] ?? "";
  byFolder.set(folder, [...(byFolder.get(folder) ?? []), file]);
}

async function expectedCounts(files: readonly string[]) {
  let tests = 0;
  for (const file of files) {
    if (KNOWN_BAD.includes(file)) continue;
    tests += mergeRepeatedTestcases(
      await parseJunitText(readFileSync(path.join(corpusRoot, file))),
    ).length;
  }
  return tests;
}

describe("the JUnit corpus through HTTP uploads", () => {
  it.each([...byFolder.keys()])(
    "%s",
    async (folder) => {
      const files = byFolder.get(folder) ?? [];
      const id = await ingest(
        server,
        await bundle({
          commit: "f".repeat(40),
          files: files.map((file) => ({
            originalPath: file,
            diskPath: path.join(corpusRoot, file),
          })),
        }),
      );
      const upload = await uploadState(server, id);
      const bad = files.filter((file) => KNOWN_BAD.includes(file));
      if (bad.length === files.length) {
        expect(upload.state).toBe("failed");
        expect(String(upload.reason).length).toBeGreaterThan(10);
        return;
      }
      expect(upload.state).toBe("processed");
      expect(upload.files_total).toBe(files.length);
      const errors = upload.file_errors as { file: string; reason: string }[];
      expect(errors.map((e) => e.file).sort()).toEqual([...bad].sort());
      for (const error of errors) expect(error.reason.length).toBeGreaterThan(5);
      const counted =
        Number(upload.tests_passed) + Number(upload.tests_failed) + Number(upload.tests_skipped);
      expect(counted).toBe(await expectedCounts(files));
    },
    60_000,
  );
});
