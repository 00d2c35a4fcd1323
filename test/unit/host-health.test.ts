/**
 * What the queue's driver makes of a failed call to its git host (src/mergequeue/engine/
 * host-health.ts): a rate limit is told from an outage, and the queue tries again when it ends,
 * not before; anything else backs off from 1 s to a minute.
 */
import { describe, expect, it } from "vitest";
import {
  failedAttempt,
  rateLimitedUntil,
  retryDelay,
} from "../../src/mergequeue/engine/host-health.js";

const NOW = 1_800_000_000_000;

/** An error as Octokit throws it for an answer with this status and these headers. */
function answered(status: number, headers: Record<string, string> = {}, message = "refused") {
  return Object.assign(new Error(message), { status, response: { status, headers } });
}

describe("a rate limit", () => {
  it("is a 403 or 429 with retry-after, or with none left until the reset", () => {
    expect(rateLimitedUntil(answered(403, { "retry-after": "30" }), NOW)).toBe(NOW + 30_000);
    expect(rateLimitedUntil(answered(429, { "retry-after": "5" }), NOW)).toBe(NOW + 5_000);
    const reset = String(NOW / 1000 + 600);
    expect(
      rateLimitedUntil(
        answered(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": reset }),
        NOW,
      ),
    ).toBe(NOW + 600_000);
    // A 403 for want of a permission, a 502, an error with no answer: not a rate limit.
    expect(rateLimitedUntil(answered(403), NOW)).toBeUndefined();
    expect(rateLimitedUntil(answered(502, { "retry-after": "5" }), NOW)).toBeUndefined();
    expect(rateLimitedUntil(new Error("fetch failed"), NOW)).toBeUndefined();
  });

  it("makes the queue rate limited until it ends, however short its backoff", () => {
    const trouble = failedAttempt(null, answered(403, { "retry-after": "45" }), NOW);
    expect(trouble).toMatchObject({
      state: "rate_limited",
      code: "unavailable",
      since: NOW,
      retryAt: NOW + 45_000,
      failures: 1,
    });
    const outage = failedAttempt(trouble, answered(502), NOW + 50_000);
    expect(outage).toMatchObject({
      state: "unreachable",
      since: NOW,
      retryAt: NOW + 50_000 + retryDelay(2),
    });
  });
});
