/**
 * How the GitHub CI judges a tested commit (pure): GitHub's conclusions and statuses mapped as its
 * branch protection judges them, pins, a failure ending a run early, and check runs and statuses
 * of the same name; and migration 0022 down and up again.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { githubCiRuns } from "../../src/db/migrations/0022_github_ci_runs.js";
import { hostNeutralTables } from "../../src/db/migrations/0037_host_neutral_tables.js";
import { columnTypes } from "../../src/db/migrations/types.js";
import {
  checkRunConclusion,
  judgeObservations,
  statusConclusion,
} from "../../src/providers/github/ci.js";
import { createTestDatabase } from "../helpers/database.js";

const run = (name: string, conclusion: string | undefined, appId = 1) => ({
  name,
  appId,
  kind: "check_run" as const,
  conclusion: conclusion === undefined ? undefined : checkRunConclusion(conclusion),
  url: `https://ci.example/${name}`,
});
const status = (name: string, state: string) => ({
  name,
  appId: null,
  kind: "status" as const,
  conclusion: statusConclusion(state),
  url: undefined,
});

describe("mapping GitHub's conclusions", () => {
  it("maps every check run conclusion deliberately, unknown ones to failure", () => {
    const mapped = Object.fromEntries(
      [
        "success",
        "neutral",
        "skipped",
        "failure",
        "action_required",
        "cancelled",
        "timed_out",
        "stale",
        "startup_failure",
      ].map((c) => [c, checkRunConclusion(c)]),
    );
    expect(mapped).toEqual({
      success: "success",
      neutral: "success",
      skipped: "skipped",
      failure: "failure",
      action_required: "failure",
      cancelled: "cancelled",
      timed_out: "timed_out",
      stale: "timed_out",
      startup_failure: "failure",
    });
  });

  it("maps commit statuses: pending waits, error fails", () => {
    expect(["success", "failure", "error", "pending"].map(statusConclusion)).toEqual([
      "success",
      "failure",
      "failure",
      undefined,
    ]);
  });
});

describe("judging a commit", () => {
  const required = [
    { context: "build", appId: 1 },
    { context: "lint", appId: null },
  ];

  it("waits for a required check that has not reported or is running", () => {
    expect(judgeObservations(required, [run("build", "success")])).toEqual({ state: "pending" });
    expect(
      judgeObservations(required, [run("build", "success"), run("lint", undefined, 2)]),
    ).toEqual({ state: "pending" });
  });

  it("fails at once when one failed, listing the finished checks only", () => {
    const verdict = judgeObservations(required, [
      run("build", undefined),
      status("lint", "error"),
      run("extra", "success", 9),
    ]);
    expect(verdict).toEqual({
      state: "failed",
      checks: [
        { name: "lint", conclusion: "failure" },
        { name: "extra", conclusion: "success", url: "https://ci.example/extra" },
      ],
    });
  });

  it("passes when all passed (skipped too); another App's report of a pinned check is left out", () => {
    const verdict = judgeObservations(required, [
      run("build", "failure", 2),
      run("build", "success", 1),
      run("lint", "skipped", 5),
    ]);
    expect(verdict).toEqual({
      state: "passed",
      checks: [
        { name: "build", conclusion: "success", url: "https://ci.example/build" },
        { name: "lint", conclusion: "skipped", url: "https://ci.example/lint" },
      ],
    });
    // The pinned check only from another App: never passes.
    expect(
      judgeObservations(required, [run("build", "success", 2), run("lint", "success")]),
    ).toEqual({
      state: "pending",
    });
    // A status cannot meet a pinned check.
    expect(
      judgeObservations(required, [status("build", "success"), run("lint", "success")]),
    ).toEqual({ state: "pending" });
  });

  it("needs a check run and a status of the same name both to pass", () => {
    const both = [{ context: "ci", appId: null }];
    expect(judgeObservations(both, [run("ci", "success"), status("ci", "pending")])).toEqual({
      state: "pending",
    });
    expect(judgeObservations(both, [run("ci", "success"), status("ci", "failure")])).toMatchObject({
      state: "failed",
      checks: [{ name: "ci", conclusion: "failure" }],
    });
  });
});

describe("migration 0022", () => {
  it("goes down (the table is dropped) and up again", async () => {
    const database = await createTestDatabase();
    try {
      const db = database.handle.db as never;
      const types = columnTypes(database.handle.dialect);
      const count = () => sql`select count(*) as n from github_ci_runs`.execute(database.handle.db);
      // 0037 named it watched_ci_runs: back to 0036 first.
      await hostNeutralTables.down(db, types);
      expect((await count()).rows).toHaveLength(1);
      await githubCiRuns.down(db, types);
      await expect(count()).rejects.toThrow();
      await githubCiRuns.up(db, types);
      expect((await count()).rows).toHaveLength(1);
      await hostNeutralTables.up(db, types);
      const renamed = sql`select count(*) as n from watched_ci_runs`.execute(database.handle.db);
      expect((await renamed).rows).toHaveLength(1);
    } finally {
      await database.cleanup();
    }
  });
});
