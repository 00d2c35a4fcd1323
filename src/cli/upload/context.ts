/**
 * Which repository, commit, branch, PR and job an upload is about: flags first, then the CI
 * environment, then git. Pure: the environment and what git said are passed in.
 */
import { InvalidArgumentError } from "commander";
import {
  branchFromEnv,
  cleanBranch,
  jobNameFrom,
  jobUrlFrom,
  prNumberFrom,
  type CiEnv,
} from "../../testhealth/bundle/ci-env.js";
import { CliError } from "../client.js";
import { parseRepoArg } from "../repo-arg.js";
import { localRepositoryOfRemote, type RepoRef } from "../../organizations/repositories.js";

/** What git told about the working directory; null where git had no answer. */
export interface GitFacts {
  topLevel: string | null;
  /** `git remote get-url origin`. */
  remoteUrl: string | null;
  /** `git rev-parse HEAD`. */
  headSha: string | null;
  /** `git rev-parse --abbrev-ref HEAD`: `HEAD` when detached. */
  headBranch: string | null;
  /** First line of HEAD's commit message. */
  headSubject: string | null;
}

export const NO_GIT: GitFacts = {
  topLevel: null,
  remoteUrl: null,
  headSha: null,
  headBranch: null,
  headSubject: null,
};

/** The flags of `mainline upload` and `mainline test` that name the run. */
export interface ContextFlags {
  repo?: RepoRef | undefined;
  commit?: string | undefined;
  branch?: string | undefined;
  pr?: number | undefined;
  jobName?: string | undefined;
  jobUrl?: string | undefined;
  variant?: string | undefined;
}

export interface UploadContext {
  repo: RepoRef;
  /** The git remote's URL when known (sent as `remoteUrls` and meta.json's `repo_url`). */
  remoteUrl: string | null;
  commitSha: string;
  branch: string | null;
  prNumber: number | null;
  jobName: string | null;
  jobUrl: string | null;
  /** "" when none. */
  variant: string;
}

const SHA = /^[0-9a-f]{7,64}$/i;
/** Trunk's limit, which the server applies when it reads meta.json. */
export const VARIANT_LIMIT = 64;

/**
 * actions/checkout of a pull request checks out GitHub's merge commit, whose message is
 * `Merge <PR head> into <base>`; the test results belong to the PR's head commit (Trunk reports it
 * too). Read from the message, so it also works in a shallow clone that lacks the parents.
 */
export function githubMergeHead(subject: string | null): string | null {
  const match = /^Merge ([0-9a-f]{40}) into ([0-9a-f]{40})$/.exec(subject?.trim() ?? "");
  return match?.[1] ?? null;
}

/**
 * GitLab's merged results pipelines (Premium) test a merge commit GitLab made; the results belong
 * to the merge request's head, which GitLab names.
 */
export function gitlabMergedResultHead(env: CiEnv): string | null {
  if (env.CI_MERGE_REQUEST_EVENT_TYPE !== "merged_result") return null;
  const head = env.CI_MERGE_REQUEST_SOURCE_BRANCH_SHA?.trim() ?? "";
  return SHA.test(head) ? head : null;
}

/**
 * The project a GitLab CI job tests, as `host/group/…/project`: a merge request's target project
 * (a fork's merge request runs in the fork, whose clone is the fork), else the job's own. The
 * host is the instance's (`CI_SERVER_HOST`, with `CI_SERVER_PORT` when not the default).
 */
export function gitlabProject(env: CiEnv): RepoRef | null {
  if (env.GITLAB_CI !== "true") return null;
  const path = (env.CI_MERGE_REQUEST_PROJECT_PATH ?? env.CI_PROJECT_PATH ?? "").trim();
  let host = env.CI_SERVER_HOST?.trim() ?? "";
  if (host === "" && env.CI_SERVER_URL) {
    try {
      host = new URL(env.CI_SERVER_URL).host;
    } catch {
      host = "";
    }
  } else if (host !== "" && env.CI_SERVER_PORT && !["80", "443"].includes(env.CI_SERVER_PORT)) {
    host = `${host}:${env.CI_SERVER_PORT}`;
  }
  const cut = path.lastIndexOf("/");
  if (host === "" || cut <= 0) return null;
  return { host: host.toLowerCase(), owner: path.slice(0, cut), name: path.slice(cut + 1) };
}

/**
 * The context of an upload. Outside a git checkout the branch must be told (a flag or a CI
 * variable) unless `branchOptional`: fail-first's lookup, which finds its run by id without one.
 */
