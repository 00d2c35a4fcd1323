/**
 * The planner's persisted snapshot carries a `version`; one stored by an older server is brought to
 * the current shape here, step by step, when loaded, so the planner only sees the current shape. A
 * new required field of `QueueSnapshot` needs a new version and its step (version 1: no `version`,
 * `verdicts` and `landedThrough` may be absent).
 */
import type { QueueSnapshot } from "./model.js";
import { NO_VERDICTS } from "./speculation.js";

export const SNAPSHOT_VERSION = 3;

type Stored = Record<string, unknown> & { version?: unknown };

/** One step per version: the function at index `n` turns a version-`n` snapshot into `n + 1`. */
const UPGRADES: Record<number, (snapshot: Stored) => Stored> = {
  1: (snapshot) => ({
    ...snapshot,
    verdicts: snapshot.verdicts ?? { ...NO_VERDICTS },
    landedThrough: snapshot.landedThrough ?? {},
    version: 2,
  }),
  // Version 3: halving bisection became one-round localization. A stored group restarts as a
  // localization of its undecided PRs, none of them known to fail yet (so every prefix, the
  // whole set included, is tested); its old runs' results are ignored when they come.
  2: (snapshot) => ({
    ...snapshot,
    bisections: Object.fromEntries(
      Object.entries((snapshot.bisections ?? {}) as Record<string, OldGroup>).map(([id, group]) => {
        const entries = (group.segments ?? []).flatMap((segment) => segment.entries);
        return [
          id,
          {
            id,
            runId: group.runId,
            entries,
            passed: 0,
            passedRunId: null,
            failsAt: entries.length + 1,
            failedRunId: group.runId,
            prefixes: [],
            roundStartedAt: null,
            presumedAt: null,
          },
        ];
      }),
    ),
    version: 3,
  }),
};

/** A bisection group as version 2 stored it. */
interface OldGroup {
  runId: string;
  segments?: { entries: string[] }[];
}

/** The stored snapshot in the current shape (a snapshot without `version` is version 1). */
export function upgradeSnapshot(stored: unknown): QueueSnapshot {
  if (typeof stored !== "object" || stored === null) {
    throw new Error("the stored planner snapshot is not an object");
  }
  let snapshot = stored as Stored;
  let version = snapshot.version === undefined ? 1 : snapshot.version;
  if (typeof version !== "number" || !Number.isInteger(version) || version < 1) {
    throw new Error(
      `the stored planner snapshot has an unknown version ${JSON.stringify(version)}`,
    );
  }
  if (version > SNAPSHOT_VERSION) {
    throw new Error(
      `the stored planner snapshot is version ${version}, newer than this server's (${SNAPSHOT_VERSION}): upgrade Mainline`,
    );
  }
  while (version < SNAPSHOT_VERSION) {
    const step = UPGRADES[version];
    if (!step) throw new Error(`no upgrade of planner snapshots from version ${version}`);
    snapshot = step(snapshot);
    version += 1;
  }
  return snapshot as unknown as QueueSnapshot;
}
