import { DOCS, type FakeResponse, type RequestContext } from "./http.js";
import type { World } from "./world.js";

/**
 * The fault layer: rules scripted per operation (GitHub's operationId) and per call. A rule can
 * delay a request, answer instead of the real handler (nothing changes), or answer an error
 * *after* the handler ran (the change happened: a "ghost merge"). Presets give GitHub's own
 * messages and headers for the failures merge queues meet (ADR 0022 lists them).
 */

export type FaultEffect =
  /** Wait, then handle normally. */
  | { kind: "delay"; ms: number }
  /** Answer this instead of handling (nothing changes). */
  | { kind: "respond"; response: FakeResponse; delayMs?: number }
  /** Handle (the change happens), then answer this instead of the real answer. */
  | { kind: "respond-after"; response: FakeResponse; delayMs?: number }
  /** Spend the caller's primary rate limit for real until `resetInSec`. */
  | { kind: "exhaust-rate-limit"; resetInSec: number };

export interface FaultRule {
  /** GitHub operationIds (`pulls/merge`), or `*` for every operation. */
  operation: string | string[];
  /** A further condition on the request (path, body, credential). */
  when?: (ctx: RequestContext, nowMs: number) => boolean;
  /** Let this many matching calls through first. */
  skip?: number;
  /** Act on this many matching calls (default 1; `Infinity`: every one). */
  times?: number;
  /** Act on a matching call with this probability (seeded). */
  probability?: number;
  effect: FaultEffect;
  /** Shown in the request log. */
  name?: string;
}

interface ActiveRule {
  rule: FaultRule;
  seen: number;
  fired: number;
}

export function errorResponse(
  status: number,
  message: string,
  headers: Record<string, string> = {},
): FakeResponse {
  return { status, body: { message, documentation_url: DOCS, status: String(status) }, headers };
}

export class Faults {
  private rules: ActiveRule[] = [];

  constructor(
    private readonly world: World,
    private readonly exhaust: (ctx: RequestContext, resetInSec: number) => void,
  ) {}

  add(rule: FaultRule): FaultRule {
    this.rules.push({ rule, seen: 0, fired: 0 });
    return rule;
  }

  remove(rule: FaultRule): void {
    this.rules = this.rules.filter((r) => r.rule !== rule);
  }

  clear(): void {
    this.rules = [];
  }

  /** How many times a rule acted. */
  fired(rule: FaultRule): number {
    return this.rules.find((r) => r.rule === rule)?.fired ?? 0;
  }

  async apply(
    ctx: RequestContext,
  ): Promise<{ instead?: FakeResponse; after?: FakeResponse; name?: string }> {
    for (const active of this.rules) {
      const { rule } = active;
      const ops = Array.isArray(rule.operation) ? rule.operation : [rule.operation];
      if (!ops.includes("*") && !ops.includes(ctx.route.operationId)) continue;
      if (rule.when !== undefined && !rule.when(ctx, this.world.now())) continue;
      active.seen++;
      if (active.seen <= (rule.skip ?? 0)) continue;
      if (active.fired >= (rule.times ?? 1)) continue;
      if (rule.probability !== undefined && !this.world.random.chance(rule.probability)) continue;
      active.fired++;
      const name = rule.name ?? rule.effect.kind;
      const effect = rule.effect;
      switch (effect.kind) {
        case "delay":
          await sleep(effect.ms);
          return { name };
        case "respond":
          await sleep(effect.delayMs ?? 0);
          return { instead: withStatusBody(effect.response), name };
        case "respond-after":
          await sleep(effect.delayMs ?? 0);
          return { after: withStatusBody(effect.response), name };
        case "exhaust-rate-limit":
          this.exhaust(ctx, effect.resetInSec);
          return { name };
      }
    }
    return {};
  }
}

