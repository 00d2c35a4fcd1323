import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/lib/errors.js";
import { defaultTestSettings, type RepositoryTestSettings } from "../../src/testhealth/settings.js";
import {
  applySettingsPatch,
  isEmptyPatch,
  toWireSettings,
  type WireFailureCountMonitor,
  type WireFailureRateMonitor,
  type WireTestSettingsPatch,
} from "../../src/testhealth/settings-wire.js";

const rate = (overrides: Partial<WireFailureRateMonitor> = {}): WireFailureRateMonitor => ({
  id: "rate",
  enabled: true,
  classification: "flaky",
  scope: "stable",
  window_hours: 24,
  activation: 0.3,
  resolution: 0.1,
  min_runs: 10,
  ...overrides,
});

const count = (overrides: Partial<WireFailureCountMonitor> = {}): WireFailureCountMonitor => ({
  id: "count",
  enabled: true,
  classification: "broken",
  scope: "any",
  failures: 3,
  window_hours: 6,
  resolution_hours: 12,
  ...overrides,
});

/** The details of the invalid_request a patch is refused with. */
function problems(patch: WireTestSettingsPatch, current = defaultTestSettings()) {
  try {
    applySettingsPatch(current, patch);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    const apiError = error as ApiError;
    expect(apiError.code).toBe("invalid_request");
    return apiError.details ?? [];
  }
  throw new Error("the patch was accepted");
}

const paths = (patch: WireTestSettingsPatch, current?: RepositoryTestSettings) =>
  problems(patch, current).map((d) => d.path);

