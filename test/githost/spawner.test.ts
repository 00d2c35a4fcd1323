/**
 * Git commands started by the long-lived shell (src/providers/local/git/spawner.ts): output, exit
 * codes, standard input, environment and working directory arrive as a direct spawn would give
 * them, whatever the arguments hold; the server's own process never forks git; finished commands
 * leave no process behind; and a shell that dies is replaced by the next command.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/process.js";
import { runGit } from "../../src/providers/local/git/git.js";
import { GitSpawner, removeAbandoned } from "../../src/providers/local/git/spawner.js";

const spawners: GitSpawner[] = [];
const dirs: string[] = [];

function spawner(sharedEnv?: () => NodeJS.ProcessEnv): GitSpawner {
  const created = new GitSpawner(sharedEnv);
  spawners.push(created);
  return created;
}

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "mainline-spawner-"));
  dirs.push(dir);
  return dir;
}

afterEach(() => {
  for (const s of spawners.splice(0)) s.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The processes whose parent is `pid`. */
function children(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (parent === pid) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

const env = { PATH: process.env.PATH ?? "", LC_ALL: "C" };

describe("the git shell", () => {
  it("starts each command from the shared environment, read when the shell starts, with the command's own variables on top", async () => {
    let reads = 0;
    const shared = { ...env, GIT_AUTHOR_NAME: "Shared", GIT_AUTHOR_EMAIL: "shared@example.com" };
    const s = spawner(() => {
      reads++;
      return shared;
    });
    const ident = (extra: Record<string, string>) =>
      s.run({ args: ["var", "GIT_AUTHOR_IDENT"], cwd: undefined, env: extra, input: "" });
    expect((await ident({})).stdout).toMatch(/^Shared <shared@example\.com> /);
    expect((await ident({ GIT_AUTHOR_NAME: "Own" })).stdout).toMatch(/^Own <shared@example\.com> /);
    expect((await ident({})).stdout).toMatch(/^Shared </);
    expect(reads).toBe(1);
    // A new shell reads it again.
    s.stop();
    shared.GIT_AUTHOR_NAME = "Later";
    expect((await ident({})).stdout).toMatch(/^Later </);
    expect(reads).toBe(2);
  });

  it("runs git with the arguments, input, environment and directory given, in another process", async () => {
    const s = spawner();
    const hashed = await s.run({
      args: ["hash-object", "--stdin"],
      cwd: undefined,
      env,
      input: "hello\n",
    });
    expect(hashed).toEqual({
      stdout: "ce013625030ba8dba906f756967f9e9ca394464a\n",
      stderr: "",
      code: 0,
    });
    expect(s.pid).not.toBeNull();
    expect(s.pid).not.toBe(process.pid);

    const ident = await s.run({
      args: ["var", "GIT_AUTHOR_IDENT"],
      cwd: undefined,
      env: { ...env, GIT_AUTHOR_NAME: "Ada", GIT_AUTHOR_EMAIL: "ada@example.com" },
      input: "",
    });
    expect(ident.stdout).toMatch(/^Ada <ada@example\.com> \d+ [+-]\d{4}\n$/);

    const dir = tempDir();
    await s.run({ args: ["init", "--quiet", "--bare"], cwd: dir, env, input: "" });
    const where = await s.run({ args: ["rev-parse", "--git-dir"], cwd: dir, env, input: "" });
    expect(where.stdout).toBe(".\n");
  });

  it("reports a failing command's exit code and message", async () => {
    const outcome = await spawner().run({
      args: ["rev-parse", "--verify", "no-such-thing"],
      cwd: tempDir(),
      env,
      input: "",
    });
    expect(outcome.code).toBe(128);
    expect(outcome.stderr).toMatch(/not a git repository|Needed a single revision/);
  });

  it("fails the commands of a shell that died, and starts a new one for the next", async () => {
    const s = spawner();
    await s.run({ args: ["--version"], cwd: undefined, env, input: "" });
    const first = s.pid;
    // Killed while a command runs.
    const running = s.run({
      args: ["-c", "alias.wait=!sleep 30", "wait"],
      cwd: undefined,
      env,
      input: "",
    });
    process.kill(first ?? 0, "SIGKILL");
    await expect(running).rejects.toThrow(/git shell process exited/);
    const again = await s.run({ args: ["--version"], cwd: undefined, env, input: "" });
    expect(again.stdout).toMatch(/^git version /);
    expect(s.pid).not.toBe(first);
  });

  it("passes arguments, directories and values exactly, whatever they hold: nothing is interpreted", async () => {
    const s = spawner();
    const nasty = [
      "it's",
      'say "hi"',
      "$HOME `id` $(id)",
      "a;b|c&d>e<f",
      "two\nlines",
      "\\ back \\'",
      "*",
      "  spaced  ",
      "",
      "ünïcödé",
    ];
    const dir = path.join(tempDir(), "a dir with 'quotes' and $dollars");
    mkdirSync(dir);
    await s.run({ args: ["init", "--quiet"], cwd: dir, env, input: "" });
    for (const value of nasty) {
      const echoed = await s.run({
        args: [
          "-c",
          `alias.echoit=!f() { printf '%s|%s|%s' "$X" "$1" "$PWD"; }; f`,
          "echoit",
          value,
        ],
        cwd: dir,
        env: { ...env, X: value },
        input: "",
      });
      expect(echoed).toEqual({ stdout: `${value}|${value}|${dir}`, stderr: "", code: 0 });
    }
  });

  it("takes a variable away when given undefined, and refuses what it cannot run without starting anything", async () => {
    const s = spawner(() => ({ ...env, GIT_AUTHOR_NAME: "Shared" }));
    const name = (extra: Record<string, string | undefined>) =>
      s.run({
        args: ["-c", 'alias.n=!printf %s "${GIT_AUTHOR_NAME-unset}"', "n"],
        cwd: undefined,
        env: extra,
        input: "",
      });
    expect((await name({})).stdout).toBe("Shared");
    expect((await name({ GIT_AUTHOR_NAME: undefined })).stdout).toBe("unset");
    await expect(name({ "NOT-A-NAME": "x" })).rejects.toThrow(/not a variable name/);
    await expect(name({ X: "a\0b" })).rejects.toThrow(/NUL/);
    await expect(
      s.run({ args: ["--version"], cwd: path.join(tempDir(), "missing"), env, input: "" }),
    ).rejects.toThrow(/working directory does not exist/);
    // The shell is still there and well.
    expect((await s.run({ args: ["--version"], cwd: undefined, env, input: "" })).code).toBe(0);
    await waitFor(() => children(s.pid ?? 0).length === 0, "the shell's jobs reaped");
  });

  it("runs many commands at once, each answered with its own output, and leaves no process behind", async () => {
    const s = spawner();
    const inputs = Array.from({ length: 120 }, (_, k) => `blob ${String(k)}\n`.repeat(k + 1));
    const hashes = await Promise.all(
      inputs.map((input) =>
        s.run({ args: ["hash-object", "--stdin"], cwd: undefined, env, input }),
      ),
    );
    // What git computes for a blob: the SHA-1 of its header and content.
    const expected = inputs.map(
      (input) =>
        `${createHash("sha1")
          .update(`blob ${String(Buffer.byteLength(input))}\0${input}`)
          .digest("hex")}\n`,
    );
    expect(hashes.map((h) => h.stdout)).toEqual(expected);
    expect(new Set(hashes.map((h) => h.stdout)).size).toBe(inputs.length);
    // Every finished job has been reaped: the shell has no child left.
    await waitFor(() => children(s.pid ?? 0).length === 0, "the shell's jobs reaped");
  });

  it("carries large input and output whole, and an exit code as git gave it", async () => {
    const s = spawner();
    const big = `${"x".repeat(99)}\n`.repeat(30_000);
    const cat = await s.run({
      args: ["-c", "alias.cat=!cat", "cat"],
      cwd: undefined,
      env,
      input: big,
    });
    expect(cat.stdout).toBe(big);
    const small = await s.run({
      args: ["-c", "alias.cat=!cat", "cat"],
      cwd: undefined,
      env,
      input: "",
    });
    expect(small.stdout).toBe("");
    const exited = await s.run({
      args: ["-c", "alias.x=!exit 7", "x"],
      cwd: undefined,
      env,
      input: "",
    });
    expect(exited.code).toBe(7);
    const usage = await s.run({
      args: ["rev-parse", "--no-such-option-anywhere"],
      cwd: tempDir(),
      env,
      input: "",
    });
    expect(usage.code).not.toBe(0);
  });

  it("removes the scratch directories of processes that are gone, and only those", async () => {
    const parent = tempDir();
    const gone = spawn(process.execPath, ["-e", ""]);
    await new Promise((resolve) => gone.on("exit", resolve));
    const names = [
      `mainline-git-${String(gone.pid)}-abc123`,
      `mainline-git-${String(process.pid)}-def456`,
      "mainline-git-xyz789",
      "something-else",
    ];
    for (const name of names) mkdirSync(path.join(parent, name, "inner"), { recursive: true });
    removeAbandoned(parent);
    expect(readdirSync(parent).sort()).toEqual(names.slice(1).sort());
  });

  it("is what runGit uses: the hygienic environment still applies", async () => {
    const outcome = await runGit(["var", "GIT_COMMITTER_IDENT"], {
      env: { GIT_COMMITTER_DATE: "1700000000 +0000" },
    });
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toBe("Mainline <mainline@localhost> 1700000000 +0000\n");
  });
});
