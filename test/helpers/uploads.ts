import { expect } from "vitest";
import { writeBundleBuffer, type BundleInputFile } from "../../src/testhealth/bundle/index.js";
import { testId } from "../../src/testhealth/identity.js";
import { REPO, type TestServer } from "./server.js";
import { repoFullName } from "../../src/organizations/repositories.js";

export interface CaseSpec {
  name: string;
  classname?: string;
  file?: string;
  status?: "passed" | "failed" | "skipped" | "error";
  message?: string;
  /** `flakyFailure` elements (the test passed in the end). */
  flakyFailures?: number;
  time?: number;
  timestamp?: string;
}

const escape = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** A JUnit report with one suite. */
export function junit(cases: readonly CaseSpec[], suite = "suite"): string {
  const body = cases
    .map((c) => {
      const attrs = [
        `name="${escape(c.name)}"`,
        `classname="${escape(c.classname ?? "pkg.Class")}"`,
        ...(c.file ? [`file="${escape(c.file)}"`] : []),
        `time="${c.time ?? 0.01}"`,
        ...(c.timestamp ? [`timestamp="${c.timestamp}"`] : []),
      ].join(" ");
      const message = escape(c.message ?? "expected true to be false");
      const flaky = Array.from(
        { length: c.flakyFailures ?? 0 },
        () => `<flakyFailure message="${message}" type="AssertionError"/>`,
      ).join("");
      const result =
        c.status === "failed"
          ? `<failure message="${message}" type="AssertionError">${message}\n  at test (x.ts:1)</failure>`
          : c.status === "error"
            ? `<error message="${message}" type="Error"/>`
            : c.status === "skipped"
              ? "<skipped/>"
              : "";
      return `    <testcase ${attrs}>${result}${flaky}</testcase>`;
    })
    .join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n  <testsuite name="${escape(suite)}" tests="${cases.length}">\n${body}\n  </testsuite>\n</testsuites>\n`;
}

export interface BundleSpec {
  files: readonly (string | BundleInputFile)[];
  commit?: string;
  branch?: string;
  pr?: number;
  variant?: string;
  /** Epoch ms; default now. */
  uploadedAt?: number;
  codeowners?: string;
  repo?: { host: string; owner: string; name: string };
  org?: string;
  /** Where the repository was checked out when the tests ran (meta.json's `repo_root`). */
  repoRoot?: string;
  /** The CI variables the uploader captured (meta.json's `envs`), beside `pr`'s. */
  envs?: Record<string, string>;
}

export async function bundle(spec: BundleSpec): Promise<Buffer> {
  return writeBundleBuffer({
    meta: {
      orgSlug: spec.org ?? "acme",
      repo: spec.repo ?? REPO,
      commitSha: spec.commit ?? "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b",
      cliVersion: "0.7.8",
      uploadTimeEpochSeconds: Math.floor((spec.uploadedAt ?? Date.now()) / 1000),
      branch: spec.branch ?? "main",
      ...(spec.variant ? { variant: spec.variant } : {}),
      ...(spec.repoRoot ? { repoRoot: spec.repoRoot } : {}),
      envs: {
        ...spec.envs,
        ...(spec.pr !== undefined ? { TRUNK_PR_NUMBER: String(spec.pr) } : {}),
      },
    },
    junitFiles: spec.files.map((file, i) =>
      typeof file === "string" ? { originalPath: `reports/junit-${i}.xml`, data: file } : file,
    ),
    ...(spec.codeowners !== undefined
      ? { codeowners: { originalPath: ".github/CODEOWNERS", data: spec.codeowners } }
      : {}),
  });
}

/** createBundleUpload + PUT; answers the upload id. */
export async function putBundle(
  server: TestServer,
  body: Uint8Array,
  repo: { host: string; owner: string; name: string } = REPO,
  clientVersion = "test",
): Promise<string> {
  const created = await server.call<{ id: string; url: string }>("metrics/createBundleUpload", {
    repo,
    orgUrlSlug: "acme",
    clientVersion,
    remoteUrls: [],
  });
  expect(created.status).toBe(200);
  // A server with a public URL (behind a proxy) names it; the test reaches the server directly.
  const url = new URL(created.body.url);
  const put = await fetch(new URL(`${url.pathname}${url.search}`, server.url), {
    method: "PUT",
    headers: { "content-type": "application/octet-stream" },
    body,
  });
  expect(put.status, await put.clone().text()).toBe(200);
  return created.body.id;
}

/** Uploads and waits until the worker has processed everything. */
export async function ingest(server: TestServer, body: Uint8Array): Promise<string> {
  const id = await putBundle(server, body);
  await server.services.worker.idle();
  return id;
}

export async function uploadState(server: TestServer, id: string) {
  const answer = await server.call<{ upload: Record<string, unknown> }>("flaky-tests/get-upload", {
    repo: REPO,
    org_url_slug: "acme",
    upload_id: id,
  });
  expect(answer.status).toBe(200);
  return answer.body.upload;
}

/** The id the server gives a test uploaded with `junit()` defaults (org acme, suite "suite"). */
export function testIdOf(spec: {
  name: string;
  classname?: string;
  file?: string;
  suite?: string;
  variant?: string;
  repo?: { host: string; owner: string; name: string };
}): string {
  return testId({
    org: "acme",
    repoFullName: repoFullName(spec.repo ?? REPO),
    file: spec.file ?? null,
    classname: spec.classname ?? "pkg.Class",
    parent: spec.suite ?? "suite",
    name: spec.name,
    variant: spec.variant ?? null,
  });
}
