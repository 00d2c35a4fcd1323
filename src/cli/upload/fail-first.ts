/**
 * `mainline test` in a localization run of a CI Mainline does not run itself (docs/fail-first.md):
 * it asks the server which tests failed in the batch run (`getFailFirstTests`) and hands them to
 * the command as `MAINLINE_FAILED_TESTS_FILE`, as the built-in runner does. Best effort: whatever
 * goes wrong is a warning, and the command runs without the file.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { RepoRef } from "../../organizations/repositories.js";
import { callApi } from "../client.js";
import { resolveContext } from "./context.js";
import type { Io, UploadFlags } from "./flow.js";
import { readGitFacts } from "./git.js";

/** The flags of `mainline test` that steer this. */
export interface FailFirstFlags extends UploadFlags {
  /** `--no-fail-first`: false. */
  failFirst?: boolean;
  /** `--fail-first-wait`: how long to wait for the batch run's results to be processed. */
  failFirstWait?: number;
}

/** What the command gets: its extra variables, and the file to remove once it ended. */
export interface FailFirstFile {
  env: Record<string, string>;
  tests: number;
  remove(): Promise<void>;
}

interface Answer {
  runId: string;
  fromRunId: string | null;
  checks: string[];
  complete: boolean;
  truncated: boolean;
  failedTestsFile: string;
  tests: unknown[];
}

/** Test branches of Mainline's hosts: GitHub's (Trunk's prefix) and the local host's. */
const TEST_BRANCH_PREFIXES = ["trunk-merge/", "mainline-merge/"];
/** A single request's limit: an unreachable server must not hold the tests up for long. */
const REQUEST_TIMEOUT_MS = 10_000;
const RETRY_MS = 1_000;

type Question = { targetBranch: string } & (
  { runId: string } | { testBranch: string; sha: string }
);

/** `trunk-merge/main/slot-0` → its target branch `main`; null for any other branch. */
export function testBranchTarget(branch: string, prefixes: readonly string[]): string | null {
  for (const prefix of prefixes) {
    if (!branch.startsWith(prefix)) continue;
    const rest = branch.slice(prefix.length);
    const cut = rest.lastIndexOf("/");
    if (cut > 0) return rest.slice(0, cut);
  }
  return null;
}

const warn = (io: Io, message: string) => io.err.write(`mainline: warning: ${message}\n`);

/**
 * The run this job belongs to, from the runner's variables (`MAINLINE_RUN_ID` and
 * `MAINLINE_TARGET_BRANCH`) or else a test branch it runs on; null outside Mainline's runs.
 */
function question(
  env: Io["env"],
  branch: string | null,
  sha: string,
  prefixes: string[],
): Question | null {
  const runId = env.MAINLINE_RUN_ID;
  const target = env.MAINLINE_TARGET_BRANCH;
  if (runId && target) return { targetBranch: target, runId };
  if (branch === null) return null;
  const targetBranch = testBranchTarget(branch, prefixes);
  return targetBranch === null ? null : { targetBranch, testBranch: branch, sha };
}

/** Fetches the failed tests when this is a localization run; undefined otherwise or on failure. */
export async function fetchFailFirst(
  flags: FailFirstFlags,
  io: Io,
): Promise<FailFirstFile | undefined> {
  // Off; or a check of the built-in runner, which gives the file itself to localization runs.
  if (flags.failFirst === false || io.env.MAINLINE_FAILED_TESTS_FILE) return undefined;
  if (io.env.MAINLINE === "true" && io.env.MAINLINE_CHECK) return undefined;
  const prefixes = [...TEST_BRANCH_PREFIXES];
  const custom = io.env.MAINLINE_GITHUB_TEST_BRANCH_PREFIX;
  if (custom) prefixes.push(custom.endsWith("/") ? custom : `${custom}/`);
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(io.env)) if (value !== undefined) env[key] = value;
  let asked: Question | null;
  let repo: RepoRef;
  try {
    // The repository, commit and branch as the upload tells them: flags, CI variables, git.
    // A run named by id needs no branch.
    const git = await readGitFacts(io.cwd, io.env);
    const context = resolveContext(flags, env, git, { branchOptional: true });
    asked = question(io.env, context.branch, context.commitSha, prefixes);
    if (asked === null) return undefined;
    repo = context.repo;
  } catch (error) {
    // Without a repository or commit there is nothing to ask about; the upload will say why.
    if (io.env.MAINLINE_RUN_ID) warn(io, `no failed tests to run first: ${messageOf(error)}`);
    return undefined;
  }
  const waitMs = (flags.failFirstWait ?? 20) * 1000;
  const deadline = Date.now() + waitMs;
  let answer: Answer;
  try {
    for (;;) {
      answer = await callApi<Answer>(
        { url: flags.url, token: flags.token },
        "getFailFirstTests",
        { repo, ...asked },
        REQUEST_TIMEOUT_MS,
      );
      if (answer.complete || answer.fromRunId === null || Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  } catch (error) {
    warn(
      io,
      `could not fetch the failed tests to run first (${messageOf(error)}); running without them`,
    );
    return undefined;
  }
  if (answer.fromRunId === null) return undefined;
  if (!answer.complete) {
    warn(
      io,
      `results of run ${answer.fromRunId} are still being processed; the ${String(answer.tests.length)} failed tests known so far are listed`,
    );
  }
  let dir: string;
  try {
    dir = await mkdtemp(path.join(tmpdir(), "mainline-fail-first-"));
    await writeFile(path.join(dir, "failed-tests.tsv"), answer.failedTestsFile);
  } catch (error) {
    warn(io, `could not write the failed-tests file (${messageOf(error)}); running without it`);
    return undefined;
  }
  const file = path.join(dir, "failed-tests.tsv");
  io.err.write(
    `mainline: run ${answer.runId} runs first what failed in run ${answer.fromRunId}: ${String(answer.tests.length)} test(s)${answer.truncated ? " (more failed)" : ""} of ${answer.checks.join(", ") || "no check"}, in ${file}\n`,
  );
  return {
    env: { MAINLINE_FAILED_TESTS_FILE: file, MAINLINE_FAIL_FIRST_CHECKS: answer.checks.join(",") },
    tests: answer.tests.length,
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
