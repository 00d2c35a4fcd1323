/**
 * Git commands started by the helper process (src/providers/local/git/spawner.ts): output, exit codes,
 * standard input, environment and working directory arrive as a direct spawn would give them, the
 * server's own process never forks git, and a helper that dies is replaced by the next command.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runGit } from "../../src/providers/local/git/git.js";
import { GitSpawner } from "../../src/providers/local/git/spawner.js";

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

const env = { PATH: process.env.PATH ?? "", LC_ALL: "C" };

describe("the git helper process", () => {
  it("starts each command from the shared environment, read when the helper starts, with the command's own variables on top", async () => {
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
    // A new helper reads it again.
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
      signal: null,
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

  it("fails the commands of a helper that died, and starts a new one for the next", async () => {
    const s = spawner();
    await s.run({ args: ["--version"], cwd: undefined, env, input: "" });
    const first = s.pid;
    // Killed while a command waits for input that never ends (git reads stdin until EOF: the
    // helper ends it, so use a command that runs long instead).
    const running = s.run({
      args: ["-c", "alias.wait=!sleep 30", "wait"],
      cwd: undefined,
      env,
      input: "",
    });
    process.kill(first ?? 0, "SIGKILL");
    await expect(running).rejects.toThrow(/git helper process exited/);
    const again = await s.run({ args: ["--version"], cwd: undefined, env, input: "" });
    expect(again.stdout).toMatch(/^git version /);
    expect(s.pid).not.toBe(first);
  });

  it("is what runGit uses: the hygienic environment still applies", async () => {
    const outcome = await runGit(["var", "GIT_COMMITTER_IDENT"], {
      env: { GIT_COMMITTER_DATE: "1700000000 +0000" },
    });
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toBe("Mainline <mainline@localhost> 1700000000 +0000\n");
  });
});
