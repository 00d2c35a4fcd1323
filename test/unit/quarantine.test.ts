import { describe, expect, it } from "vitest";
import { quarantineSetting, type QuarantineOverride } from "../../src/testhealth/quarantine.js";
import type { HealthStatus } from "../../src/testhealth/monitors.js";

const on = { quarantiningEnabled: true, autoQuarantine: true };

describe("quarantine rule (docs/contract.md §3)", () => {
  it.each<
    [boolean, boolean, QuarantineOverride, HealthStatus, ReturnType<typeof quarantineSetting>]
  >([
    [true, true, "UNSPECIFIED", "flaky", "AUTO_QUARANTINE"],
    [true, true, "UNSPECIFIED", "healthy", null],
    [true, true, "UNSPECIFIED", "broken", null],
    [true, false, "UNSPECIFIED", "flaky", null],
    [true, true, "NEVER_QUARANTINE", "flaky", null],
    [true, false, "ALWAYS_QUARANTINE", "healthy", "ALWAYS_QUARANTINE"],
    [true, true, "ALWAYS_QUARANTINE", "broken", "ALWAYS_QUARANTINE"],
    [false, true, "ALWAYS_QUARANTINE", "flaky", null],
    [false, true, "UNSPECIFIED", "flaky", null],
  ])(
    "enabled=%s auto=%s override=%s status=%s → %s",
    (enabled, auto, override, status, expected) => {
      expect(
        quarantineSetting({ quarantiningEnabled: enabled, autoQuarantine: auto }, override, status),
      ).toBe(expected);
    },
  );

  it("broken tests are never auto-quarantined", () => {
    expect(quarantineSetting(on, "UNSPECIFIED", "broken")).toBeNull();
  });
});
