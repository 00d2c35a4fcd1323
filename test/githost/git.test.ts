import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GitError, git, runGit } from "../../src/providers/local/git/git.js";

const inherited = process.env.GIT_DIR;

afterEach(() => {
  if (inherited === undefined) Reflect.deleteProperty(process.env, "GIT_DIR");
  else process.env.GIT_DIR = inherited;
});

describe("git runner", () => {
  it("passes input and reports output and exit code", async () => {
    const output = await runGit(["hash-object", "--stdin"], { input: "hello\n" });
    expect(output).toEqual({
      stdout: "ce013625030ba8dba906f756967f9e9ca394464a\n",
      stderr: "",
      code: 0,
    });
  });

  it("throws a GitError with the arguments, code and stderr on an unexpected exit", async () => {
    const error: unknown = await git(["rev-parse", "--verify", "nope"], {
      gitDir: "/nonexistent",
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitError);
    expect(error).toMatchObject({ args: ["rev-parse", "--verify", "nope"], code: 128 });
    expect((error as GitError).stderr).toContain("not a git repository");
    await expect(
      git(["rev-parse", "--verify", "--quiet", "HEAD"], { gitDir: "/nonexistent" }, [128]),
    ).resolves.toMatchObject({ code: 128 });
  });

  it("ignores git variables the process inherited, and commits as Mainline", async () => {
    const repository = mkdtempSync(join(tmpdir(), "mainline-git-"));
    try {
      await git(["init", "--quiet", "--bare", repository]);
      process.env.GIT_DIR = "/nonexistent";
      const { stdout } = await git(["rev-parse", "--absolute-git-dir"], { cwd: repository });
      expect(stdout.trim()).toBe(realpathSync(repository));
      const ident = await git(["var", "GIT_AUTHOR_IDENT"], {
        env: { GIT_AUTHOR_DATE: "1000000000 +0000" },
      });
      expect(ident.stdout).toBe("Mainline <mainline@localhost> 1000000000 +0000\n");
    } finally {
      rmSync(repository, { recursive: true, force: true });
    }
  });
});
