import type { ClassificationCandidate, ClassificationUpdate, StoredRun } from "../records.js";
import { classify, type MonitorStates } from "../classifier.js";
import type { MonitorSettings } from "../monitors.js";

/**
 * Runs the classifier over stored tests and keeps only what changed. Pure: the stores load the
 * candidates and their runs, and write the updates back.
 */
export function classifyCandidates(
  candidates: readonly ClassificationCandidate[],
  runsByTest: ReadonlyMap<number, readonly StoredRun[]>,
  settings: MonitorSettings,
  now: number,
): ClassificationUpdate[] {
  const updates: ClassificationUpdate[] = [];
  for (const candidate of candidates) {
    const previous = JSON.parse(candidate.monitorStates) as MonitorStates;
    const result = classify(runsByTest.get(candidate.key) ?? [], settings, previous, now);
    const monitorStates = JSON.stringify(result.monitors);
    const statusChanged = result.status !== candidate.status;
    if (
      !statusChanged &&
      result.reason === candidate.statusReason &&
      monitorStates === candidate.monitorStates
    ) {
      continue;
    }
    updates.push({
      key: candidate.key,
      status: result.status,
      reason: result.reason,
      changedAt: statusChanged ? now : null,
      monitorStates,
      monitorsActive: Object.values(result.monitors).some((state) => state.active),
    });
  }
  return updates;
}