function withStatusBody(response: FakeResponse): FakeResponse {
  return { ...response, headers: { ...response.headers } };
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

const SECONDARY =
  "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID";

/** GitHub's failures, ready to `add`. Each takes the usual rule options (`times`, `skip`, …). */
export const fault = {
  /** 405 on `PUT /pulls/{n}/merge`: the base moved between the mergeability check and the merge. */
  baseBranchModified(options: Partial<FaultRule> = {}): FaultRule {
    return {
      operation: "pulls/merge",
      name: "405 base branch modified",
      ...options,
      effect: {
        kind: "respond",
        response: errorResponse(405, "Base branch was modified. Review and try the merge again."),
      },
    };
  },

  /**
   * 405 "Merge already in progress"; with `merged: true` the merge happens anyway and only the
   * answer is an error (the "ghost merge" Trunk documents).
   */
  mergeAlreadyInProgress(options: Partial<FaultRule> & { merged?: boolean } = {}): FaultRule {
    const { merged = false, ...rest } = options;
    const response = errorResponse(405, "Merge already in progress");
    return {
      operation: "pulls/merge",
      name: merged ? "405 merge in progress (merged anyway)" : "405 merge in progress",
      ...rest,
      effect: merged ? { kind: "respond-after", response } : { kind: "respond", response },
    };
  },

  /** 409 "Head branch was modified" on a merge whose head did not in fact move. */
  headBranchModified(options: Partial<FaultRule> = {}): FaultRule {
    return {
      operation: "pulls/merge",
      name: "409 head branch modified",
      ...options,
      effect: {
        kind: "respond",
        response: errorResponse(409, "Head branch was modified. Review and try the merge again."),
      },
    };
  },

  /** 409 on `POST /merges` that is a passing permission glitch, not a conflict (rust-lang/bors #615). */
  mergesPermissionConflict(options: Partial<FaultRule> = {}): FaultRule {
    return {
      operation: "repos/merge",
      name: "409 merges: not authorized",
      ...options,
      effect: {
        kind: "respond",
        response: errorResponse(
          409,
          "Could not merge because you are not authorized to push to this branch.",
        ),
      },
    };
  },

  /** A 5xx: 500/503/504 with GitHub's JSON, 502 with an HTML page as GitHub's edge sends. */
  serverError(
    operation: string | string[] = "*",
    status = 502,
    options: Partial<FaultRule> = {},
  ): FaultRule {
    const response: FakeResponse =
      status === 502
        ? {
            status,
            raw: {
              contentType: "text/html; charset=utf-8",
              text: "<html><body><h1>502 Bad Gateway</h1></body></html>",
            },
          }
        : errorResponse(status, status === 500 ? "Server Error" : "Service Unavailable");
    return { operation, name: `${status}`, ...options, effect: { kind: "respond", response } };
  },

  /** 403 secondary rate limit with `retry-after`, as `@octokit/plugin-throttling` expects. */
  secondaryRateLimit(
    operation: string | string[] = "*",
    retryAfterSec = 1,
    options: Partial<FaultRule> = {},
  ): FaultRule {
    return {
      operation,
      name: "403 secondary rate limit",
      ...options,
      effect: {
        kind: "respond",
        response: errorResponse(403, `${SECONDARY} 0000:0000:0000000:0000000:00000000.`, {
          "retry-after": String(retryAfterSec),
        }),
      },
    };
  },

  /** 429 with `retry-after` (GitHub answers some secondary limits with 429). */
  tooManyRequests(
    operation: string | string[] = "*",
    retryAfterSec = 1,
    options: Partial<FaultRule> = {},
  ): FaultRule {
    return {
      operation,
      name: "429 secondary rate limit",
      ...options,
      effect: {
        kind: "respond",
        response: errorResponse(429, `${SECONDARY} 0000:0000:0000000:0000000:00000000.`, {
          "retry-after": String(retryAfterSec),
        }),
      },
    };
  },

  /** Spends the caller's primary rate limit: 403 with `x-ratelimit-remaining: 0` until the reset. */
  primaryRateLimit(
    operation: string | string[] = "*",
    resetInSec = 2,
    options: Partial<FaultRule> = {},
  ): FaultRule {
    return {
      operation,
      name: "primary rate limit",
      ...options,
      effect: { kind: "exhaust-rate-limit", resetInSec },
    };
  },

  /** 401 for an installation token used within `withinMs` of its minting (token replication lag). */
  unauthorizedAfterMint(withinMs = 5_000, options: Partial<FaultRule> = {}): FaultRule {
    return {
      operation: "*",
      name: "401 right after minting",
      when: (ctx, nowMs) =>
        ctx.credential.kind === "installation" && nowMs - ctx.credential.createdAtMs < withinMs,
      ...options,
      effect: { kind: "respond", response: errorResponse(401, "Bad credentials") },
    };
  },

  /** 401 on JWT requests with the iat message auth-app retries on after reading `date`. */
  jwtIssuedAtRejected(options: Partial<FaultRule> = {}): FaultRule {
    return {
      operation: "*",
      name: "401 JWT iat",
      when: (ctx) => ctx.credential.kind === "app",
      ...options,
      effect: {
        kind: "respond",
        response: errorResponse(
          401,
          "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
        ),
      },
    };
  },

  /** The operation happens, then GitHub answers an error (e.g. a 502 after a merge landed). */
  succeedsButErrors(
    operation: string | string[],
    status = 502,
    options: Partial<FaultRule> = {},
  ): FaultRule {
    return {
      operation,
      name: `${status} after success`,
      ...options,
      effect: {
        kind: "respond-after",
        response: errorResponse(status, status >= 500 ? "Server Error" : "Error"),
      },
    };
  },

  /**
   * Every write (not a GET) of an installation, of `operation` (default every one), happens and
   * is answered with a 5xx: GitHub's "unknown outcome" for each write the App makes. A repeat of
   * the call then meets the change made (`POST /merges` answers 204, a ref exists, a pull request
   * is merged).
   */
  writesSucceedButError(
    operation: string | string[] = "*",
    status = 502,
    options: Partial<FaultRule> = {},
  ): FaultRule {
    return {
      operation,
      name: `${status} after a write`,
      when: (ctx) => ctx.method !== "GET" && ctx.credential.kind === "installation",
      ...options,
      effect: {
        kind: "respond-after",
        response: errorResponse(status, status >= 500 ? "Server Error" : "Error"),
      },
    };
  },

  delay(operation: string | string[], ms: number, options: Partial<FaultRule> = {}): FaultRule {
    return { operation, name: `delay ${ms} ms`, ...options, effect: { kind: "delay", ms } };
  },
};
