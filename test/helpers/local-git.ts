import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/** Plain git, as a person runs it, but blind to this machine's and user's configuration. */
export function plainGit(cwd: string, args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
  }).trim();
}

export function temporaryDirectory(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `mainline-${prefix}-`));
}

export interface Person {
  name: string;
  email: string;
}

export const DEVELOPER: Person = { name: "Dev Eloper", email: "dev@example.com" };

/** A working clone of a hosted repository where a test commits and pushes like a developer. */
export class WorkingClone {
  private constructor(readonly dir: string) {}

  static of(remote: string, dir: string): WorkingClone {
    plainGit(dirname(dir), ["clone", "--quiet", remote, dir]);
    return new WorkingClone(dir);
  }

  git(...args: string[]): string {
    return plainGit(this.dir, args);
  }

  /**
   * Commits `files` (null deletes one) on `branch`, started at `from` when given, and returns the
   * new commit. The first commit of an empty clone goes on the branch its unborn HEAD names.
   */
  commit(change: {
    branch: string;
    from?: string;
    files: Record<string, string | null>;
    message?: string;
    author?: Person;
  }): string {
    if (change.from === undefined) {
      if (this.git("symbolic-ref", "--short", "HEAD") !== change.branch) {
        this.git("checkout", "--quiet", change.branch);
      }
    } else this.git("checkout", "--quiet", "-B", change.branch, change.from);
    for (const [path, content] of Object.entries(change.files)) {
      const file = join(this.dir, path);
      if (content === null) {
        rmSync(file);
      } else {
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, content);
      }
    }
    this.git("add", "--all");
    const author = change.author ?? DEVELOPER;
    const identity = ["-c", `user.name=${author.name}`, "-c", `user.email=${author.email}`];
    plainGit(this.dir, [...identity, "commit", "--quiet", "-m", change.message ?? "change"]);
    return this.git("rev-parse", "HEAD");
  }

  push(...args: string[]): void {
    this.git("push", "--quiet", "origin", ...args);
  }
}