describe("settings on the wire", () => {
  it("shows the defaults of docs/contract.md §3 in snake_case", () => {
    const wire = toWireSettings(defaultTestSettings());
    expect(wire).toMatchObject({
      stable_branches: ["main", "master"],
      merge_queue_branches: ["mainline-merge/*", "trunk-merge/*", "gh-readonly-queue/*", "gtmq_*"],
      pass_on_retry: { enabled: true, recovery_days: 7 },
      failure_count_monitors: [],
      quarantining_enabled: true,
      auto_quarantine: true,
      ticket_base_url: null,
      pull_request_comments: false,
    });
    expect(wire.failure_rate_monitors.map((m) => [m.id, m.classification, m.scope])).toEqual([
      ["broken-on-stable", "broken", "stable"],
      ["flaky-on-stable", "flaky", "stable"],
      ["flaky-in-merge-queue", "flaky", "merge_queue"],
    ]);
    expect(wire.failure_rate_monitors[1]).toEqual({
      id: "flaky-on-stable",
      enabled: true,
      classification: "flaky",
      scope: "stable",
      window_hours: 24,
      activation: 0.2,
      resolution: 0.1,
      min_runs: 10,
    });
  });

  it("an empty patch changes nothing", () => {
    const current = defaultTestSettings();
    expect(isEmptyPatch({})).toBe(true);
    expect(isEmptyPatch({ auto_quarantine: false })).toBe(false);
    expect(isEmptyPatch({ ticket_base_url: null })).toBe(false);
    expect(applySettingsPatch(current, {})).toEqual(current);
  });

  it("changes only the fields given, without touching the current settings", () => {
    const current = defaultTestSettings();
    const snapshot = structuredClone(current);
    const next = applySettingsPatch(current, {
      stable_branches: ["main", "release/*"],
      pass_on_retry: { enabled: false },
      auto_quarantine: false,
    });
    expect(current).toEqual(snapshot);
    expect(next.monitors.stableBranches).toEqual(["main", "release/*"]);
    expect(next.monitors.passOnRetry).toEqual({ enabled: false, recoveryDays: 7 });
    expect(next.quarantine).toEqual({ quarantiningEnabled: true, autoQuarantine: false });
    expect(next.monitors.failureRate).toEqual(current.monitors.failureRate);
    expect(next.monitors.mergeQueueBranches).toEqual(current.monitors.mergeQueueBranches);
  });

  it("replaces monitor lists whole, reading enums in any letter case", () => {
    const next = applySettingsPatch(defaultTestSettings(), {
      failure_rate_monitors: [rate({ classification: "BROKEN", scope: "Merge_Queue" })],
      failure_count_monitors: [count({ scope: { globs: ["release/*"] } })],
    });
    expect(next.monitors.failureRate).toEqual([
      {
        id: "rate",
        enabled: true,
        classification: "broken",
        scope: "merge_queue",
        windowHours: 24,
        activation: 0.3,
        resolution: 0.1,
        minRuns: 10,
      },
    ]);
    expect(next.monitors.failureCount).toEqual([
      {
        id: "count",
        enabled: true,
        classification: "broken",
        scope: { globs: ["release/*"] },
        failures: 3,
        windowHours: 6,
        resolutionHours: 12,
      },
    ]);
    expect(applySettingsPatch(next, { failure_rate_monitors: [] }).monitors.failureRate).toEqual(
      [],
    );
  });

  it("keeps a ticket base URL that is http(s), and removes it with null", () => {
    const set = applySettingsPatch(defaultTestSettings(), {
      ticket_base_url: "https://linear.app/acme/issue/",
    });
    expect(set.ticketBaseUrl).toBe("https://linear.app/acme/issue/");
    expect(applySettingsPatch(set, { auto_quarantine: false }).ticketBaseUrl).toBe(
      "https://linear.app/acme/issue/",
    );
    expect(applySettingsPatch(set, { ticket_base_url: null }).ticketBaseUrl).toBeNull();
    expect(paths({ ticket_base_url: "ftp://example.com/" })).toEqual(["ticket_base_url"]);
    expect(paths({ ticket_base_url: "https://" })).toEqual(["ticket_base_url"]);
    expect(paths({ ticket_base_url: "linear.app/acme" })).toEqual(["ticket_base_url"]);
    expect(paths({ ticket_base_url: `https://x.example/${"a".repeat(2000)}` })).toEqual([
      "ticket_base_url",
    ]);
  });

  it("checks every range", () => {
    expect(paths({ pass_on_retry: { recovery_days: 0 } })).toEqual(["pass_on_retry.recovery_days"]);
    expect(paths({ pass_on_retry: { recovery_days: 1.5 } })).toEqual([
      "pass_on_retry.recovery_days",
    ]);
    expect(
      paths({
        failure_rate_monitors: [
          rate({ window_hours: 0, min_runs: 0, activation: 0, resolution: -0.1 }),
        ],
      }).sort(),
    ).toEqual([
      "failure_rate_monitors[0].activation",
      "failure_rate_monitors[0].min_runs",
      "failure_rate_monitors[0].resolution",
      "failure_rate_monitors[0].window_hours",
    ]);
    expect(
      paths({ failure_rate_monitors: [rate({ window_hours: 721, activation: 1.01 })] }),
    ).toEqual(["failure_rate_monitors[0].window_hours", "failure_rate_monitors[0].activation"]);
    expect(
      paths({ failure_count_monitors: [count({ failures: 0, resolution_hours: 721 })] }),
    ).toEqual(["failure_count_monitors[0].failures", "failure_count_monitors[0].resolution_hours"]);
    expect(paths({ stable_branches: ["main", " "] })).toEqual(["stable_branches[1]"]);
    expect(paths({ merge_queue_branches: Array.from({ length: 51 }, (_, i) => `q${i}`) })).toEqual([
      "merge_queue_branches",
    ]);
    expect(
      paths({ failure_rate_monitors: Array.from({ length: 21 }, (_, i) => rate({ id: `r${i}` })) }),
    ).toEqual(["failure_rate_monitors"]);
  });

  it("accepts the bounds themselves", () => {
    const next = applySettingsPatch(defaultTestSettings(), {
      pass_on_retry: { recovery_days: 90 },
      failure_rate_monitors: [rate({ window_hours: 720, activation: 1, resolution: 1 })],
      failure_count_monitors: [count({ window_hours: 1, resolution_hours: 1, failures: 1 })],
      stable_branches: [],
    });
    expect(next.monitors.failureRate[0]).toMatchObject({ activation: 1, resolution: 1 });
    expect(next.monitors.stableBranches).toEqual([]);
  });

  it("requires resolution <= activation and resolution_hours >= window_hours", () => {
    const details = problems({
      failure_rate_monitors: [rate({ activation: 0.2, resolution: 0.3 })],
      failure_count_monitors: [count({ window_hours: 24, resolution_hours: 12 })],
    });
    expect(details).toEqual([
      {
        path: "failure_rate_monitors[0].resolution",
        message: expect.stringMatching(/at most the activation threshold \(0\.2\)/) as unknown,
      },
      {
        path: "failure_count_monitors[0].resolution_hours",
        message: expect.stringMatching(/at least window_hours \(24\)/) as unknown,
      },
    ]);
  });

  it("refuses unknown enum values and malformed scopes", () => {
    expect(
      paths({
        failure_rate_monitors: [rate({ classification: "healthy", scope: "nightly" })],
        failure_count_monitors: [count({ scope: { globs: [] } })],
      }),
    ).toEqual([
      "failure_rate_monitors[0].classification",
      "failure_rate_monitors[0].scope",
      "failure_count_monitors[0].scope.globs",
    ]);
  });

  it("keeps monitor ids unique across both lists, pass-on-retry reserved", () => {
    expect(problems({ failure_rate_monitors: [rate(), rate()] })).toEqual([
      {
        path: "failure_rate_monitors[1].id",
        message: 'repeats the id "rate" of failure_rate_monitors[0]; monitor ids must be unique',
      },
    ]);
    expect(
      paths({
        failure_rate_monitors: [rate({ id: "same" })],
        failure_count_monitors: [count({ id: "same" })],
      }),
    ).toEqual(["failure_count_monitors[0].id"]);
    expect(paths({ failure_count_monitors: [count({ id: "pass-on-retry" })] })).toEqual([
      "failure_count_monitors[0].id",
    ]);
    expect(paths({ failure_rate_monitors: [rate({ id: "has space" })] })).toEqual([
      "failure_rate_monitors[0].id",
    ]);
    expect(paths({ failure_rate_monitors: [rate({ id: "" })] })).toEqual([
      "failure_rate_monitors[0].id",
    ]);
    // The list not in the patch keeps its ids, which the other list must not reuse.
    expect(paths({ failure_count_monitors: [count({ id: "flaky-on-stable" })] })).toEqual([
      "failure_count_monitors[0].id",
    ]);
    const withCount = applySettingsPatch(defaultTestSettings(), {
      failure_count_monitors: [count({ id: "streak" })],
    });
    expect(paths({ failure_rate_monitors: [rate({ id: "streak" })] }, withCount)).toEqual([
      "failure_rate_monitors[0].id",
    ]);
  });

  it("names every problem at once, the first in the message", () => {
    try {
      applySettingsPatch(defaultTestSettings(), {
        pass_on_retry: { recovery_days: 0 },
        failure_rate_monitors: [rate({ resolution: 0.9 })],
        ticket_base_url: "nope",
      });
      expect.unreachable();
    } catch (error) {
      expect((error as ApiError).message).toBe(
        "Invalid settings: pass_on_retry.recovery_days must be a whole number from 1 to 90 (and 2 more problems).",
      );
      expect((error as ApiError).details).toHaveLength(3);
    }
  });

  const scope = fc.oneof(
    fc.constantFrom("stable", "merge_queue", "any"),
    fc.record({
      globs: fc.array(fc.stringMatching(/^[a-z*?/_-]{1,12}$/), { minLength: 1, maxLength: 4 }),
    }),
  );
  const monitorId = fc
    .stringMatching(/^[a-z][a-z0-9-]{0,10}$/)
    .filter((id) => id !== "pass-on-retry");
  const validSettings = fc
    .record({
      stable: fc.array(fc.stringMatching(/^[a-z*/]{1,10}$/), { maxLength: 4 }),
      queue: fc.array(fc.stringMatching(/^[a-z*/]{1,10}$/), { maxLength: 4 }),
      retry: fc.record({ enabled: fc.boolean(), recovery_days: fc.integer({ min: 1, max: 90 }) }),
      ids: fc.uniqueArray(monitorId, { maxLength: 6 }),
      rates: fc.array(
        fc.record({
          enabled: fc.boolean(),
          classification: fc.constantFrom("flaky", "broken"),
          scope,
          window_hours: fc.integer({ min: 1, max: 720 }),
          activation: fc.double({ min: 0.01, max: 1, noNaN: true }),
          resolutionShare: fc.double({ min: 0, max: 1, noNaN: true }),
          min_runs: fc.integer({ min: 1, max: 10_000 }),
        }),
        { maxLength: 3 },
      ),
      counts: fc.array(
        fc.record({
          enabled: fc.boolean(),
          classification: fc.constantFrom("flaky", "broken"),
          scope,
          failures: fc.integer({ min: 1, max: 10_000 }),
          window_hours: fc.integer({ min: 1, max: 360 }),
          extra: fc.integer({ min: 0, max: 360 }),
        }),
        { maxLength: 3 },
      ),
      quarantining: fc.boolean(),
      auto: fc.boolean(),
      ticket: fc.option(fc.constantFrom("https://linear.app/acme/issue/", "http://jira/browse/")),
      comments: fc.boolean(),
      connection: fc.option(fc.constantFrom("tc_abc", "tc_def")),
      rule: fc.record({
        flaky: fc.boolean(),
        broken: fc.boolean(),
        after_hours: fc.integer({ min: 0, max: 720 }),
        require_owner: fc.boolean(),
      }),
    })
    .map((s): WireTestSettingsPatch => {
      const ids = [...s.ids];
      const rates = s.rates.slice(0, Math.max(0, ids.length - 3)).map((r, i) => ({
        id: ids[i] ?? "x",
        enabled: r.enabled,
        classification: r.classification,
        scope: r.scope,
        window_hours: r.window_hours,
        activation: r.activation,
        resolution: r.activation * r.resolutionShare,
        min_runs: r.min_runs,
      }));
      const counts = s.counts.slice(0, Math.max(0, ids.length - rates.length)).map((c, i) => ({
        id: ids[rates.length + i] ?? "y",
        enabled: c.enabled,
        classification: c.classification,
        scope: c.scope,
        failures: c.failures,
        window_hours: c.window_hours,
        resolution_hours: c.window_hours + c.extra,
      }));
      return {
        stable_branches: s.stable,
        merge_queue_branches: s.queue,
        pass_on_retry: s.retry,
        failure_rate_monitors: rates,
        failure_count_monitors: counts,
        quarantining_enabled: s.quarantining,
        auto_quarantine: s.auto,
        ticket_base_url: s.ticket,
        pull_request_comments: s.comments,
        ticket_connection_id: s.connection,
        // A rule needs a connection.
        auto_ticket: s.connection === null ? { ...s.rule, flaky: false, broken: false } : s.rule,
      };
    });

  it("reads back exactly what a valid full update wrote (property)", () => {
    fc.assert(
      fc.property(validSettings, (patch) => {
        const applied = applySettingsPatch(defaultTestSettings(), patch);
        expect(toWireSettings(applied)).toEqual(patch);
        // Sending back what was read changes nothing.
        expect(applySettingsPatch(applied, toWireSettings(applied))).toEqual(applied);
      }),
      { numRuns: 300 },
    );
  });

  it("takes the automatic ticket rule field by field, and refuses it without a connection", () => {
    const connected = applySettingsPatch(defaultTestSettings(), {
      ticket_connection_id: "tc_1",
      auto_ticket: { flaky: true },
    });
    expect(connected.tickets).toEqual({
      connectionId: "tc_1",
      rule: { flaky: true, broken: false, afterHours: 24, requireOwner: true },
    });
    const merged = applySettingsPatch(connected, { auto_ticket: { after_hours: 48 } });
    expect(merged.tickets.rule).toEqual({
      flaky: true,
      broken: false,
      afterHours: 48,
      requireOwner: true,
    });
    expect(() => applySettingsPatch(connected, { ticket_connection_id: null })).toThrow(
      /auto_ticket needs a ticket connection/,
    );
    expect(() => applySettingsPatch(connected, { auto_ticket: { after_hours: 721 } })).toThrow(
      /auto_ticket.after_hours must be a whole number from 0 to 720/,
    );
    expect(() => applySettingsPatch(connected, { ticket_connection_id: "has spaces" })).toThrow(
      /ticket_connection_id/,
    );
    // A patch of something else still applies while a deleted connection left the rule on.
    const dangling = { ...connected, tickets: { ...connected.tickets, connectionId: null } };
    expect(applySettingsPatch(dangling, { auto_quarantine: false }).quarantine.autoQuarantine).toBe(
      false,
    );
  });
});
