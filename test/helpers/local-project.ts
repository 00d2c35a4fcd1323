/**
 * A small project in a real git repository, pushed to Mainline's local git host, with branches
 * for pull requests: what the end-to-end merge-queue tests (and the quickstart) work with.
 */
import { execFile } from "node:child_process";
import { mkdtemp, mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

const IDENTITY = {
  GIT_AUTHOR_NAME: "Dev",
  GIT_AUTHOR_EMAIL: "dev@example.com",
  GIT_COMMITTER_NAME: "Dev",
  GIT_COMMITTER_EMAIL: "dev@example.com",
  GIT_CONFIG_NOSYSTEM: "1",
};

/** Runs git in `cwd` and answers its standard output, trimmed. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run("git", args, {
    cwd,
    env: { ...process.env, ...IDENTITY },
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.trim();
}

async function write(dir: string, files: Record<string, string>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
}

/** A `.mainline.yml` with one check, `test`, running `run`. */
export function mainlineYml(run: string, extra: string[] = ["      timeout_minutes: 2"]): string {
  return ["ci:", "  checks:", "    - name: test", `      run: ${run}`, ...extra, ""].join("\n");
}

/** The project: numbers that must all be whole numbers, checked by `test.sh`. */
export const PROJECT_FILES: Record<string, string> = {
  ".mainline.yml": mainlineYml("sh test.sh"),
  "test.sh": [
    "#!/bin/sh",
    "# Every file in numbers/ must hold a whole number.",
    "for f in numbers/*.txt; do",
    '  case "$(cat "$f")" in',
    "    ''|*[!0-9]*) echo \"not a whole number: $f\"; exit 1;;",
    "  esac",
    "done",
    'echo "all numbers are whole"',
    "",
  ].join("\n"),
  "numbers/base.txt": "1\n",
  "shared.txt": "the first line\n",
};

export interface LocalProject {
  /** The working clone. */
  dir: string;
  remote: string;
  /** Commits `files` on a new branch from `main` and pushes it. */
  branch(name: string, files: Record<string, string>, message?: string): Promise<string>;
  /** Commits on `main` and pushes it (an outside push to the target branch). */
  pushToMain(files: Record<string, string>, message: string): Promise<string>;
  /** Brings the clone's `main` to the remote's (after the queue merged into it). */
  syncMain(): Promise<void>;
  /** Fetches and answers the subjects of `main`'s first-parent history, oldest first. */
  mainHistory(): Promise<string[]>;
  /** Every branch of the remote. */
  remoteBranches(): Promise<string[]>;
}

/** Creates the working clone, commits the project and pushes `main` to `remote`. */
export async function createLocalProject(
  remote: string,
  files: Record<string, string> = PROJECT_FILES,
): Promise<LocalProject> {
  const dir = await mkdtemp(path.join(tmpdir(), "mainline-project-"));
  await git(dir, "init", "--quiet", "--initial-branch=main");
  await write(dir, files);
  await git(dir, "add", "-A");
  await git(dir, "commit", "--quiet", "-m", "Start the project");
  await git(dir, "push", "--quiet", remote, "main");
  const syncMain = async () => {
    await git(dir, "fetch", "--quiet", remote, "main");
    await git(dir, "reset", "--quiet", "--hard", "FETCH_HEAD");
  };
  return {
    dir,
    remote,
    async branch(name, changes, message = `Change ${name}`) {
      await git(dir, "checkout", "--quiet", "-b", name, "main");
      await write(dir, changes);
      await git(dir, "add", "-A");
      await git(dir, "commit", "--quiet", "-m", message);
      await git(dir, "push", "--quiet", remote, name);
      const sha = await git(dir, "rev-parse", "HEAD");
      await git(dir, "checkout", "--quiet", "main");
      return sha;
    },
    syncMain,
    async pushToMain(changes, message) {
      await syncMain();
      await write(dir, changes);
      await git(dir, "add", "-A");
      await git(dir, "commit", "--quiet", "-m", message);
      await git(dir, "push", "--quiet", remote, "main");
      return git(dir, "rev-parse", "HEAD");
    },
    async mainHistory() {
      const log = await git(remote, "log", "--first-parent", "--reverse", "--format=%s", "main");
      return log.split("\n");
    },
    async remoteBranches() {
      const refs = await git(remote, "for-each-ref", "--format=%(refname:short)", "refs/heads");
      return refs === "" ? [] : refs.split("\n");
    },
  };
}

/** Runs the project's tests at `main`'s head of `remote` in a fresh clone; answers the exit code. */
export async function testsPassAtMain(remote: string): Promise<boolean> {
  const dir = await mkdtemp(path.join(tmpdir(), "mainline-check-"));
  await git(dir, "clone", "--quiet", "--branch", "main", remote, ".");
  try {
    await run("sh", ["test.sh"], { cwd: dir });
    return true;
  } catch {
    return false;
  }
}
