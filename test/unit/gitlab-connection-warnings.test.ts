/** What `mainline gitlab status` and `connect` warn about: an ending token, a broken connection. */
import { describe, expect, it } from "vitest";
import { EXPIRY_WARNING_DAYS, connectionWarnings } from "../../src/cli/commands/gitlab.js";
import { DAY_MS } from "../../src/lib/time.js";

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe("connectionWarnings", () => {
  const now = Date.parse("2026-12-07T12:00:00Z");
  const token = (expiresAt: string | null, problem: string | null = null) =>
    connectionWarnings({ method: "token", expiresAt, problem }, now);

  it("warns within the last days of a token, and calls an expired token broken", () => {
    expect(token(null)).toEqual({ broken: false, lines: [] });
    expect(token(isoDay(now + (EXPIRY_WARNING_DAYS + 2) * DAY_MS)).lines).toEqual([]);
    expect(token("2026-12-08").lines[0]).toContain("expires on 2026-12-08, in 1 day:");
    expect(token("2026-12-17").lines[0]).toContain("in 10 days");
    const expired = token("2026-12-07");
    expect(expired.broken).toBe(true);
    expect(expired.lines[0]).toContain("expired on 2026-12-07");
  });

  it("reports a recorded problem as broken, pointing an OAuth grant to authorize", () => {
    const oauth = connectionWarnings(
      { method: "oauth", expiresAt: "2026-12-07T12:30:00Z", problem: "GitLab refused to renew." },
      now,
    );
    expect(oauth.broken).toBe(true);
    expect(oauth.lines[0]).toContain("mainline gitlab authorize");
    expect(token("2027-06-01", "GitLab revoked the token.").lines[0]).toContain(
      "mainline gitlab connect",
    );
    // An OAuth grant's short-lived token is renewed by Mainline, however close its end.
    expect(
      connectionWarnings(
        { method: "oauth", expiresAt: "2026-12-07T12:01:00Z", problem: null },
        now,
      ),
    ).toEqual({ broken: false, lines: [] });
  });
});
