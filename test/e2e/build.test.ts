/**
 * `npm start` builds only when the sources changed since the last build (scripts/build.mjs
 * --if-stale): in a copy of the repository's build inputs, one real build, then a start that
 * builds nothing and leaves dist/ as it was, then an edited source that makes dist/ stale.
 */
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, statSync, symlinkSync, appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/process.js";

const run = promisify(execFile);
let root: string;

const build = (...args: string[]) =>
  run(process.execPath, [path.join(root, "scripts/build.mjs"), ...args], {
    cwd: root,
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (error: unknown) => error as { code: number; stdout: string },
  );

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), "mainline-build-"));
  for (const input of ["src", "scripts", "tsconfig.json", "tsconfig.build.json"]) {
    cpSync(path.join(REPO_ROOT, input), path.join(root, input), { recursive: true });
  }
  cpSync(path.join(REPO_ROOT, "package.json"), path.join(root, "package.json"));
  cpSync(path.join(REPO_ROOT, "package-lock.json"), path.join(root, "package-lock.json"));
  symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(root, "node_modules"));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe("scripts/build.mjs", () => {
  it("builds once; --if-stale then starts at once; an edited source makes dist/ stale", async () => {
    expect((await build("--check")).code).toBe(1);
    const first = await build("--if-stale");
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("building dist/ on Node.js");
    const main = path.join(root, "dist/cli/main.js");
    const builtAt = statSync(main).mtimeMs;

    const again = await build("--if-stale");
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("dist/ is up to date; starting on Node.js");
    expect(again.stdout).not.toContain("building");
    expect(statSync(main).mtimeMs).toBe(builtAt);
    expect((await build("--check")).code).toBe(0);

    appendFileSync(path.join(root, "src/version.ts"), "\n// edited\n");
    const stale = await build("--check");
    expect(stale.code).toBe(1);
    expect(stale.stdout).toContain("stale");
  }, 240_000);
});
