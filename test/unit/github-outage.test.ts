import { describe, expect, it } from "vitest";
import { OutageBreaker } from "../../src/providers/github/outage.js";

describe("whether GitHub answers at all", () => {
  it("opens after as many failed attempts in a row as one request makes, closes on an answer", () => {
    const outage = new OutageBreaker(4);
    for (const status of [502, undefined, 503]) outage.record(status);
    expect(outage.open).toBe(false);
    // A passing 5xx between answers never makes an outage.
    outage.record(200);
    for (const status of [502, 502, 502]) outage.record(status);
    expect(outage.open).toBe(false);
    outage.record(504);
    expect(outage.open).toBe(true);
    // Refusals are answers: GitHub is up.
    outage.record(403);
    expect(outage.open).toBe(false);
  });

  it("counts what fetch answers, and fetch's own failures", async () => {
    const outage = new OutageBreaker(2);
    const down = outage.wrap(() => Promise.reject(new TypeError("fetch failed")));
    await expect(down("https://api.github.invalid/")).rejects.toThrow("fetch failed");
    const bad = outage.wrap(() => Promise.resolve(new Response("", { status: 502 })));
    expect((await bad("https://api.github.invalid/")).status).toBe(502);
    expect(outage.open).toBe(true);
    const up = outage.wrap(() => Promise.resolve(new Response(null, { status: 304 })));
    await up("https://api.github.invalid/");
    expect(outage.open).toBe(false);
  });
});
