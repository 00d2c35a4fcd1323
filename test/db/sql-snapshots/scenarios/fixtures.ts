/**
 * Values shared by several stores' scenarios, fixed (no clock, no random values) so that the
 * snapshots change only when a store's SQL does.
 */

/** 2026-01-15 12:34:56.789 UTC: inside an hour, so that windows have partial edges. */
export const NOW = Date.UTC(2026, 0, 15, 12, 34, 56, 789);
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const ORG = "org-1";
export const REPO_ID = "repo-1";
export const QUEUE_ID = "queue-1";
export const REPO = { host: "local", owner: "acme", name: "widgets" };
export const OWNED_REPO = { ...REPO, organizationId: ORG };
export const QUARANTINE = { quarantiningEnabled: true, autoQuarantine: true };

export const REPOSITORY_ROW = {
  id: REPO_ID,
  organization_id: ORG,
  host: "local",
  owner: "acme",
  name: "widgets",
  created_at: NOW,
};
