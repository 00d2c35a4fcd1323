/**
 * When a request of one installation goes out to GitHub (docs/github.md, "Rate limits and write
 * lanes"). Writes go in two lanes, one request in flight each, spaced: the queue's own writes
 * (refs, `/merges`, pull request merges and test pull requests) and what the team sees (comments,
 * check runs, labels, reactions), so that a merge never waits behind a comment edit. Both lanes
 * share GitHub's budget of content-creating requests (80 a minute), of which the presentation
 * lane may take only part. A rate limit, secondary or primary, pauses every request of the
 * installation, reads included, until GitHub's `retry-after` or `x-ratelimit-reset`; a request
 * that would wait longer than the caller accepts is answered at once, as GitHub would answer it,
 * without being sent.
 */
import { SECOND_MS, MINUTE_MS } from "../../lib/time.js";

export type WriteLane = "queue" | "presentation";

/** An installation held back by GitHub's rate limit. */
export interface RateLimitPause {
  kind: "secondary" | "primary";
  /** Until when (ms since the epoch). */
  until: number;
  /** Since when (ms since the epoch): the first limit of a run of them. */
  since: number;
}

export interface RequestGateOptions {
  /** Least time between two writes of one lane (0: a stand-in of GitHub, no spacing or budget). */
  writeIntervalMs: number;
  /** The longest a request waits for a pause to end; longer, it is answered at once. */
  maxWaitMs: number;
  /** Called once when a pause starts (or is lengthened). */
  onPause?: (pause: RateLimitPause) => void;
  /** Content-creating requests a minute, both lanes together (GitHub's guidance: 80). */
  contentPerMinute?: number;
  /** Of those, what the presentation lane may take (default 60: the queue keeps 20). */
  presentationPerMinute?: number;
  now?: () => number;
}

/**
 * A write that GitHub may carry out and still answer an error: never repeated blindly. Matched on
 * the route (`{owner}`…) as on the URL.
 */
const UNSAFE_TO_REPEAT: readonly [string, RegExp][] = [
  ["POST", /\/repos\/[^/]+\/[^/]+\/merges$/],
  ["PUT", /\/repos\/[^/]+\/[^/]+\/pulls\/[^/]+\/merge$/],
  ["POST", /\/repos\/[^/]+\/[^/]+\/pulls$/],
  ["POST", /\/repos\/[^/]+\/[^/]+\/issues\/[^/]+\/comments$/],
  ["POST", /\/repos\/[^/]+\/[^/]+\/check-runs$/],
];

/** The queue's own writes: refs, test-branch merges, pull request merges, test pull requests. */
const QUEUE_WRITE = /\/repos\/[^/]+\/[^/]+\/(git\/refs(\/.*)?|merges|pulls(\/\d+(\/merge)?)?)$/;

/** Creating requests that notify people, spaced further apart (as Octokit does: 3 s). */
const NOTIFYING = /\/repos\/[^/]+\/[^/]+\/issues\/\d+\/comments$/;
const NOTIFYING_INTERVAL_FACTOR = 3;

/** GitHub's own calls for tokens are not writes of the installation. */
const AUTH_WRITE = /\/app\/installations\/[^/]+\/access_tokens$|\/login\/oauth\/access_token$/;

/** How often a write waiting for GitHub's budget looks again. */
const BUDGET_CHECK_MS = 250;

/** Without `retry-after`, GitHub asks to wait at least a minute after a secondary limit. */
const SECONDARY_FALLBACK_MS = MINUTE_MS;

/** Whether a write may have happened though GitHub answered an error: its caller reads first. */
export function isUnsafeToRepeat(method: string, pathname: string): boolean {
  const verb = method.toUpperCase();
  return UNSAFE_TO_REPEAT.some(([m, path]) => m === verb && path.test(pathname));
}

