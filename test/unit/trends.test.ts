import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { dailyStatusCounts, utcDay } from "../../src/testhealth/trends.js";

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 0, 30, 15, 0);
const TODAY = utcDay(NOW);

describe("daily flaky and broken counts", () => {
  it("undoes each day's changes backwards from today's counts", () => {
    const changes = [
      { at: TODAY - 2 * DAY + 5, status: "flaky", previous: null }, // became flaky two days ago
      { at: TODAY - DAY + 9, status: "broken", previous: "flaky" }, // then broken yesterday
      { at: TODAY + 60_000, status: "flaky", previous: null }, // another one flaky today
    ];
    const days = dailyStatusCounts({ flaky: 1, broken: 1 }, changes, 4, NOW);
    expect(days.map((d) => d.day)).toEqual([TODAY - 3 * DAY, TODAY - 2 * DAY, TODAY - DAY, TODAY]);
    expect(days.map((d) => [d.flaky, d.broken])).toEqual([
      [0, 0],
      [1, 0],
      [0, 1],
      [1, 1],
    ]);
  });

  it("with no changes, every day has today's counts; counts never go below zero", () => {
    expect(dailyStatusCounts({ flaky: 3, broken: 0 }, [], 3, NOW).map((d) => d.flaky)).toEqual([
      3, 3, 3,
    ]);
    const impossible = dailyStatusCounts(
      { flaky: 0, broken: 0 },
      [{ at: NOW - 1, status: "flaky", previous: null }],
      2,
      NOW,
    );
    expect(impossible.map((d) => d.flaky)).toEqual([0, 0]);
  });

  it("agrees with replaying every test's history forwards", () => {
    // Random histories of tests: the counts at each day's end, replayed, equal the rebuilt ones.
    const status = fc.constantFrom("healthy", "flaky", "broken");
    fc.assert(
      fc.property(
        fc.array(
          fc.array(fc.record({ offset: fc.integer({ min: 0, max: 10 * DAY }), status }), {
            maxLength: 5,
          }),
          { maxLength: 12 },
        ),
        (tests) => {
          const start = TODAY - 9 * DAY;
          const histories = tests.map((h) =>
            [...h]
              .sort((a, b) => a.offset - b.offset)
              .map((c) => ({ at: start + c.offset, status: c.status })),
          );
          const statusAt = (history: { at: number; status: string }[], t: number) =>
            history.filter((c) => c.at <= t).at(-1)?.status ?? "healthy";
          const changes = histories
            .flatMap((history) =>
              history.map((c, i) => ({
                at: c.at,
                status: c.status,
                previous: i === 0 ? null : (history[i - 1]?.status ?? null),
              })),
            )
            .filter((c) => c.at <= NOW && c.at >= start);
          const current = {
            flaky: histories.filter((h) => statusAt(h, NOW) === "flaky").length,
            broken: histories.filter((h) => statusAt(h, NOW) === "broken").length,
          };
          const rebuilt = dailyStatusCounts(current, changes, 10, NOW);
          rebuilt.forEach((d, i) => {
            const end = i === rebuilt.length - 1 ? NOW : d.day + DAY - 1;
            expect(d.flaky).toBe(histories.filter((h) => statusAt(h, end) === "flaky").length);
            expect(d.broken).toBe(histories.filter((h) => statusAt(h, end) === "broken").length);
          });
        },
      ),
    );
  });
});
