import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createReadStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CliError } from "../../src/cli/client.js";
import { createBundleUpload, putBundle } from "../../src/cli/upload/protocol.js";
import { testId } from "../../src/testhealth/identity.js";
import { readBundle, type BundleMeta } from "../../src/testhealth/bundle/index.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import {
  REPO_ROOT,
  freePort,
  runCliInProcess,
  startServer,
  stopAllProcesses,
  type RunningServer,
} from "../helpers/process.js";
import { post } from "./support.js";

let database: TestDatabase;
let server: RunningServer;
let work: string;
let checkout: string;
let headSha: string;
const TOKEN = randomBytes(32).toString("hex");
const REPO = { host: "github.com", owner: "acme", name: "app" };

const PASSING_REPORT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="math" file="src/math.test.ts">
    <testcase name="adds" classname="Math" time="0.01"/>
    <testcase name="subtracts" classname="Math" time="0.02"/>
    <testcase name="divides by zero" classname="Math"><skipped/></testcase>
  </testsuite>
</testsuites>`;

const FAILING_REPORT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="auth" file="src/auth.test.ts">
    <testcase name="logs in" classname="Auth" time="0.3">
      <failure message="expected 200, got 500" type="AssertionError">at login (auth.ts:3)</failure>
    </testcase>
    <testcase name="logs out" classname="Auth" time="0.1"/>
  </testsuite>
</testsuites>`;

/** The id the server gives the failing test (org acme, github.com/acme/app, no variant). */
const FAILING_ID = testId({
  org: "acme",
  repoFullName: "github.com/acme/app",
  file: "src/auth.test.ts",
  classname: "Auth",
  parent: "auth",
  name: "logs in",
});

/**
 * A test command (`node -e …`) that writes its reports, as a real one would: it rewrites `files`
 * (relative to the checkout) with the content they had, then exits with `code`. `mainline test`
 * takes only reports written while its command ran.
 */
function writesReports(code: number, ...files: string[]): string[] {
  return [
    "node",
    "-e",
    `const fs = require("fs"); for (const f of ${JSON.stringify(files)}) fs.writeFileSync(f, fs.readFileSync(f)); process.exit(${code});`,
  ];
}
const ALL_RESULTS = ["test-results/unit/math.xml", "test-results/auth.xml"];

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: gitEnv() }).trim();

