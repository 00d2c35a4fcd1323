/**
 * The uploader where it is needed. `npm pack` makes a tarball (its `prepare` builds dist/,
 * including the single-file uploader) that installs into another project elsewhere on the
 * machine, where `mainline upload` sends results to a real server. And a CI-like shell with
 * nothing but `node` (no npm, no git, no curl, an empty directory) fetches the single file from
 * that server and uploads with it; the server processes both uploads. Both uploaders also run on
 * Node.js 20 (CI images are slow to move), where the service itself refuses to start, saying why.
 */
import { execFile, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { isBuiltin } from "node:module";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { node20 } from "../helpers/old-node.js";
import {
  REPO_ROOT,
  startServer,
  stopAllProcesses,
  type RunningServer,
} from "../helpers/process.js";
import { post } from "../cli/support.js";

const run = promisify(execFile);
const TOKEN = randomBytes(32).toString("hex");

const REPORT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="cart" file="src/cart.test.js">
    <testcase name="adds an item" classname="Cart" time="0.01"/>
    <testcase name="removes an item" classname="Cart" time="0.02">
      <failure message="expected 0, got 1">at remove (cart.js:9)</failure>
    </testcase>
  </testsuite>
</testsuites>`;

/** The README's fetch of the uploader with nothing but node (also in docs: keep them equal). */
const FETCH_UPLOADER = `fetch(process.env.MAINLINE_URL + "/uploader/mainline-upload.mjs").then(async (r) => { if (!r.ok) throw new Error("HTTP " + r.status); require("fs").writeFileSync("mainline-upload.mjs", Buffer.from(await r.arrayBuffer())); })`;

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program with exactly `env` (nothing inherited), in `cwd`. */
function runWith(
  program: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let work: string;
let tarball: string;
let oldNode: string;
let database: TestDatabase;
let server: RunningServer;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "mainline-package-"));
  // The real thing: npm's own pack, with its lifecycle scripts (prepare builds dist/).
  await run("npm", ["pack", "--pack-destination", work, "--silent"], {
    cwd: REPO_ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  const packed = readdirSync(work).filter((f) => f.endsWith(".tgz"));
  expect(packed).toHaveLength(1);
  tarball = path.join(work, packed[0] ?? "");
  oldNode = node20();

  database = await createTestDatabase();
  server = await startServer({
    ...database.env,
    MAINLINE_BOOTSTRAP_ORG: "acme",
    MAINLINE_BOOTSTRAP_TOKEN: TOKEN,
  });
}, 600_000);

afterAll(async () => {
  await (server as RunningServer | undefined)?.stop();
  await stopAllProcesses();
  await (database as TestDatabase | undefined)?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

async function uploadsOf(name: string): Promise<{ state: string }[]> {
  const answer = await post(
    server.url,
    "flaky-tests/list-uploads",
    {
      repo: { host: "github.com", owner: "acme", name },
      org_url_slug: "acme",
      page_query: { page_size: 10 },
    },
    TOKEN,
  );
  expect(answer.status).toBe(200);
  return (answer.body as { uploads: { state: string }[] }).uploads;
}

describe("the npm package", () => {
  it("holds bin/, dist/ and the single-file uploader, and no sources or tests", async () => {
    const { stdout } = await run("tar", ["tzf", tarball], { maxBuffer: 16 * 1024 * 1024 });
    const files = stdout.split("\n").filter((f) => f !== "");
    expect(files).toContain("package/bin/mainline.js");
    expect(files).toContain("package/dist/cli/main.js");
    expect(files).toContain("package/dist/uploader/mainline-upload.mjs");
    // The dashboard's static files, built with their manifest (no island sources).
    expect(files).toContain("package/dist/assets/manifest.json");
    expect(
      files.filter((f) => /^package\/dist\/assets\/app\.[0-9a-f]{12}\.css$/.test(f)),
    ).toHaveLength(1);
    expect(
      files.filter((f) => /^package\/dist\/assets\/live-queue\.[0-9a-f]{12}\.js$/.test(f)),
    ).toHaveLength(1);
    expect(files.filter((f) => f.includes("/islands/"))).toEqual([]);
    expect(files.filter((f) => /^package\/(src|test|scripts|bench)\//.test(f))).toEqual([]);
  });

  it("installs into another project, where `mainline upload` uploads to the server", async () => {
    const project = path.join(work, "user-project");
    mkdirSync(path.join(project, "reports"), { recursive: true });
    writeFileSync(
      path.join(project, "package.json"),
      JSON.stringify({ name: "user-project", version: "1.0.0", private: true }),
    );
    // From npm's cache where it can; install scripts are not needed to upload (no database here).
    await run(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball],
      { cwd: project, maxBuffer: 16 * 1024 * 1024 },
    );
    const git = (...args: string[]) =>
      run("git", args, { cwd: project, env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" } });
    await git("init", "--quiet", "--initial-branch=main");
    await git(
      "-c",
      "user.name=Ada",
      "-c",
      "user.email=ada@example.com",
      "commit",
      "--quiet",
      "--allow-empty",
      "-m",
      "first",
    );
    await git("remote", "add", "origin", "https://github.com/acme/shop.git");
    writeFileSync(path.join(project, "reports/junit.xml"), REPORT);

    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "",
      HOME: work,
      MAINLINE_URL: server.url,
      MAINLINE_TOKEN: TOKEN,
    };
    const result = await runWith(
      path.join(project, "node_modules/.bin/mainline"),
      ["upload", "--junit", "reports/*.xml", "--wait"],
      project,
      env,
    );
    expect(result.stderr).not.toMatch(/^mainline: (?!warning)/m);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("for github.com/acme/shop at");
    expect(result.stdout).toContain("Processed: 2 tests (1 passed, 1 failed, 0 skipped).");
    expect((await uploadsOf("shop")).map((u) => u.state)).toEqual(["processed"]);

    // The same installed uploader on Node.js 20.
    const bin = path.join(project, "node_modules/mainline/bin/mainline.js");
    const onOldNode = await runWith(
      oldNode,
      [bin, "upload", "--junit", "reports/*.xml", "--repo", "github.com/acme/shop20", "--wait"],
      project,
      env,
    );
    expect(onOldNode.stderr).not.toMatch(/^mainline: (?!warning)/m);
    expect(onOldNode.code).toBe(0);
    expect(onOldNode.stdout).toContain("Processed: 2 tests (1 passed, 1 failed, 0 skipped).");
    expect((await uploadsOf("shop20")).map((u) => u.state)).toEqual(["processed"]);
  }, 300_000);

  it("on Node.js 20 the service refuses to start: exit 2, why and what to do, nothing created", async () => {
    const project = path.join(work, "user-project");
    const dataDir = path.join(work, "node20-data");
    const result = await runWith(
      oldNode,
      [path.join(project, "node_modules/mainline/bin/mainline.js"), "serve"],
      project,
      { PATH: process.env.PATH ?? "", HOME: work, MAINLINE_DATA_DIR: dataDir, PORT: "0" },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("needs Node.js 22.12 or newer (24 LTS recommended)");
    expect(result.stderr).toContain(`it runs on Node.js 20.`);
    expect(result.stderr).toContain(oldNode);
    expect(result.stderr).toContain("https://nodejs.org/");
    expect(result.stderr).not.toMatch(/Segmentation|Assertion failed|at .*\.js:\d+/);
    expect(readdirSync(work)).not.toContain("node20-data");
  }, 60_000);
});

describe("the dashboard's files in the installed package", () => {
  it("are read from dist/assets/ without any build tool", async () => {
    const project = path.join(work, "user-project");
    const catalog = path.join(project, "node_modules/mainline/dist/web/assets/catalog.js");
    const script = `const { assetCatalog } = await import(${JSON.stringify(catalog)});
const c = await assetCatalog();
console.log(JSON.stringify(c.pageAssets(["live-queue"])));`;
    // Only node: no esbuild (a development dependency) is installed there.
    const result = await runWith(process.execPath, ["--input-type=module", "-e", script], project, {
      PATH: process.env.PATH ?? "",
      HOME: work,
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const assets = JSON.parse(result.stdout) as { styles: string[]; scripts: string[] };
    expect(assets.styles).toEqual([expect.stringMatching(/^\/assets\/app\.[0-9a-f]{12}\.css$/)]);
    // The confirmation island is on every page, before the page's own.
    expect(assets.scripts).toEqual([
      expect.stringMatching(/^\/assets\/confirm\.[0-9a-f]{12}\.js$/),
      expect.stringMatching(/^\/assets\/live-queue\.[0-9a-f]{12}\.js$/),
    ]);
  });
});

describe("GET /uploader/mainline-upload.mjs", () => {
  it("hands out the built file without a token, with its version and SHA-256", async () => {
    const response = await fetch(`${server.url}/uploader/mainline-upload.mjs`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/javascript/);
    const body = Buffer.from(await response.arrayBuffer());
    const built = readFileSync(path.join(REPO_ROOT, "dist/uploader/mainline-upload.mjs"));
    expect(body.equals(built)).toBe(true);
    const sha256 = createHash("sha256").update(body).digest("hex");
    expect(response.headers.get("x-mainline-uploader-sha256")).toBe(sha256);
    const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
      version: string;
    };
    expect(response.headers.get("x-mainline-version")).toBe(version);
    const again = await fetch(`${server.url}/uploader/mainline-upload.mjs`, {
      headers: { "if-none-match": response.headers.get("etag") ?? "" },
    });
    expect(again.status).toBe(304);
  });

  it("is one file that imports nothing but Node's own modules", () => {
    const text = readFileSync(path.join(REPO_ROOT, "dist/uploader/mainline-upload.mjs"), "utf8");
    const specifiers = [
      ...text.matchAll(/\bfrom\s*"([^"]+)"/g),
      ...text.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g),
      ...text.matchAll(/\brequire\(\s*"([^"]+)"\s*\)/g),
    ].map((match) => match[1] ?? "");
    expect(specifiers.length).toBeGreaterThan(5);
    expect(specifiers.filter((s) => !isBuiltin(s))).toEqual([]);
  });

  it.each([
    ["this Node.js", "ci", () => process.execPath],
    ["Node.js 20", "ci20", () => oldNode],
  ])(
    "a CI shell with only node (%s) fetches it and uploads with it; the upload is processed",
    async (_, repo, node) => {
      const job = path.join(work, `${repo}-job`);
      const bin = path.join(work, `${repo}-bin`);
      mkdirSync(job);
      mkdirSync(bin);
      symlinkSync(node(), path.join(bin, "node"));
      const env = { PATH: bin, HOME: job, MAINLINE_URL: server.url, MAINLINE_TOKEN: TOKEN };
      expect(readdirSync(job)).toEqual([]);

      // The README's line for a runner without curl: node fetches the file itself.
      const fetched = await runWith("node", ["-e", FETCH_UPLOADER], job, env);
      expect(fetched.stderr).toBe("");
      expect(fetched.code).toBe(0);
      expect(readdirSync(job)).toEqual(["mainline-upload.mjs"]);
      writeFileSync(path.join(job, "junit.xml"), REPORT);

      const result = await runWith(
        "node",
        [
          "mainline-upload.mjs",
          "upload",
          "--junit",
          "junit.xml",
          "--repo",
          `github.com/acme/${repo}`,
          "--commit",
          "0123456789abcdef0123456789abcdef01234567",
          "--branch",
          "main",
          "--wait",
        ],
        job,
        env,
      );
      expect(result.stderr).not.toMatch(/^mainline: (?!warning)/m);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain("Processed: 2 tests (1 passed, 1 failed, 0 skipped).");
      expect((await uploadsOf(repo)).map((u) => u.state)).toEqual(["processed"]);
    },
    120_000,
  );
});
