import { describe, expect, it } from "vitest";
import { brokeAt } from "../../src/testhealth/runs.js";
import { DEFAULT_MONITOR_SETTINGS } from "../../src/testhealth/monitors.js";

const run = (branch: string, status: string, commitSha: string, at: number, attempt = "final") => ({
  branch,
  status,
  commitSha,
  at,
  attempt,
  excluded: false,
});

describe("which commit broke a broken test", () => {
  it("is the first failure of the failing streak its stable-branch runs end with", () => {
    const runs = [
      run("main", "failed", "c5", 5),
      run("feature", "passed", "f1", 4), // another branch: not evidence of main
      run("main", "failed", "c4", 4),
      run("main", "passed", "c4", 4, "retry"), // not a final attempt
      run("trunk-merge/main/1", "passed", "q1", 3), // the merge queue's branch
      run("main", "failed", "c3", 3),
      run("main", "passed", "c2", 2),
      run("main", "failed", "c1", 1),
    ];
    expect(brokeAt(runs, DEFAULT_MONITOR_SETTINGS)).toEqual({
      commitSha: "c3",
      at: 3,
      lastPassedSha: "c2",
    });
  });

  it("is unknown past the runs read, and none when main's latest run passed", () => {
    const failing = [run("main", "failed", "c2", 2), run("main", "failed", "c1", 1)];
    expect(brokeAt(failing, DEFAULT_MONITOR_SETTINGS)).toEqual({
      commitSha: "c1",
      at: 1,
      lastPassedSha: null,
    });
    expect(
      brokeAt([run("main", "passed", "c3", 3), ...failing], DEFAULT_MONITOR_SETTINGS),
    ).toBeNull();
    expect(brokeAt([], DEFAULT_MONITOR_SETTINGS)).toBeNull();
  });
});
