import type { FakeResponse } from "./http.js";
import type { SeededRandom } from "../fake-github/random.js";

/**
 * The fault layer: rules matched on method and path, per call. A rule can delay a request, answer
 * instead of the real handler (nothing changes), or answer *after* the handler ran (the change
 * happened: "did, then 502"). Paths are API paths after `/api/v4` as templates
 * (`/projects/:id/merge_requests/:iid/merge`; `:name+` spans slashes, `*` anything) or regular
 * expressions; git's smart HTTP paths (`/group/app.git/git-receive-pack`) match as they are.
 * The presets answer with GitLab's own bodies and headers.
 */

export type FaultEffect =
  | { kind: "delay"; ms: number }
  | { kind: "respond"; response: FakeResponse; delayMs?: number }
  | { kind: "respond-after"; response: FakeResponse; delayMs?: number };

export interface FaultRule {
  /** `PUT`, or several; every method when absent. */
  method?: string | string[];
  path: string | RegExp;
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
  regex: RegExp;
  seen: number;
  fired: number;
}

function templateRegExp(path: string | RegExp): RegExp {
  if (path instanceof RegExp) return path;
  const body = path
    .split("/")
    .map((segment) => {
      const m = /^:([a-z_]+)(\+?)$/.exec(segment);
      if (m !== null) return m[2] === "+" ? ".+" : "[^/]+";
      return segment
        .split("*")
        .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
        .join(".*");
    })
    .join("/");
  return new RegExp(`^${body}/?$`);
}

export class Faults {
  private rules: ActiveRule[] = [];

  constructor(private readonly random: SeededRandom) {}

  add(rule: FaultRule): FaultRule {
    this.rules.push({ rule, regex: templateRegExp(rule.path), seen: 0, fired: 0 });
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
    method: string,
    path: string,
  ): Promise<{ instead?: FakeResponse; after?: FakeResponse; name?: string }> {
    for (const active of this.rules) {
      const { rule } = active;
      const methods =
        rule.method === undefined ? [] : [rule.method].flat().map((m) => m.toUpperCase());
      if (methods.length > 0 && !methods.includes(method)) continue;
      if (!active.regex.test(path)) continue;
      active.seen++;
      if (active.seen <= (rule.skip ?? 0)) continue;
      if (active.fired >= (rule.times ?? 1)) continue;
      if (rule.probability !== undefined && !this.random.chance(rule.probability)) continue;
      active.fired++;
      const name = rule.name ?? rule.effect.kind;
      const effect = rule.effect;
      switch (effect.kind) {
        case "delay":
          await sleep(effect.ms);
          return { name };
        case "respond":
          await sleep(effect.delayMs ?? 0);
          return { instead: effect.response, name };
        case "respond-after":
          await sleep(effect.delayMs ?? 0);
          return { after: effect.response, name };
      }
    }
    return {};
  }
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

type Match = Pick<FaultRule, "method" | "path"> & Partial<Omit<FaultRule, "effect">>;

/** Grape's default messages; the merge endpoint's own for 406/409/422. */
const MESSAGES: Record<number, string> = {
  400: "400 Bad request",
  401: "401 Unauthorized",
  403: "403 Forbidden",
  404: "404 Not Found",
  405: "405 Method Not Allowed",
  406: "Branch cannot be merged",
  409: "409 Conflict",
  422: "422 Unprocessable Entity",
};

/** An HTML error page, as GitLab's Workhorse or a proxy in front of it answers. */
export function htmlPage(status: number): FakeResponse {
  const title =
    {
      500: "We're sorry, but something went wrong (500)",
      502: "GitLab is not responding (502)",
      503: "GitLab is not responding (503)",
    }[status] ?? `Error (${status})`;
  return {
    status,
    raw: {
      contentType: "text/html; charset=utf-8",
      text: `<!DOCTYPE html>\n<html>\n<head><title>${title}</title></head>\n<body><h1>${status}</h1><p>${title}</p></body>\n</html>\n`,
    },
  };
}

/** GitLab's failures, ready to `faults.add`. */
export const fault = {
  /** `{"message": …}` with the status (`message` overrides GitLab's default text). */
  status(status: number, match: Match & { message?: string }): FaultRule {
    const { message, ...rest } = match;
    const body = { message: message ?? MESSAGES[status] ?? `${status}` };
    return { name: `${status}`, ...rest, effect: { kind: "respond", response: { status, body } } };
  },

  /**
   * 429 as Rack::Attack answers it: `Retry later` as plain text with `RateLimit-Limit`,
   * `RateLimit-Observed`, `RateLimit-Remaining: 0`, `RateLimit-Reset` (epoch seconds),
   * `RateLimit-ResetTime` and `Retry-After`; `bare`: the same body without any header (as
   * GitLab.com's and Dedicated's edges do).
   */
  rateLimited(
    match: Match & { retryAfterSec?: number; limit?: number; bare?: boolean },
  ): FaultRule {
    const { retryAfterSec = 1, limit = 600, bare = false, ...rest } = match;
    const reset = Math.ceil(Date.now() / 1000) + retryAfterSec;
    const headers: Record<string, string> = bare
      ? {}
      : {
          "ratelimit-name": "throttle_authenticated_api",
          "ratelimit-limit": String(limit),
          "ratelimit-observed": String(limit + 1),
          "ratelimit-remaining": "0",
          "ratelimit-reset": String(reset),
          "ratelimit-resettime": new Date(reset * 1000).toUTCString(),
          "retry-after": String(retryAfterSec),
        };
    return {
      name: bare ? "429 (no headers)" : "429",
      ...rest,
      effect: {
        kind: "respond",
        response: {
          status: 429,
          headers,
          raw: { contentType: "text/plain", text: "Retry later\n" },
        },
      },
    };
  },

  /** 500/502/503 with an HTML page. */
  serverError(status: 500 | 502 | 503, match: Match): FaultRule {
    return {
      name: `${status} (HTML)`,
      ...match,
      effect: { kind: "respond", response: htmlPage(status) },
    };
  },

  /** The request is carried out, then answered with a 5xx HTML page (default 502). */
  didThen5xx(match: Match & { status?: 500 | 502 | 503 }): FaultRule {
    const { status = 502, ...rest } = match;
    return {
      name: `${status} after success`,
      ...rest,
      effect: { kind: "respond-after", response: htmlPage(status) },
    };
  },

  delay(ms: number, match: Match): FaultRule {
    return { name: `delay ${ms} ms`, ...match, effect: { kind: "delay", ms } };
  },
};
