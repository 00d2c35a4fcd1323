import { describe, expect, it } from "vitest";
import { DAY_MS, MINUTE_MS } from "../../src/lib/time.js";
import { clockTime, formatSpan, relativeTime, timeAgo } from "../../src/web/format.js";

/** Times on the pages: the date unless it is today, the instant and the full timestamp always. */
const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);

describe("times on the pages", () => {
  it("clockTime: the time of day today, with the date on any other day", () => {
    expect(String(clockTime(NOW - 3 * MINUTE_MS, NOW))).toBe(
      '<time datetime="2026-11-27T11:57:00.000Z" title="2026-11-27 11:57:00 UTC">11:57 UTC</time>',
    );
    // Yesterday, a minute before midnight, and tomorrow: dated.
    const lateYesterday = Date.UTC(2026, 10, 26, 23, 59, 30);
    expect(String(clockTime(lateYesterday, NOW))).toBe(
      '<time datetime="2026-11-26T23:59:30.000Z" title="2026-11-26 23:59:30 UTC">2026-11-26 23:59 UTC</time>',
    );
    expect(String(clockTime(NOW + DAY_MS, NOW))).toContain(">2026-11-28 12:00 UTC</time>");
  });

  it("relativeTime: words relative to now, in a <time> with the instant and full timestamp", () => {
    expect(String(relativeTime(NOW - 4 * MINUTE_MS, NOW))).toBe(
      '<time datetime="2026-11-27T11:56:00.000Z" title="2026-11-27 11:56:00 UTC">4 min ago</time>',
    );
    expect(String(relativeTime(NOW + 70 * MINUTE_MS, NOW))).toContain(">in 1 h 10 min</time>");
    expect(String(relativeTime(NOW + 10_000, NOW))).toContain(">in 10 s</time>");
    expect(String(relativeTime(NOW - 10_000, NOW))).toContain(">10 s ago</time>");
    expect(String(relativeTime(NOW + 4_000, NOW))).toContain(">in a few seconds</time>");
    expect(String(relativeTime(NOW - 4_000, NOW))).toContain(">now</time>");
    expect(formatSpan(400)).toBe("under 1 s");
    expect(formatSpan(0)).toBe("0 s");
  });

  it("timeAgo: its title is the full timestamp too", () => {
    expect(String(timeAgo("2026-11-25T08:00:00.000Z", NOW))).toContain(
      'title="2026-11-25 08:00:00 UTC">2026-11-25 08:00:00Z</time>',
    );
  });
});