export function resolveContext(
  flags: ContextFlags,
  env: CiEnv,
  git: GitFacts,
  { branchOptional = false }: { branchOptional?: boolean } = {},
): UploadContext {
  const remoteUrl = git.remoteUrl === null ? null : withoutCredentials(git.remoteUrl);
  const commitSha =
    flags.commit ?? githubMergeHead(git.headSubject) ?? gitlabMergedResultHead(env) ?? git.headSha;
  const gitBranch = git.headBranch === "HEAD" ? null : git.headBranch; // detached
  const branch =
    cleanBranch(flags.branch ?? null) ?? branchFromEnv(env) ?? cleanBranch(gitBranch ?? null);
  if (git.topLevel === null) {
    requireFlagsOutsideGit(flags, commitSha, branch === null && !branchOptional);
  }
  const repo = flags.repo ?? gitlabProject(env) ?? repoFromRemote(remoteUrl);
  if (commitSha === null) {
    throw new CliError(
      "Cannot tell the commit: this git checkout has no commit yet; pass --commit <sha>.",
    );
  }
  if (!SHA.test(commitSha)) throw new CliError(`Not a git commit SHA: ${commitSha}`);
  const prNumber = flags.pr ?? prNumberFrom(env);
  const variant = flags.variant ?? "";
  if (variant.length > VARIANT_LIMIT) {
    throw new CliError(`--variant is longer than ${VARIANT_LIMIT} characters.`);
  }
  return {
    repo,
    remoteUrl,
    commitSha: commitSha.toLowerCase(),
    branch,
    prNumber,
    jobName: flags.jobName ?? jobNameFrom(env),
    jobUrl: flags.jobUrl ?? jobUrlFrom(env, prNumber),
    variant,
  };
}

/**
 * Outside a git checkout only flags (and, for the branch, CI variables) tell the repository,
 * commit and branch: every one of them missing is named in one error.
 */
function requireFlagsOutsideGit(
  flags: ContextFlags,
  commitSha: string | null,
  branchMissing: boolean,
): void {
  const missing: [string, string][] = [];
  if (flags.repo === undefined) missing.push(["repository", "--repo <host/owner/name>"]);
  if (commitSha === null) missing.push(["commit", "--commit <sha>"]);
  if (branchMissing) missing.push(["branch", "--branch <name>"]);
  if (missing.length === 0) return;
  const list = (words: string[]) =>
    words.length === 1 ? (words[0] ?? "") : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`;
  throw new CliError(
    `Cannot tell the ${list(missing.map(([what]) => what))}: this is not a git checkout; pass ${list(missing.map(([, flag]) => flag))}.`,
  );
}

function repoFromRemote(remoteUrl: string | null): RepoRef {
  if (remoteUrl === null) {
    throw new CliError(
      "Cannot tell the repository: no git remote `origin` here; pass --repo <host/owner/name>.",
    );
  }
  // A clone of a repository on Mainline's own git host: origin is the path `repo create` printed.
  const hosted = localRepositoryOfRemote(remoteUrl);
  if (hosted !== null) return hosted;
  const unreadable = new CliError(
    `Cannot tell the repository from the git remote ${remoteUrl}; pass --repo <host/owner/name>.`,
  );
  // Only a remote that names a host names a repository (a local path or file:// does not).
  if (!NETWORK_REMOTE.test(remoteUrl.trim()) && !SCP_REMOTE.test(remoteUrl.trim())) {
    throw unreadable;
  }
  try {
    return parseRepoArg(remoteUrl);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    throw unreadable;
  }
}

const NETWORK_REMOTE = /^(?:https?|ssh|git|git\+ssh|ssh\+git):\/\/[^/]+\//i;
const SCP_REMOTE = /^[^@/:]+@[^:/]+:/;

/**
 * The remote URL without a password or token: CI systems put their job token in it
 * (`https://gitlab-ci-token:<token>@gitlab.com/...`), and the URL is sent to the server. An
 * http(s) URL loses its whole user part; other schemes keep the user name (`ssh://git@host/...`).
 */
export function withoutCredentials(remoteUrl: string): string {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^@/]*)@(.*)$/i.exec(remoteUrl.trim());
  if (match === null) return remoteUrl.trim();
  const [, scheme = "", userInfo = "", rest = ""] = match;
  if (/^https?:\/\/$/i.test(scheme)) return `${scheme}${rest}`;
  const user = userInfo.split(":")[0] ?? "";
  return `${scheme}${user === "" ? "" : `${user}@`}${rest}`;
}

/**
 * meta.json's `envs`: the resolved PR number, job name and URL under the variables that the
 * server's reader (ci-env.ts) consults first, so that it reads exactly what was resolved here.
 * Nothing else of the environment is sent (it may hold secrets).
 */
export function metaEnvs(context: UploadContext): Record<string, string> {
  const envs: Record<string, string> = {};
  if (context.prNumber !== null) envs.TRUNK_PR_NUMBER = String(context.prNumber);
  if (context.jobName !== null) envs.JOB_NAME = context.jobName;
  if (context.jobUrl !== null) envs.JOB_URL = context.jobUrl;
  if (context.branch !== null) envs.COMMIT_BRANCH = context.branch;
  return envs;
}

/** `--commit`: a hexadecimal SHA. */
export function parseCommitArg(value: string): string {
  if (!SHA.test(value.trim())) {
    throw new InvalidArgumentError("expected a git commit SHA (7 to 64 hexadecimal digits)");
  }
  return value.trim();
}

/** `--pr`: a positive whole number. */
export function parsePrArg(value: string): number {
  const text = value.trim().replace(/^#/, "");
  if (!/^\d{1,9}$/.test(text) || Number(text) === 0) {
    throw new InvalidArgumentError("expected a pull request number, e.g. 42");
  }
  return Number(text);
}

/** `--variant`: at most 64 characters. */
export function parseVariantArg(value: string): string {
  if (value.length > VARIANT_LIMIT) {
    throw new InvalidArgumentError(`at most ${VARIANT_LIMIT} characters`);
  }
  return value;
}
