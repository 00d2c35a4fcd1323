/**
 * The one way Mainline runs git: an argument list (never a shell, so names and paths are never
 * interpreted), in a hygienic environment (no machine or user git configuration, no git variables
 * inherited from a hook), started by the helper process of `spawner.ts`.
 */
import { GitSpawner } from "./spawner.js";

export interface GitOptions {
  /** The repository (`--git-dir`); omit to let git discover it from `cwd`. */
  gitDir?: string;
  cwd?: string;
  /** Written to the command's standard input. */
  input?: string;
  /** Extra variables, on top of the hygienic environment. */
  env?: Record<string, string>;
}

export interface GitOutput {
  stdout: string;
  stderr: string;
  code: number;
}

/** Options that keep git from running hooks from a repository or working tree. */
export const NO_HOOKS = ["-c", "core.hooksPath=/dev/null"] as const;

/** Who commits when Mainline makes a commit (test merges, merge and squash commits, rebases). */
export const MAINLINE_IDENTITY = { name: "Mainline", email: "mainline@localhost" } as const;

/** A git command exited with a code its caller did not expect. */
export class GitError extends Error {
  readonly args: readonly string[];
  readonly code: number;
  readonly stderr: string;

  constructor(args: readonly string[], code: number, stderr: string) {
    super(`git ${args.join(" ")} exited with ${String(code)}: ${stderr.trim()}`);
    this.name = "GitError";
    this.args = args;
    this.code = code;
    this.stderr = stderr;
  }
}

/**
 * The environment every command starts from: the inherited one without `GIT_*` (a hook's `GIT_DIR`
 * would redirect every command), plus the settings that keep git's behaviour Mainline's own. Read
 * when the helper process starts (see `GitSpawner`); a command's own variables go on top.
 */
function hygienicEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("GIT_")) env[name] = value;
  }
  return {
    ...env,
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_AUTHOR_NAME: MAINLINE_IDENTITY.name,
    GIT_AUTHOR_EMAIL: MAINLINE_IDENTITY.email,
    GIT_COMMITTER_NAME: MAINLINE_IDENTITY.name,
    GIT_COMMITTER_EMAIL: MAINLINE_IDENTITY.email,
  };
}

/** Starts every git command of this process (one helper process, started on first use). */
const spawner = new GitSpawner(hygienicEnv);

/** Runs git and reports how it ended, whatever the exit code. */
export async function runGit(
  args: readonly string[],
  options: GitOptions = {},
): Promise<GitOutput> {
  const fullArgs =
    options.gitDir === undefined ? [...args] : ["--git-dir", options.gitDir, ...args];
  // A command that exits without reading its input is not an error here (the helper ignores it).
  const outcome = await spawner.run({
    args: fullArgs,
    cwd: options.cwd,
    env: options.env ?? {},
    input: options.input ?? "",
  });
  return {
    stdout: outcome.stdout,
    stderr: outcome.stderr + (outcome.signal ? `killed by ${outcome.signal}` : ""),
    code: outcome.code ?? -1,
  };
}

/** Runs git and throws a `GitError` unless it exits with one of `expectedCodes`. */
export async function git(
  args: readonly string[],
  options: GitOptions = {},
  expectedCodes: readonly number[] = [0],
): Promise<GitOutput> {
  const output = await runGit(args, options);
  if (!expectedCodes.includes(output.code)) throw new GitError(args, output.code, output.stderr);
  return output;
}