/** The lane of a request; undefined for a read (or a token request). */
export function laneOf(method: string, pathname: string): WriteLane | undefined {
  const verb = method.toUpperCase();
  if (verb === "GET" || verb === "HEAD" || AUTH_WRITE.test(pathname)) return undefined;
  return QUEUE_WRITE.test(pathname) ? "queue" : "presentation";
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** One request at a time, in order, starts at least `interval()` apart. */
class Lane {
  private tail: Promise<unknown> = Promise.resolve();
  private lastStart = Number.NEGATIVE_INFINITY;

  constructor(private readonly now: () => number) {}

  run<T>(interval: (path: string) => number, path: string, work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(async () => {
      const wait = this.lastStart + interval(path) - this.now();
      if (wait > 0) await sleep(wait);
      this.lastStart = this.now();
      return work();
    });
    this.tail = run.catch(() => undefined);
    return run;
  }
}

export class RequestGate {
  private pause: RateLimitPause | undefined;
  private readonly lanes: Record<WriteLane, Lane>;
  /** Start times of the writes of the last minute (both lanes). */
  private recent: number[] = [];
  private lastNotifying = Number.NEGATIVE_INFINITY;
  private readonly now: () => number;

  constructor(private readonly options: RequestGateOptions) {
    this.now = options.now ?? Date.now;
    this.lanes = { queue: new Lane(this.now), presentation: new Lane(this.now) };
  }

  /** The pause in force, if any. */
  paused(): RateLimitPause | undefined {
    return this.pause !== undefined && this.pause.until > this.now() ? this.pause : undefined;
  }

  /** Sends a request when its lane and GitHub's limits allow, and learns from the answer. */
  async send(method: string, pathname: string, send: () => Promise<Response>): Promise<Response> {
    const lane = laneOf(method, pathname);
    const go = async (): Promise<Response> => {
      const held = await this.waitOutPause();
      if (held) return held;
      if (lane !== undefined) {
        await this.waitForBudget(lane, pathname);
        const stillHeld = await this.waitOutPause();
        if (stillHeld) return stillHeld;
        this.recent.push(this.now());
      }
      return this.learn(await send());
    };
    if (lane === undefined) return go();
    return this.lanes[lane].run(() => this.options.writeIntervalMs, pathname, go);
  }

  /** Pauses the installation (a rate limit seen elsewhere, e.g. by Octokit's throttling). */
  hold(pause: Omit<RateLimitPause, "since">): void {
    const current = this.paused();
    if (current !== undefined && current.until >= pause.until) return;
    this.pause = { ...pause, since: current?.since ?? this.now() };
    this.options.onPause?.(this.pause);
  }

  /** Waits for a pause to end; one that would last longer than allowed is answered instead. */
  private async waitOutPause(): Promise<Response | undefined> {
    for (;;) {
      const pause = this.paused();
      if (pause === undefined) return undefined;
      const left = pause.until - this.now();
      if (left > this.options.maxWaitMs) return heldAnswer(pause, left);
      await sleep(left);
    }
  }

  /** GitHub's budget of content-creating requests, and the spacing of notifying ones. */
  private async waitForBudget(lane: WriteLane, pathname: string): Promise<void> {
    if (this.options.writeIntervalMs <= 0) return;
    const perMinute = this.options.contentPerMinute ?? 80;
    const limit =
      lane === "queue" ? perMinute : Math.min(perMinute, this.options.presentationPerMinute ?? 60);
    for (;;) {
      const now = this.now();
      this.recent = this.recent.filter((at) => now - at < MINUTE_MS);
      let wait = 0;
      if (this.recent.length >= limit) {
        wait = (this.recent[this.recent.length - limit] ?? now) + MINUTE_MS - now;
      }
      if (NOTIFYING.test(pathname)) {
        const spacing = this.options.writeIntervalMs * NOTIFYING_INTERVAL_FACTOR;
        wait = Math.max(wait, this.lastNotifying + spacing - now);
      }
      if (wait <= 0) break;
      // In steps: the minute is counted again on waking.
      await sleep(Math.min(wait, BUDGET_CHECK_MS));
    }
    if (NOTIFYING.test(pathname)) this.lastNotifying = this.now();
  }

  /** A rate limit in an answer pauses the installation. */
  private async learn(response: Response): Promise<Response> {
    const headers = response.headers;
    const remaining = headers.get("x-ratelimit-remaining");
    const reset = Number(headers.get("x-ratelimit-reset"));
    if (remaining === "0" && Number.isFinite(reset) && reset > 0) {
      // Once the budget is spent, every request fails until the reset (a second after, to be safe).
      const until = reset * SECOND_MS + SECOND_MS;
      if (until > this.now()) this.hold({ kind: "primary", until });
      return response;
    }
    if (response.status !== 403 && response.status !== 429) return response;
    const retryAfter = Number(headers.get("retry-after"));
    if (headers.has("retry-after") && Number.isFinite(retryAfter)) {
      this.hold({ kind: "secondary", until: this.now() + Math.max(0, retryAfter) * SECOND_MS });
      return response;
    }
    const text = await response
      .clone()
      .text()
      .catch(() => "");
    if (/secondary rate limit/i.test(text)) {
      this.hold({ kind: "secondary", until: this.now() + SECONDARY_FALLBACK_MS });
    }
    return response;
  }
}

/**
 * GitHub's own answer for a request made during a rate limit, given without sending it: Octokit's
 * throttling reads it as GitHub's and gives up (the wait is longer than the caller accepts).
 */
function heldAnswer(pause: RateLimitPause, leftMs: number): Response {
  const seconds = Math.ceil(leftMs / SECOND_MS);
  const headers: Record<string, string> = {
    "content-type": "application/json; charset=utf-8",
    "x-mainline-held": pause.kind,
  };
  let message: string;
  if (pause.kind === "primary") {
    headers["x-ratelimit-remaining"] = "0";
    headers["x-ratelimit-reset"] = String(Math.ceil(pause.until / SECOND_MS));
    message = `API rate limit exceeded; held by Mainline for ${String(seconds)} s until the reset`;
  } else {
    headers["retry-after"] = String(seconds);
    message = `You have exceeded a secondary rate limit; held by Mainline for ${String(seconds)} s`;
  }
  return new Response(JSON.stringify({ message }), { status: 403, headers });
}
