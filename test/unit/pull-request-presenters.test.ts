import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import {
  presentActor,
  presentCheckRun,
  presentMergeItem,
  presentPullRequest,
  presentTestingDetails,
} from "../../src/api/mergequeue/presenters.js";
import {
  MergeItemSchema,
  PullRequestDetailsSchema,
  TestingDetailsResponse,
} from "../../src/api/mergequeue/schemas.js";
import { toEnqueuedPullRequest } from "../../src/mergequeue/pull-request-service.js";
import type { PullRequestView, TestingDetails } from "../../src/mergequeue/pull-request-views.js";
import { entryRecord } from "../helpers/fake-engine.js";

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats.default(ajv);
const validMergeItem = ajv.compile(MergeItemSchema);
const validDetails = ajv.compile(PullRequestDetailsSchema);
const validTesting = ajv.compile(TestingDetailsResponse);

const AT = Date.UTC(2026, 10, 25, 21, 0, 0, 7);

describe("presentMergeItem", () => {
  it("RFC 3339 UTC times with milliseconds; every mergeItem field; the default priority name", () => {
    const entry = entryRecord("q", {
      prNumber: 12,
      prTitle: "Add login",
      prAuthor: "alice",
      prSha: "f".repeat(40),
      state: "tests_passed",
      stateChangedAt: AT,
    });
    const body = presentMergeItem(toEnqueuedPullRequest(entry));
    expect(body).toEqual({
      id: entry.id,
      state: "tests_passed",
      stateChangedAt: "2026-11-25T21:00:00.007Z",
      priorityValue: 100,
      priorityName: "medium",
      usedDefaultPriorityName: "medium",
      skipTheLine: false,
      noBatch: false,
      prNumber: 12,
      prTitle: "Add login",
      prSha: "f".repeat(40),
      prBaseBranch: "main",
      prAuthor: "alice",
    });
    expect(validMergeItem(body)).toBe(true);
  });

  it("no usedDefaultPriorityName when a priority was given", () => {
    const entry = entryRecord("q", { prNumber: 1, priorityValue: 0, usedDefaultPriority: false });
    const body = presentMergeItem(toEnqueuedPullRequest(entry));
    expect(body).not.toHaveProperty("usedDefaultPriorityName");
    expect(body).toMatchObject({ priorityName: "urgent", skipTheLine: true });
    expect(validMergeItem(body)).toBe(true);
  });
});

describe("presentPullRequest", () => {
  const view = (timeline?: PullRequestView["timeline"]): PullRequestView => ({
    ...toEnqueuedPullRequest(entryRecord("q", { prNumber: 3, stateChangedAt: AT })),
    readiness: {
      hasImpactedTargets: false,
      requiresImpactedTargets: false,
      doesBaseBranchMatch: true,
      gitHubMergeability: "mergeable",
    },
    forceEnqueued: false,
    isCurrentlySubmittedToQueue: true,
    ...(timeline ? { timeline } : {}),
  });

  it("readiness, forceEnqueued, isCurrentlySubmittedToQueue; no timeline unless read", () => {
    const body = presentPullRequest(view());
    expect(body).toMatchObject({
      readiness: {
        hasImpactedTargets: false,
        requiresImpactedTargets: false,
        doesBaseBranchMatch: true,
        gitHubMergeability: "mergeable",
      },
      forceEnqueued: false,
      isCurrentlySubmittedToQueue: true,
    });
    expect(body).not.toHaveProperty("timeline");
    expect(validDetails(body)).toBe(true);
  });

  it("the timeline with times, actors, runs and details", () => {
    const body = presentPullRequest(
      view([
        {
          at: AT,
          fromState: null,
          toState: "pending",
          reason: "submitted",
          actor: { kind: "user", name: "api-token:tok_1" },
          testRunId: null,
          detail: null,
        },
        {
          at: AT + 1000,
          fromState: "pending",
          toState: "testing",
          reason: "test_run_started",
          actor: { kind: "queue" },
          testRunId: "run-1",
          detail: "with #2",
        },
      ]),
    );
    expect(body.timeline).toEqual([
      {
        at: "2026-11-25T21:00:00.007Z",
        fromState: null,
        toState: "pending",
        reason: "submitted",
        actor: { kind: "user", name: "api-token:tok_1" },
        testRunId: null,
        detail: null,
      },
      {
        at: "2026-11-25T21:00:01.007Z",
        fromState: "pending",
        toState: "testing",
        reason: "test_run_started",
        actor: { kind: "queue" },
        testRunId: "run-1",
        detail: "with #2",
      },
    ]);
    expect(validDetails(body)).toBe(true);
  });

  it("actors", () => {
    expect(presentActor({ kind: "user", name: "bob" })).toEqual({ kind: "user", name: "bob" });
    expect(presentActor({ kind: "queue" })).toEqual({ kind: "queue" });
    expect(presentActor({ kind: "git_host" })).toEqual({ kind: "git_host" });
  });
});

