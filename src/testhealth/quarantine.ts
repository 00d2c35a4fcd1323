import type { HealthStatus } from "./monitors.js";

/** Per-test quarantine override, kept with who set it, why and when. */
export type QuarantineOverride = "ALWAYS_QUARANTINE" | "NEVER_QUARANTINE" | "UNSPECIFIED";

export interface QuarantineSettings {
  quarantiningEnabled: boolean;
  autoQuarantine: boolean;
}

/** Why a test is quarantined, as list-quarantined-tests names it; null when it is not. */
export type QuarantineSetting = "ALWAYS_QUARANTINE" | "AUTO_QUARANTINE" | null;

/**
 * `quarantined = enabled && (override == ALWAYS || (override != NEVER && auto && status == flaky))`.
 * Broken tests are never auto-quarantined: a test that always fails hides a real regression.
 */
export function quarantineSetting(
  settings: QuarantineSettings,
  override: QuarantineOverride,
  status: HealthStatus,
): QuarantineSetting {
  if (!settings.quarantiningEnabled) return null;
  if (override === "ALWAYS_QUARANTINE") return "ALWAYS_QUARANTINE";
  if (override === "NEVER_QUARANTINE") return null;
  return settings.autoQuarantine && status === "flaky" ? "AUTO_QUARANTINE" : null;
}