function gitEnv(): NodeJS.ProcessEnv {
  return {
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ""}`,
    HOME: work,
    LANG: "C",
    GIT_CONFIG_NOSYSTEM: "1",
  };
}

interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const TSX = pathToFileURL(path.join(REPO_ROOT, "node_modules/tsx/dist/loader.mjs")).href;
const CLI = path.join(REPO_ROOT, "src/cli/main.ts");

/**
 * `mainline <args>` run in `cwd` (test/helpers/process.ts runs in the repository root). The
 * environment is built from scratch, so no CI variable of the machine running the tests leaks in.
 * In-process; `runRealIn` is the same as a real process, for the smoke tests of the entry point.
 */
function runIn(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Result> {
  return runCliInProcess(
    args,
    { ...gitEnv(), ...env },
    { cwd, replaceEnv: true, timeoutMs: 60_000 },
  );
}

function runRealIn(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", TSX, CLI, ...args], {
      cwd,
      env: { ...gitEnv(), ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("error", reject);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const remote = (args: string[], env: Record<string, string> = {}) =>
  runIn(checkout, args, { MAINLINE_URL: server.url, MAINLINE_TOKEN: TOKEN, ...env });
const remoteReal = (args: string[], env: Record<string, string> = {}) =>
  runRealIn(checkout, args, { MAINLINE_URL: server.url, MAINLINE_TOKEN: TOKEN, ...env });

function succeeded(result: Result): Result {
  expect(result.stderr).not.toMatch(/^mainline: (?!warning)/m);
  expect(result.code).toBe(0);
  return result;
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "mainline-upload-e2e-"));
  checkout = path.join(work, "app");
  mkdirSync(checkout);
  git(checkout, "init", "--quiet", "--initial-branch=main");
  git(checkout, "config", "user.name", "Ada");
  git(checkout, "config", "user.email", "ada@example.com");
  mkdirSync(path.join(checkout, ".github"));
  writeFileSync(path.join(checkout, ".github/CODEOWNERS"), "src/auth* @acme/auth\n");
  writeFileSync(path.join(checkout, "README.md"), "app\n");
  git(checkout, "add", ".");
  git(checkout, "commit", "--quiet", "-m", "First commit");
  git(checkout, "remote", "add", "origin", "https://github.com/acme/app.git");
  headSha = git(checkout, "rev-parse", "HEAD");
  mkdirSync(path.join(checkout, "test-results/unit"), { recursive: true });
  writeFileSync(path.join(checkout, "test-results/unit/math.xml"), PASSING_REPORT);
  writeFileSync(path.join(checkout, "test-results/auth.xml"), FAILING_REPORT);
  mkdirSync(path.join(checkout, "passing"));
  writeFileSync(path.join(checkout, "passing/math.xml"), PASSING_REPORT);

  database = await createTestDatabase();
  server = await startServer({
    ...database.env,
    MAINLINE_BOOTSTRAP_ORG: "acme",
    MAINLINE_BOOTSTRAP_TOKEN: TOKEN,
  });
});

afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  await (server as RunningServer | undefined)?.stop();
  await stopAllProcesses();
  await (database as TestDatabase | undefined)?.cleanup();
});

/** How many uploads the server has of a repository (github.com/acme/app unless told). */
async function uploads(repo: typeof REPO = REPO): Promise<number> {
  const listed = await post(
    server.url,
    "flaky-tests/list-uploads",
    { repo, org_url_slug: "acme", page_query: { page_size: 100 } },
    TOKEN,
  );
  expect(listed.status).toBe(200);
  return (listed.body as { page: { total_rows: number } }).page.total_rows;
}

/** get-upload's answer for an upload of github.com/acme/app. */
async function uploadOnServer(id: string | undefined): Promise<unknown> {
  const answer = await post(
    server.url,
    "flaky-tests/get-upload",
    { repo: REPO, org_url_slug: "acme", upload_id: id },
    TOKEN,
  );
  expect(answer.status).toBe(200);
  return answer.body;
}

async function bundleContents(file: string): Promise<{ meta: BundleMeta; names: string[] }> {
  let meta: BundleMeta | undefined;
  const names: string[] = [];
  for await (const entry of readBundle(createReadStream(file))) {
    names.push(entry.path);
    if (entry.kind === "meta") meta = entry.meta;
    if (entry.kind === "junit") {
      let bytes = 0;
      for await (const chunk of entry.stream) bytes += chunk.length;
      expect(bytes).toBe(entry.size);
    }
  }
  if (meta === undefined) throw new Error("no meta.json");
  return { meta, names };
}

describe("help", () => {
  it("mainline --help lists upload and test; each shows its options", async () => {
    expect((await runIn(work, ["--help"])).stdout).toMatch(/^ {2}upload .*\n(?:.*\n)*? {2}test /m);
    for (const command of ["upload", "test"]) {
      const { stdout, code } = await runIn(work, [command, "--help"]);
      expect(code).toBe(0);
      for (const option of [
        "--junit <globs...>",
        "--repo <host/owner/name>",
        "--org <slug>",
        "--commit <sha>",
        "--branch <name>",
        "--pr <number>",
        "--job-name <name>",
        "--job-url <url>",
        "--variant <variant>",
        "--codeowners <path>",
        "--dry-run",
        "--output <file>",
        "--wait",
        "MAINLINE_URL",
        "MAINLINE_TOKEN",
      ]) {
        expect(stdout).toContain(option);
      }
    }
    const test = await runIn(work, ["test", "--help"]);
    expect(test.stdout).toContain(
      "Usage: mainline test --junit <globs...> [options] -- <command...>",
    );
  });
});

describe("mainline upload --dry-run", () => {
  it("shows what would be uploaded and saves a bundle the server's reader accepts", async () => {
    const output = path.join(work, "dry.tar.gz");
    const result = succeeded(
      await runIn(checkout, [
        "upload",
        "--junit",
        "test-results/**/*.xml",
        "--org",
        "acme",
        "--dry-run",
        "--output",
        output,
        "--pr",
        "12",
        "--job-name",
        "unit tests",
      ]),
    );
    const { stdout } = result;
    expect(stdout).toContain("Dry run: nothing was uploaded.");
    expect(stdout).toMatch(/^repository +github\.com\/acme\/app$/m);
    expect(stdout).toMatch(/^organization +acme$/m);
    expect(stdout).toMatch(new RegExp(`^commit +${headSha}$`, "m"));
    expect(stdout).toMatch(/^branch +main$/m);
    expect(stdout).toMatch(/^pull request +12$/m);
    expect(stdout).toMatch(/^codeowners +\.github\/CODEOWNERS$/m);
    expect(stdout).toMatch(/^tests +5 tests \(3 passed, 1 failed, 1 skipped\)$/m);
    expect(stdout).toMatch(/^files +2$/m);
    expect(stdout).toContain("  test-results/auth.xml\n  test-results/unit/math.xml\n");

    const { meta, names } = await bundleContents(output);
    expect(names).toEqual(["meta.json", "junit/0", "junit/1", "CODEOWNERS"]);
    expect(meta).toMatchObject({
      orgSlug: "acme",
      repo: REPO,
      repoUrl: "https://github.com/acme/app.git",
      commitSha: headSha,
      branch: "main",
      commitMessage: "First commit",
      authorName: "Ada",
      prNumber: 12,
      jobName: "unit tests",
      variant: null,
    });
    expect(meta.fileSets[0]?.files.map((f) => f.originalPathRelative)).toEqual([
      "test-results/auth.xml",
      "test-results/unit/math.xml",
    ]);
  });

  it("needs no server and no token", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const result = succeeded(
      await runIn(checkout, ["upload", "--junit", "passing/*.xml", "--dry-run", "--url", url]),
    );
    expect(result.stdout).toMatch(/^organization +\(the token's/m);
    expect(result.stdout).toMatch(/^tests +3 tests/m);
  });

  it("no file matches: a one-line error and exit 1", async () => {
    const result = await runIn(checkout, ["upload", "--junit", "nowhere/**/*.xml", "--dry-run"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      `mainline: No file matches --junit 'nowhere/**/*.xml' (in ${checkout}).\n`,
    );
  });

  it("outside a git checkout --repo, --commit and --branch are asked for", async () => {
    const outside = path.join(work, "outside");
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, "r.xml"), PASSING_REPORT);
    const result = await runIn(outside, ["upload", "--junit", "r.xml", "--dry-run"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "mainline: Cannot tell the repository, commit and branch: this is not a git checkout; pass --repo <host/owner/name>, --commit <sha> and --branch <name>.\n",
    );
    const named = ["--repo", "gitlab.com/group/sub/app", "--commit", headSha];
    const withBranch = succeeded(
      await runIn(outside, [
        "upload",
        "--junit",
        "r.xml",
        "--dry-run",
        ...named,
        "--branch",
        "dev",
      ]),
    );
    expect(withBranch.stdout).toMatch(/^repository +gitlab\.com\/group\/sub\/app$/m);
    expect(withBranch.stdout).toMatch(/^branch +dev$/m);
  });
});

describe("mainline upload and test without the server's consent", () => {
  it("a wrong token: upload fails with the server's message", async () => {
    const result = await remote(["upload", "--junit", "passing/*.xml"], { MAINLINE_TOKEN: "no" });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("mainline: The API token is not valid or has been revoked.");
  });

  it("an unreachable server never changes the command's exit code", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    for (const code of [3, 0]) {
      const result = await remote([
        "test",
        "--junit",
        "test-results/**/*.xml",
        "--url",
        url,
        "--",
        ...writesReports(code, ...ALL_RESULTS),
      ]);
      expect(result.code).toBe(code);
      expect(result.stderr).toContain(
        "mainline: warning: the upload failed: Cannot reach Mainline",
      );
    }
  });

  it("a signal that ended the command: 128 + its number", async () => {
    const result = await runRealIn(checkout, [
      "test",
      "--junit",
      "passing/*.xml",
      "--dry-run",
      "--",
      "node",
      "-e",
      "process.kill(process.pid, 'SIGTERM')",
    ]);
    expect(result.code).toBe(143);
  });

  it("a command that cannot start: 127", async () => {
    const result = await runIn(checkout, [
      "test",
      "--junit",
      "passing/*.xml",
      "--dry-run",
      "--",
      "mainline-no-such-command",
      "x",
    ]);
    expect(result.code).toBe(127);
    expect(result.stderr).toContain("cannot run mainline-no-such-command (ENOENT)");
  });

  it("no report found: the command's exit code, with a warning", async () => {
    const result = await remote([
      "test",
      "--junit",
      "nowhere/*.xml",
      "--",
      "node",
      "-e",
      "process.exit(5)",
    ]);
    expect(result.code).toBe(5);
    expect(result.stderr).toContain("mainline: warning: no results uploaded: No file matches");
  });

  it("a single argument runs in a shell", async () => {
    const result = await runIn(checkout, [
      "test",
      "--junit",
      "passing/*.xml",
      "--dry-run",
      "--",
      "echo from-shell && exit 4",
    ]);
    expect(result.stdout).toContain("from-shell");
    expect(result.code).toBe(4);
  });
});

/** The upload endpoints (src/api/flakytests/) are being written at the same time as this file. */
describe("uploads to a real server", () => {
  async function upload(extra: string[] = [], run = remote): Promise<string> {
    const result = succeeded(await run(["upload", "--junit", "test-results/**/*.xml", ...extra]));
    const match =
      /^Uploaded ([0-9a-f-]{36}): 2 file\(s\), 5 tests \(3 passed, 1 failed, 1 skipped\) for github\.com\/acme\/app at [0-9a-f]{12}\.$/m.exec(
        result.stdout,
      );
    expect(match, result.stdout).not.toBeNull();
    return match?.[1] ?? "";
  }

  it("upload: createBundleUpload, PUT, then the upload is known to the server", async () => {
    // A real process: the smoke test of an upload from the entry point.
    const id = await upload([], remoteReal);
    expect(await uploadOnServer(id)).toMatchObject({ upload: { id } });
  });

  it("upload --wait: the server's processed counts", async () => {
    const result = succeeded(
      await remote([
        "upload",
        "--junit",
        "test-results/**/*.xml",
        "--wait",
        "--wait-timeout",
        "60",
      ]),
    );
    expect(result.stdout).toContain("Processed: 5 tests (3 passed, 1 failed, 1 skipped).");
  });

  it("test: a failing command whose failed test is not quarantined keeps its exit code", async () => {
    const result = await remote([
      "test",
      "--junit",
      "test-results/**/*.xml",
      "--",
      ...writesReports(3, ...ALL_RESULTS),
    ]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/^Uploaded [0-9a-f-]{36}: 2 file\(s\)/m);
    expect(result.stderr).toContain(
      `mainline: not quarantined: auth › Auth › logs in (${FAILING_ID})`,
    );
    expect(result.stderr).toContain(
      "mainline: exit code 3: 1 of 1 failed test(s) are not quarantined.",
    );
  });

  it("test: a passing command exits 0 and still uploads", async () => {
    // A real process: the command inherits its standard streams.
    const result = await remoteReal([
      "test",
      "--junit",
      "passing/*.xml",
      "--",
      ...writesReports(0, "passing/math.xml"),
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^Uploaded [0-9a-f-]{36}: 1 file\(s\), 3 tests/m);
  });

  it("test: exit 0 when every failed test is quarantined, with the ids the server computed", async () => {
    const run = (globs: string[], extra: string[] = [], written = ALL_RESULTS) =>
      remote(["test", "--junit", ...globs, ...extra, "--", ...writesReports(3, ...written)]);
    // --wait: the failed test exists on the server once its upload is processed.
    const first = await run(["test-results/**/*.xml"], ["--wait"]);
    expect(first.code).toBe(3);
    expect(first.stderr).toContain("Processed: 5 tests (3 passed, 1 failed, 1 skipped).");

    // Quarantine it through the API by the id computed here: a 200 (not a 404) shows that the
    // CLI and the server agree on test ids.
    const override = await fetch(`${server.url}/v1/flaky-tests/set-quarantine-override`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-token": TOKEN },
      body: JSON.stringify({
        repo: REPO,
        org_url_slug: "acme",
        test_id: FAILING_ID,
        override: "ALWAYS_QUARANTINE",
        reason: "known flaky login test",
      }),
    });
    expect(override.status, await override.clone().text()).toBe(200);

    const quarantined = await run(["test-results/**/*.xml"]);
    expect(quarantined.code).toBe(0);
    expect(quarantined.stderr).toContain(
      `mainline: quarantined: auth › Auth › logs in (${FAILING_ID})`,
    );
    expect(quarantined.stderr).toContain(
      "mainline: All 1 failed test(s) are quarantined. Exiting 0 instead of 3.",
    );

    // Another failure that is not quarantined: the command's exit code again.
    const more = path.join(checkout, "more");
    mkdirSync(more, { recursive: true });
    writeFileSync(
      path.join(more, "billing.xml"),
      FAILING_REPORT.replaceAll("auth", "billing").replaceAll("Auth", "Billing"),
    );
    const mixed = await run(
      ["test-results/**/*.xml", "more/*.xml"],
      [],
      [...ALL_RESULTS, "more/billing.xml"],
    );
    expect(mixed.code).toBe(3);
    expect(mixed.stderr).toContain("mainline: quarantined: auth › Auth › logs in");
    expect(mixed.stderr).toContain("mainline: not quarantined: billing › Billing › logs in");
    expect(mixed.stderr).toContain("exit code 3: 1 of 2 failed test(s) are not quarantined.");

    // A command that crashes before writing any report, beside an old report whose only failure
    // is quarantined: its own exit code stands, and the old report is not uploaded again.
    const uploadsBefore = await uploads();
    const crashed = await remote([
      "test",
      "--junit",
      "test-results/**/*.xml",
      "--",
      "node",
      "-e",
      "process.exit(2)",
    ]);
    expect(crashed.code).toBe(2);
    expect(crashed.stderr).toContain(
      "mainline: warning: no results uploaded: The command wrote no report: 2 report(s) matching --junit 'test-results/**/*.xml' predate the command",
    );
    expect(crashed.stderr).not.toMatch(/^Uploaded /m);
    expect(crashed.stderr).not.toContain("quarantined");
    expect(await uploads()).toBe(uploadsBefore);

    // One fresh report among old ones: only the fresh one is uploaded and judged.
    const partly = await run(["test-results/**/*.xml"], [], ["test-results/unit/math.xml"]);
    expect(partly.code).toBe(3);
    expect(partly.stderr).toMatch(/^Uploaded [0-9a-f-]{36}: 1 file\(s\)/m);
    expect(partly.stderr).toContain(
      "mainline: warning: 1 report(s) matching --junit 'test-results/**/*.xml' predate the command (test-results/auth.xml); they are not uploaded",
    );
    expect(partly.stderr).toContain("exit code 3: The reports hold no failed test.");
  });

  it("upload refuses files that are not JUnit XML: a line for each, and nothing is sent", async () => {
    const mixed = path.join(checkout, "mixed");
    mkdirSync(mixed, { recursive: true });
    writeFileSync(path.join(mixed, "cut.xml"), FAILING_REPORT.slice(0, 120));
    writeFileSync(path.join(mixed, "good.xml"), PASSING_REPORT);
    writeFileSync(path.join(mixed, "page.xml"), "<html><body>test results</body></html>");
    writeFileSync(path.join(mixed, "notes.xml"), "all tests passed\n");
    const before = await uploads();
    for (const extra of [[], ["--wait"], ["--dry-run"]]) {
      const result = await remote(["upload", "--junit", "mixed/*.xml", ...extra]);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr.split("\n")).toEqual([
        expect.stringMatching(
          /^mainline: mixed\/cut\.xml is not a JUnit XML report: not well-formed XML at line \d+: /,
        ),
        "mainline: mixed/notes.xml is not a JUnit XML report: not XML: the file does not start with '<'",
        "mainline: mixed/page.xml is not a JUnit XML report: root element <html> is not <testsuites> or <testsuite>",
        "mainline: Nothing was uploaded: 3 of 4 file(s) matching --junit are not JUnit XML reports (XML whose root is <testsuites> or <testsuite>).",
        "",
      ]);
    }
    expect(await uploads()).toBe(before);
  });

  it("upload: a glob that matches no file is an error, even beside one that does", async () => {
    const before = await uploads();
    const result = await remote(["upload", "--junit", "passing/*.xml", "nowhere/*.xml"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      `mainline: No file matches --junit 'nowhere/*.xml' (in ${checkout}).\n`,
    );
    expect(await uploads()).toBe(before);
  });

  it("upload outside a git checkout without --branch is refused and sends nothing", async () => {
    const outside = path.join(work, "outside-remote");
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, "r.xml"), PASSING_REPORT);
    const named = ["upload", "--junit", "r.xml", "--repo", "github.com/acme/app"];
    const before = await uploads();
    const run = (args: string[]) =>
      runIn(outside, args, { MAINLINE_URL: server.url, MAINLINE_TOKEN: TOKEN });
    const refused = await run([...named, "--commit", headSha]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      "mainline: Cannot tell the branch: this is not a git checkout; pass --branch <name>.\n",
    );
    const noCommit = await run([...named, "--branch", "main"]);
    expect(noCommit.code).toBe(1);
    expect(noCommit.stderr).toContain("pass --commit <sha>.");
    expect(await uploads()).toBe(before);
    const sent = succeeded(await run([...named, "--commit", headSha, "--branch", "main"]));
    expect(sent.stdout).toMatch(/^Uploaded [0-9a-f-]{36}: 1 file\(s\)/m);
    expect(await uploads()).toBe(before + 1);
  });

  it("test --wait: a failed upload keeps the --commit and --branch it was sent with", async () => {
    const broken = path.join(checkout, "broken");
    mkdirSync(broken, { recursive: true });
    writeFileSync(path.join(broken, "cut.xml"), FAILING_REPORT.slice(0, 120));
    const commit = "0f".repeat(20);
    const result = await remote([
      "test",
      "--junit",
      "broken/*.xml",
      "--wait",
      "--commit",
      commit,
      "--branch",
      "feature/cut",
      "--",
      ...writesReports(0, "broken/cut.xml"),
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      "mainline: warning: broken/cut.xml is not a readable JUnit report",
    );
    expect(result.stderr).toMatch(/^Processing failed: broken\/cut\.xml: /m);
    const id = /^Uploaded ([0-9a-f-]{36}): 1 file\(s\), 0 tests/m.exec(result.stderr)?.[1];
    expect(id, result.stderr).toBeDefined();
    expect(await uploadOnServer(id)).toMatchObject({
      upload: { id, state: "failed", commit_sha: commit, branch: "feature/cut", files_total: 1 },
    });
  });

  it("upload from a clone of a repository on Mainline's git host needs no --repo", async () => {
    const env = { MAINLINE_URL: server.url, MAINLINE_TOKEN: TOKEN };
    const created = await runIn(work, ["repo", "create", "acme/shop"], env);
    expect(created.code, created.stderr).toBe(0);
    const remoteUrl = created.stdout.trim();
    const clone = path.join(work, "shop");
    git(work, "clone", "--quiet", remoteUrl, clone);
    git(clone, "config", "user.name", "Ada");
    git(clone, "config", "user.email", "ada@example.com");
    writeFileSync(path.join(clone, "README.md"), "shop\n");
    git(clone, "add", ".");
    git(clone, "commit", "--quiet", "-m", "First commit");
    writeFileSync(path.join(clone, "results.xml"), PASSING_REPORT);
    const result = succeeded(
      await runIn(clone, ["upload", "--junit", "results.xml", "--wait"], env),
    );
    expect(result.stdout).toMatch(
      /^Uploaded [0-9a-f-]{36}: 1 file\(s\), 3 tests \(2 passed, 0 failed, 1 skipped\) for local\/acme\/shop at [0-9a-f]{12}\.$/m,
    );
    expect(result.stdout).toContain("Processed: 3 tests (2 passed, 0 failed, 1 skipped).");
    expect(await uploads({ host: "local", owner: "acme", name: "shop" })).toBe(1);
  });

  it("a PUT the server refuses (the URL is single-use): the server's message", async () => {
    const client = { url: server.url, token: TOKEN };
    const created = await createBundleUpload(client, { repo: REPO, org: "acme", remoteUrls: [] });
    const output = path.join(work, "again.tar.gz");
    succeeded(
      await runIn(checkout, [
        "upload",
        "--junit",
        "passing/*.xml",
        "--org",
        "acme",
        "--dry-run",
        "--output",
        output,
      ]),
    );
    expect(await putBundle(created.url, output)).toMatchObject({ id: created.id });
    const again = putBundle(created.url, output);
    await expect(again).rejects.toBeInstanceOf(CliError);
    await expect(again).rejects.toThrow(/^The server refused the bundle \(HTTP 4\d\d\): \S/);
  });
});