describe("presentTestingDetails", () => {
  const details: TestingDetails = {
    runId: "run-1",
    status: "failed",
    createdAt: AT,
    requiredStatuses: ["build", "test"],
    requiredStatusesSource: "trunk_config",
    testBranch: "mainline-merge/main/run-1",
    testBranchSha: "c".repeat(40),
    checks: [
      { name: "build", conclusion: "success", url: "https://ci/1" },
      { name: "test", conclusion: "failure", url: null },
      { name: "lint", conclusion: "timed_out", url: null },
      { name: "other", conclusion: "weird", url: null },
      { name: "slow", conclusion: null, url: null },
    ],
    testedPullRequests: [{ prNumber: 2, prUrl: "https://github.com/a/b/pull/2", title: "T" }],
    dependentPrs: [1],
  };

  it("Trunk's shape: one check suite, uppercase conclusions, no commit statuses", () => {
    const body = presentTestingDetails(details);
    expect(body).toEqual({
      requiredStatuses: ["build", "test"],
      requiredStatusesSource: "trunk_config",
      testBranch: "mainline-merge/main/run-1",
      testBranchSha: "c".repeat(40),
      createdAt: "2026-11-25T21:00:00.007Z",
      status: "failed",
      checkSuites: [
        {
          checkRuns: [
            { name: "build", url: "https://ci/1", status: "COMPLETED", conclusion: "SUCCESS" },
            { name: "test", url: "", status: "COMPLETED", conclusion: "FAILURE" },
            { name: "lint", url: "", status: "COMPLETED", conclusion: "TIMED_OUT" },
            { name: "other", url: "", status: "COMPLETED" },
            { name: "slow", url: "", status: "COMPLETED", conclusion: "STALE" },
          ],
        },
      ],
      statusChecks: [],
      testedPullRequests: [{ prNumber: 2, prUrl: "https://github.com/a/b/pull/2", title: "T" }],
      dependentPrs: [1],
    });
    expect(validTesting(body)).toBe(true);
  });

  it("a run in progress: checks without a conclusion are in progress; nothing built yet is empty", () => {
    const body = presentTestingDetails({
      ...details,
      status: "in_progress",
      requiredStatusesSource: null,
      testBranch: null,
      testBranchSha: null,
      checks: [{ name: "slow", conclusion: null, url: null }],
    });
    expect(body).not.toHaveProperty("requiredStatusesSource");
    expect(body).toMatchObject({
      testBranch: "",
      testBranchSha: "",
      status: "in_progress",
      checkSuites: [{ checkRuns: [{ name: "slow", url: "", status: "IN_PROGRESS" }] }],
    });
    expect(validTesting(body)).toBe(true);
  });

  it("check runs one by one", () => {
    expect(presentCheckRun({ name: "x", conclusion: "cancelled", url: null }, "cancelled")).toEqual(
      { name: "x", url: "", status: "COMPLETED", conclusion: "CANCELLED" },
    );
    expect(presentCheckRun({ name: "x", conclusion: "skipped", url: "u" }, "succeeded")).toEqual({
      name: "x",
      url: "u",
      status: "COMPLETED",
      conclusion: "SKIPPED",
    });
  });
});
