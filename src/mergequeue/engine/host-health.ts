/**
 * Whether a queue's git host answers, as the queue's driver finds it. A step that fails on a call
 * to the host (no provider for it on this server, GitHub answering 502, no answer at all) makes
 * the queue's host "unreachable": the driver says so once in the log, tries again after a backoff
 * (1 s, doubling, at most a minute) instead of stepping in a loop, and refuses the commands whose
 * callers wait for an answer, at once and for good (they are answered, so never applied later).
 * Commands nobody waits on (impacted targets, accepted submissions, the host's own notices) stay
 * in the inbox until the host answers again.
 */
import { ApiError } from "../../lib/errors.js";
import { isDatabaseUnavailable } from "../../lib/faults.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import type {
  CiProvider,
  CiRunRequest,
  GitHost,
  MergeRequest,
  PullRequestReadOptions,
  TestBranchRequest,
} from "../providers.js";
import type { CommandResult, HostTrouble } from "../records.js";
import type { InboxPayload } from "./inbox.js";

/** The first retry after a failure; each further failure doubles it, up to `MAX_RETRY_MS`. */
export const FIRST_RETRY_MS = 1_000;
export const MAX_RETRY_MS = 60_000;

/** How long the driver waits after `failures` failed attempts in a row. */
export function retryDelay(failures: number): number {
  return Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, Math.min(failures - 1, 30)), MAX_RETRY_MS);
}

/** The trouble after one more failed attempt (`previous`: the outage so far, if any). */
export function failedAttempt(
  previous: HostTrouble | null | undefined,
  error: unknown,
  now: number,
): HostTrouble {
  const failures = (previous?.failures ?? 0) + 1;
  const notConnected = error instanceof ApiError && error.code === "host_not_connected";
  const limitedUntil = rateLimitedUntil(error, now);
  return {
    state: limitedUntil === undefined ? "unreachable" : "rate_limited",
    code: notConnected ? "host_not_connected" : "unavailable",
    since: previous?.since ?? now,
    message: describeFailure(error),
    // A rate limit says when it ends: asking before is refused again.
    retryAt: Math.max(now + retryDelay(failures), limitedUntil ?? 0),
    failures,
  };
}

/**
 * When a host's rate limit that refused a call ends, if that is why it failed: HTTP's 429 or a
 * 403 with `Retry-After`, or with no requests left until `X-RateLimit-Reset` (GitHub's way).
 */
export function rateLimitedUntil(error: unknown, now: number): number | undefined {
  const failure = error as {
    status?: unknown;
    response?: { headers?: Record<string, string | number | undefined> };
  } | null;
  const status = failure?.status;
  if (status !== 403 && status !== 429) return undefined;
  const headers = failure?.response?.headers ?? {};
  const retryAfter = Number(headers["retry-after"]);
  if (headers["retry-after"] !== undefined && Number.isFinite(retryAfter)) {
    return now + Math.max(0, retryAfter) * 1000;
  }
  const reset = Number(headers["x-ratelimit-reset"]);
  if (String(headers["x-ratelimit-remaining"]) === "0" && Number.isFinite(reset)) {
    return Math.max(now, reset * 1000);
  }
  return status === 429 ? now + FIRST_RETRY_MS : undefined;
}

/**
 * A failure in one line: its message, or the HTTP status where the message is a page (GitHub's
 * 502 answers are HTML), at most 300 characters.
 */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const status = (error as { status?: unknown } | null)?.status;
  const text =
    /^\s*</.test(message) && typeof status === "number"
      ? `it answered HTTP ${String(status)}`
      : message.replace(/\s+/g, " ").trim();
  return text.length > 300 ? `${text.slice(0, 299)}…` : text;
}

/** Seconds until the driver tries the host again, at least 1 (for `Retry-After`). */
export function retryAfterSeconds(trouble: HostTrouble, now: number): number {
  return Math.max(1, Math.ceil((trouble.retryAt - now) / 1000));
}

/** The answer to a command refused because the queue's host cannot be reached. */
export function refusal(
  trouble: HostTrouble,
  host: string,
  now: number,
): Extract<CommandResult, { ok: false }> {
  if (trouble.code === "host_not_connected") {
    return { ok: false, code: "host_not_connected", message: trouble.message };
  }
  const seconds = retryAfterSeconds(trouble, now);
  return {
    ok: false,
    code: "unavailable",
    message: `The merge queue cannot reach ${host} (${trouble.message}); nothing was changed. Retry in ${String(seconds)} s: the queue tries ${host} again then.`,
    retryAfterSeconds: seconds,
  };
}

/**
 * Whether a stored command is one whose caller waits for the driver's answer (`execute`), and may
 * so be refused: submissions not already acknowledged, cancellations, restarts. The rest stays in
 * the inbox for when the host answers.
 */
export function refusable(payload: InboxPayload): boolean {
  switch (payload.type) {
    case "submit":
      return !("acknowledged" in payload);
    case "cancel":
    case "restart":
      return true;
    default:
      return false;
  }
}

/**
 * The git host and CI of one step, telling which failures came from them and whether any call
 * answered: the same calls, the same errors.
 */
export class HostCalls {
  /** Calls that answered. */
  answered = 0;
  private readonly failures = new WeakSet<object>();
  readonly gitHost: GitHost;
  readonly ci: CiProvider;

  constructor(gitHost: GitHost, ci: CiProvider) {
    const track = <T>(call: () => Promise<T>): Promise<T> =>
      call().then(
        (value) => {
          this.answered += 1;
          return value;
        },
        (error: unknown) => {
          if (typeof error === "object" && error !== null) this.failures.add(error);
          throw error;
        },
      );
    this.gitHost = {
      pullRequest: (repo: OwnedRepoRef, number: number, options?: PullRequestReadOptions) =>
        track(() => gitHost.pullRequest(repo, number, options)),
      branchHead: (repo: OwnedRepoRef, branch: string) =>
        track(() => gitHost.branchHead(repo, branch)),
      createTestBranch: (request: TestBranchRequest) =>
        track(() => gitHost.createTestBranch(request)),
      deleteTestBranch: (repo: OwnedRepoRef, branch: string) =>
        track(() => gitHost.deleteTestBranch(repo, branch)),
      merge: (request: MergeRequest) => track(() => gitHost.merge(request)),
      readFile: (repo: OwnedRepoRef, sha: string, path: string) =>
        track(() => gitHost.readFile(repo, sha, path)),
    };
    this.ci = {
      start: (request: CiRunRequest) => track(() => ci.start(request)),
      cancel: (queueId: string, runId: string) => track(() => ci.cancel(queueId, runId)),
      onResult: (listener) => ci.onResult(listener),
    };
  }

  /**
   * Whether a step failed because the host did: the error (or one it wraps) is one a call to the
   * host failed with, and not the database being away (a host served from the database).
   */
  caused(error: unknown): boolean {
    if (isDatabaseUnavailable(error)) return false;
    for (let current = error, depth = 0; depth < 5; depth++) {
      if (typeof current !== "object" || current === null) return false;
      if (this.failures.has(current)) return true;
      current = (current as { cause?: unknown }).cause;
    }
    return false;
  }
}
