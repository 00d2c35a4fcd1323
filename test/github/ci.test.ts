/**
 * The merge queue's CI on GitHub (`GitHubCi`) against the fake GitHub, through a real server:
 * check runs and statuses on a tested commit pass or fail a run; App pins of GitHub's required
 * checks hold; the configuration at the tested commit beats GitHub's protection; a run concludes
 * through the poll when every webhook is lost; repeated deliveries and reads store one result;
 * a new process on the same database watches the runs left unfinished; draft testing pull
 * requests are opened and closed, and the pull-request workflows they trigger decide the run; a
 * failed run whose uploaded reports fail only on quarantined tests is reported flaky-only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServices } from "../../src/app.js";
import type { CiRunRequest, CiRunResult } from "../../src/mergequeue/providers.js";
import { WatchedCiRunStore } from "../../src/db/stores/watched-ci-runs.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { GITHUB_ACTIONS_APP_ID } from "../helpers/fake-github/index.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import type { TestServer } from "../helpers/server.js";
import type { GitHubProvider } from "../../src/providers/github/index.js";
import { bundle, junit, putBundle, testIdOf } from "../helpers/uploads.js";

let world: GitHubWorld;
let server: TestServer;
let github: GitHubProvider;
let queueId: string;
const results: CiRunResult[] = [];

const REPO = "acme-ci/widgets";
const WIDGETS = { host: "github.com", owner: "acme-ci", name: "widgets" };
/** Hardly ever on its own: the tests call `pollAll` where they mean a poll. */
const HOUR_MS = 3_600_000;

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh } = world;
  gh.createOrganization("acme-ci");
  gh.createUser("alice-ci");
  gh.addOrgMember("acme-ci", "alice-ci", "admin");
  await gh.createRepository({ owner: "acme-ci", name: "widgets" });
  server = await startGitHubServer(world, { githubCiPollIntervalMs: HOUR_MS });
  if (!server.services.github) throw new Error("no GitHub provider");
  github = server.services.github;
  const installationId = gh.installApp(world.app.id, {
    account: "acme-ci",
    repositories: ["widgets"],
  }).id;
  await settle(world, server);
  await github.installations.linkAsOperator(installationId, "acme");
  const created = await server.call<{ id?: string }>("createQueue", {
    repo: WIDGETS,
    targetBranch: "main",
  });
  expect(created.status, created.text).toBe(200);
  const queue = await new MergeQueueStore(
    server.database.handle.db,
    server.database.handle.dialect,
  ).find(server.organizationId, WIDGETS, "main");
  if (!queue) throw new Error("no queue");
  queueId = queue.id;
  github.ci.onResult((result) => {
    results.push(result);
  });
}, 60_000);

afterAll(async () => {
  await server.close();
  world.gh.schema.assertValid();
  await world.gh.close();
});

let runs = 0;

/** A test branch with a commit of its own (files added to it), and the request to test it. */
async function testRun(
  requiredStatuses: string[] | null,
  files: Record<string, string> = {},
): Promise<CiRunRequest> {
  runs += 1;
  const runId = `run-${String(runs)}`;
  const testBranch = `trunk-merge/main/${runId}`;
  const sha = await world.gh.commit(REPO, {
    branch: testBranch,
    from: "main",
    files: { [`${runId}.txt`]: `${runId}\n`, ...files },
  });
  return {
    repo: { organizationId: server.organizationId, ...WIDGETS },
    queueId,
    runId,
    targetBranch: "main",
    testBranch,
    sha,
    prNumbers: [runs],
    requiredStatuses,
  };
}

const resultsOf = (runId: string) => results.filter((r) => r.runId === runId);

/** The fake's pull requests whose head is `branch`. */
function pullsFrom(branch: string) {
  const found = [];
  for (let number = 1; number <= 100; number++) {
    try {
      const pr = world.gh.pullRequest(REPO, number);
      if (pr.headRef === branch) found.push(pr);
    } catch {
      break;
    }
  }
  return found;
}

/** The CI results the engine stored in its inbox for a run. */
async function storedResults(runId: string): Promise<number> {
  const rows = await server.database.handle.db
    .selectFrom("mqCommands")
    .select("payload")
    .where("queueId", "=", queueId)
    .execute();
  return rows
    .map((row) => JSON.parse(row.payload) as { type: string; result?: { runId: string } })
    .filter((p) => p.type === "ci_result" && p.result?.runId === runId).length;
}

async function finished(run: CiRunRequest): Promise<CiRunResult> {
  await expect
    .poll(() => resultsOf(run.runId).length, { timeout: 30_000, interval: 50 })
    .toBeGreaterThan(0);
  const [result] = resultsOf(run.runId);
  if (!result) throw new Error("no result");
  return result;
}

async function completedRun(
  sha: string,
  name: string,
  conclusion: "success" | "failure" | "neutral" | "skipped" | "cancelled",
  appId = GITHUB_ACTIONS_APP_ID,
) {
  await world.gh.postCheckRun(REPO, {
    name,
    headSha: sha,
    status: "completed",
    conclusion,
    appId,
    detailsUrl: `https://ci.example/${name}`,
  });
}

describe("a run's result from check runs and statuses", () => {
  it("passes once every required check passed (a neutral check run counts as success)", async () => {
    const run = await testRun(["build", "docs", "jenkins"]);
    await github.ci.start(run);
    const build = await world.gh.postCheckRun(REPO, {
      name: "build",
      headSha: run.sha,
      status: "in_progress",
    });
    await completedRun(run.sha, "docs", "neutral");
    world.gh.postStatus(REPO, run.sha, { state: "pending", context: "jenkins" });
    await settle(world, server);
    expect(resultsOf(run.runId)).toEqual([]);

    await world.gh.completeCheckRun(REPO, build.id, "success");
    world.gh.postStatus(REPO, run.sha, {
      state: "success",
      context: "jenkins",
      targetUrl: "https://jenkins.example/1",
    });
    const result = await finished(run);
    expect(result.error).toBeUndefined();
    // The queue's override: not the CI's to report.
    expect(result.requiredStatuses).toBeUndefined();
    expect(new Map(result.checks.map((c) => [c.name, c.conclusion]))).toEqual(
      new Map([
        ["build", "success"],
        ["docs", "success"],
        ["jenkins", "success"],
      ]),
    );
    expect(result.checks.find((c) => c.name === "jenkins")?.url).toBe("https://jenkins.example/1");
    await expect.poll(() => storedResults(run.runId), { timeout: 30_000 }).toBe(1);
    // The run is marked ended just after its result went to the listeners.
    const runs = new WatchedCiRunStore(server.database.handle.db);
    await expect
      .poll(async () => (await runs.get(queueId, run.runId))?.status, { timeout: 30_000 })
      .toBe("passed");
  });

  it("fails as soon as one required check failed, the others still running", async () => {
    const run = await testRun(["build", "lint"]);
    await github.ci.start(run);
    await world.gh.postCheckRun(REPO, { name: "build", headSha: run.sha, status: "in_progress" });
    world.gh.postStatus(REPO, run.sha, { state: "error", context: "lint" });
    const result = await finished(run);
    expect(result.checks).toEqual([{ name: "lint", conclusion: "failure" }]);
    // The run is marked ended just after its result went to the listeners.
    const runs = new WatchedCiRunStore(server.database.handle.db);
    await expect
      .poll(async () => (await runs.get(queueId, run.runId))?.status, { timeout: 30_000 })
      .toBe("failed");
  });

  it("needs both a check run and a status of the same name to pass", async () => {
    const run = await testRun(["build"]);
    await github.ci.start(run);
    world.gh.postStatus(REPO, run.sha, { state: "pending", context: "build" });
    await completedRun(run.sha, "build", "success");
    await settle(world, server);
    await github.ci.pollAll();
    expect(resultsOf(run.runId)).toEqual([]);
    world.gh.postStatus(REPO, run.sha, { state: "failure", context: "build" });
    const result = await finished(run);
    // The failing report's (the status has no URL).
    expect(result.checks).toEqual([{ name: "build", conclusion: "failure" }]);
  });

  it("resolves GitHub's required checks, and a check pinned to an App counts only from it", async () => {
    const { gh } = world;
    gh.protectBranch(REPO, "main", {
      requiredStatusChecks: {
        strict: false,
        contexts: ["ci"],
        checks: [{ context: "build", appId: GITHUB_ACTIONS_APP_ID }],
      },
    });
    const ruleset = gh.addRuleset(REPO, {
      name: "e2e",
      enforcement: "active",
      include: ["~DEFAULT_BRANCH"],
      exclude: [],
      bypassActors: [],
      rules: [
        {
          type: "required_status_checks",
          parameters: {
            strict_required_status_checks_policy: false,
            required_status_checks: [{ context: "e2e", integration_id: GITHUB_ACTIONS_APP_ID }],
          },
        },
      ],
    });
    try {
      const run = await testRun(null);
      await github.ci.start(run);
      // Another App's "build" (Mainline's own App here), passing: it does not count.
      await completedRun(run.sha, "build", "success", world.app.id);
      await completedRun(run.sha, "e2e", "success");
      gh.postStatus(REPO, run.sha, { state: "success", context: "ci" });
      await settle(world, server);
      await github.ci.pollAll();
      expect(resultsOf(run.runId)).toEqual([]);

      await completedRun(run.sha, "build", "success");
      const result = await finished(run);
      expect(result.error).toBeUndefined();
      expect(result.requiredStatuses?.source).toBe("branch_protection");
      expect(result.requiredStatuses?.statuses.toSorted()).toEqual(["build", "ci", "e2e"]);
      expect(result.checks.find((c) => c.name === "build")?.conclusion).toBe("success");
    } finally {
      gh.unprotectBranch(REPO, "main");
      gh.removeRuleset(REPO, ruleset);
    }
  });

  it("reads .mainline.yml and .trunk/trunk.yaml at the tested commit before GitHub's protection", async () => {
    const { gh } = world;
    gh.protectBranch(REPO, "main", {
      requiredStatusChecks: { strict: false, contexts: ["never-reported"], checks: [] },
    });
    try {
      const mainline = await testRun(null, {
        ".mainline.yml": "merge:\n  required_statuses:\n    - lint\n",
        ".trunk/trunk.yaml": "merge:\n  required_statuses:\n    - other\n",
      });
      await github.ci.start(mainline);
      await completedRun(mainline.sha, "lint", "success");
      expect((await finished(mainline)).requiredStatuses).toEqual({
        statuses: ["lint"],
        source: "mainline_config",
      });

      const trunk = await testRun(null, {
        ".trunk/trunk.yaml": "version: 0.1\nmerge:\n  required_statuses:\n    - unit\n",
      });
      await github.ci.start(trunk);
      await completedRun(trunk.sha, "unit", "skipped");
      const trunkResult = await finished(trunk);
      expect(trunkResult.requiredStatuses).toEqual({ statuses: ["unit"], source: "trunk_config" });
      expect(trunkResult.checks).toEqual([
        { name: "unit", conclusion: "skipped", url: "https://ci.example/unit" },
      ]);

      const broken = await testRun(null, { ".mainline.yml": "merge: [unclosed\n" });
      await github.ci.start(broken);
      expect((await finished(broken)).error?.reason).toBe("config_parsing_failure");
    } finally {
      gh.unprotectBranch(REPO, "main");
    }
  });

  it("ends with no_required_statuses when nothing names any", async () => {
    const run = await testRun(null, {
      ".mainline.yml": "ci:\n  checks:\n    - {name: unit, run: 'true'}\n",
    });
    await github.ci.start(run);
    const result = await finished(run);
    expect(result.error?.reason).toBe("no_required_statuses");
    expect(result.error?.message).toContain("built-in runner only");
  });
});

describe("lost, repeated and late signals", () => {
  it("concludes through the poll when every webhook is lost", async () => {
    const run = await testRun(["build"]);
    await github.ci.start(run);
    world.gh.setWebhookChaos({ drop: 1 });
    try {
      // A poll of a run whose commit did not change: two conditional reads, both 304 (free).
      await github.ci.pollAll();
      const mark = world.gh.requests.mark();
      await github.ci.pollAll();
      const polled = world.gh.requests.filter({ since: mark });
      expect(polled.map((r) => [r.operationId, r.status])).toEqual([
        ["checks/list-for-ref", 304],
        ["repos/get-combined-status-for-ref", 304],
      ]);
      await completedRun(run.sha, "build", "success");
      await settle(world, server);
      expect(resultsOf(run.runId)).toEqual([]);
      await github.ci.pollAll();
      expect(resultsOf(run.runId)).toHaveLength(1);
      expect(resultsOf(run.runId)[0]?.checks[0]?.conclusion).toBe("success");
    } finally {
      world.gh.setWebhookChaos({});
    }
  });

  it("stores one result for repeated deliveries, reads and starts", async () => {
    const run = await testRun(["build"]);
    await github.ci.start(run);
    world.gh.setWebhookChaos({ duplicate: 1 });
    try {
      await completedRun(run.sha, "build", "success");
      await Promise.all([
        github.ci.pollAll(),
        github.ci.commitChanged(run.repo, run.sha),
        github.ci.commitChanged(run.repo, run.sha),
        github.ci.start(run),
      ]);
      await settle(world, server);
      for (const delivery of world.gh.deliveries("check_run")) {
        await world.gh.webhooks.redeliver(delivery.guid);
      }
      await settle(world, server);
      await github.ci.pollAll();
    } finally {
      world.gh.setWebhookChaos({});
    }
    expect(resultsOf(run.runId)).toHaveLength(1);
    await expect.poll(() => storedResults(run.runId), { timeout: 30_000 }).toBe(1);
  });

  it("ignores another repository's signal on the same commit", async () => {
    const run = await testRun(["build"]);
    await github.ci.start(run);
    await github.ci.commitChanged({ ...run.repo, organizationId: "someone-else" }, run.sha);
    expect(resultsOf(run.runId)).toEqual([]);
    await github.ci.cancel(queueId, run.runId);
  });

  it("a new process on the same database watches the runs left unfinished, and polls them", async () => {
    const run = await testRun(["build"]);
    await github.ci.start(run);
    // This process hears nothing more of it (its webhooks are lost, it stops polling)…
    world.gh.setWebhookChaos({ drop: 1 });
    await github.ci.stopWatching();
    const next = createServices(server.database.handle, {
      github: world.config,
      githubCiPollIntervalMs: 100,
      githubSyncIntervalMs: 0,
      dataDir: server.database.dataDir,
    });
    const nextGithub = next.github;
    if (!nextGithub) throw new Error("no GitHub provider");
    const heard: CiRunResult[] = [];
    nextGithub.ci.onResult((result) => {
      heard.push(result);
    });
    try {
      // …the next one, started, finds the run in storage and reads it at once (nothing yet)…
      nextGithub.ci.startWatching();
      await nextGithub.ci.pollAll();
      expect(heard).toEqual([]);
      // …and its poll loop concludes it once the check passed.
      await completedRun(run.sha, "build", "success");
      await settle(world, server);
      await expect
        .poll(() => heard.filter((r) => r.runId === run.runId).length, { timeout: 30_000 })
        .toBe(1);
      expect(resultsOf(run.runId)).toEqual([]);
      // Stored as ended once the listeners have it (just after).
      const store = new WatchedCiRunStore(server.database.handle.db);
      await expect
        .poll(async () => (await store.get(queueId, run.runId))?.status, { timeout: 10_000 })
        .toBe("passed");
    } finally {
      world.gh.setWebhookChaos({});
      await nextGithub.ci.stopWatching();
      github.ci.startWatching();
    }
  });

  it("polls in one process at a time: another on the same database takes over when it stops", async () => {
    const run = await testRun(["build"]);
    await github.ci.start(run);
    const other = createServices(server.database.handle, {
      github: world.config,
      githubCiPollIntervalMs: HOUR_MS,
      githubSyncIntervalMs: 0,
      dataDir: server.database.dataDir,
    }).github;
    if (!other) throw new Error("no GitHub provider");
    const reads = (since: number) =>
      world.gh.requests.count({ operationId: "checks/list-for-ref", since });
    try {
      // This process's loop holds the lease: the other's loop reads nothing…
      await github.ci.pollAll({ leased: true });
      const mark = world.gh.requests.mark();
      await other.ci.pollAll({ leased: true });
      expect(reads(mark)).toBe(0);
      await github.ci.pollAll({ leased: true });
      expect(reads(mark)).toBeGreaterThan(0);
      // …until this one stops and lets it go.
      await github.ci.stopWatching();
      const after = world.gh.requests.mark();
      await other.ci.pollAll({ leased: true });
      expect(reads(after)).toBeGreaterThan(0);
      const quiet = world.gh.requests.mark();
      await github.ci.pollAll({ leased: true });
      expect(reads(quiet)).toBe(0);
    } finally {
      await other.ci.stopWatching();
      github.ci.startWatching();
    }
  });
});

describe("draft testing pull requests", () => {
  it("opens one per run when the queue asks, and closes it when the run ends or is cancelled", async () => {
    const updated = await server.call("updateQueue", {
      repo: WIDGETS,
      targetBranch: "main",
      createPrsForTestingBranches: true,
    });
    expect(updated.status, updated.text).toBe(200);
    try {
      const run = await testRun(["build"]);
      await github.ci.start(run);
      await github.ci.start(run);
      const opened = pullsFrom(run.testBranch);
      expect(opened).toHaveLength(1);
      expect(opened[0]?.draft).toBe(true);
      expect(opened[0]?.state).toBe("open");
      expect(opened[0]?.title).toContain(`Mainline test run ${run.runId}`);
      await completedRun(run.sha, "build", "success");
      await finished(run);
      await expect
        .poll(() => world.gh.pullRequest(REPO, opened[0]?.number ?? 0).state, { timeout: 30_000 })
        .toBe("closed");

      // One opened by hand (or by an earlier attempt) is found, not opened twice; cancelling closes it.
      const cancelled = await testRun(["build"]);
      const existing = await world.gh.openPullRequest(REPO, {
        head: cancelled.testBranch,
        draft: true,
      });
      await github.ci.start(cancelled);
      expect(pullsFrom(cancelled.testBranch)).toHaveLength(1);
      await github.ci.cancel(queueId, cancelled.runId);
      expect(world.gh.pullRequest(REPO, existing).state).toBe("closed");
      const stored = await new WatchedCiRunStore(server.database.handle.db).get(
        queueId,
        cancelled.runId,
      );
      expect(stored?.status).toBe("cancelled");
      expect(stored?.testPrNumber).toBe(existing);
      // A cancelled run's checks are no longer read.
      await completedRun(cancelled.sha, "build", "success");
      await settle(world, server);
      await github.ci.pollAll();
      expect(resultsOf(cancelled.runId)).toEqual([]);
    } finally {
      await server.call("updateQueue", {
        repo: WIDGETS,
        targetBranch: "main",
        createPrsForTestingBranches: false,
      });
    }
  });
  it("runs the repository's pull-request workflows on the draft pull request, which decide the run", async () => {
    const { gh } = world;
    await server.call("updateQueue", {
      repo: WIDGETS,
      targetBranch: "main",
      createPrsForTestingBranches: true,
    });
    gh.configureCi(REPO, [
      {
        name: "pr-only",
        on: { pullRequest: { branches: ["main"] } },
        checks: [
          { name: "unit", outcome: "pass" },
          { name: "lint", run: "test ! -f bad.txt" },
        ],
      },
    ]);
    try {
      const good = await testRun(["unit", "lint"]);
      await github.ci.start(good);
      const passed = await finished(good);
      expect(passed.error).toBeUndefined();
      expect(new Map(passed.checks.map((c) => [c.name, c.conclusion]))).toEqual(
        new Map([
          ["unit", "success"],
          ["lint", "success"],
        ]),
      );
      // Only the pull request triggered them: the push of the test branch did not.
      const ran = gh.ci.runs.filter((r) => r.sha === good.sha);
      expect(ran).toHaveLength(2);
      expect(ran.every((r) => r.pullRequest !== null)).toBe(true);

      const bad = await testRun(["unit", "lint"], { "bad.txt": "x\n" });
      await github.ci.start(bad);
      const failed = await finished(bad);
      expect(failed.checks.find((c) => c.name === "lint")?.conclusion).toBe("failure");
      await gh.settleCi();
    } finally {
      gh.configureCi(REPO, []);
      await server.call("updateQueue", {
        repo: WIDGETS,
        targetBranch: "main",
        createPrsForTestingBranches: false,
      });
    }
  });
});

describe("failures of known flaky tests (the CI job uploads its reports)", () => {
  /** The CI job's upload for a tested commit: `checkout` and `numbers` with these results. */
  const upload = async (
    commit: string,
    branch: string,
    checkout: "passed" | "failed",
    numbers: "passed" | "failed",
  ) => {
    const report = junit([
      { name: "checkout", status: checkout },
      { name: "numbers", status: numbers },
    ]);
    await putBundle(
      server,
      await bundle({ files: [report], commit, branch, repo: WIDGETS }),
      WIDGETS,
    );
  };

  it("reports flaky-only a run whose only failed test is quarantined, after its upload is processed", async () => {
    const { worker } = server.services;
    // main's CI made the tests known; `checkout` is quarantined.
    await upload("c".repeat(40), "main", "passed", "passed");
    await worker.idle();
    const override = await server.call("flaky-tests/set-quarantine-override", {
      repo: WIDGETS,
      org_url_slug: "acme",
      test_id: testIdOf({ name: "checkout", repo: WIDGETS }),
      override: "ALWAYS_QUARANTINE",
    });
    expect(override.status, override.text).toBe(200);

    const flaky = await testRun(["test"]);
    await github.ci.start(flaky);
    // The job uploads, then its check run fails, before the upload is processed: the run waits.
    await worker.stop();
    try {
      await upload(flaky.sha, flaky.testBranch, "failed", "passed");
      await completedRun(flaky.sha, "test", "failure");
      await settle(world, server);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(resultsOf(flaky.runId)).toEqual([]);
    } finally {
      worker.start();
    }
    const retried = await finished(flaky);
    expect(retried.flakyOnly).toBe(true);
    expect(retried.checks).toEqual([
      { name: "test", conclusion: "failure", url: "https://ci.example/test" },
    ]);

    // A draft testing pull request's workflow tests GitHub's merge commit of the test branch (not
    // the tested commit); its upload names the branch: it is the run's.
    const drafts = (on: boolean) =>
      server.call("updateQueue", {
        repo: WIDGETS,
        targetBranch: "main",
        createPrsForTestingBranches: on,
      });
    expect((await drafts(true)).status).toBe(200);
    try {
      const merged = await testRun(["test"]);
      await github.ci.start(merged);
      await upload("d".repeat(40), merged.testBranch, "failed", "passed");
      await worker.idle();
      await completedRun(merged.sha, "test", "failure");
      expect((await finished(merged)).flakyOnly).toBe(true);
    } finally {
      await drafts(false);
    }
    // Without one, the branch may be a slot's, which the slot's runs share: another commit's
    // upload on it is not this run's.
    const slotted = await testRun(["test"]);
    await github.ci.start(slotted);
    await upload("e".repeat(40), slotted.testBranch, "failed", "passed");
    await worker.idle();
    await completedRun(slotted.sha, "test", "failure");
    expect((await finished(slotted)).flakyOnly).toBeUndefined();

    // A real failure besides it: not flaky-only.
    const broken = await testRun(["test"]);
    await github.ci.start(broken);
    await upload(broken.sha, broken.testBranch, "failed", "failed");
    await worker.idle();
    await completedRun(broken.sha, "test", "failure");
    expect((await finished(broken)).flakyOnly).toBeUndefined();

    // Another commit's quarantined failure says nothing of this one, which uploaded nothing.
    const silent = await testRun(["test"]);
    await github.ci.start(silent);
    await completedRun(silent.sha, "test", "failure");
    expect((await finished(silent)).flakyOnly).toBeUndefined();

    // A cancelled required check is not explained by failed tests.
    const cancelled = await testRun(["test", "lint"]);
    await github.ci.start(cancelled);
    await upload(cancelled.sha, cancelled.testBranch, "failed", "passed");
    await worker.idle();
    await completedRun(cancelled.sha, "lint", "cancelled");
    await completedRun(cancelled.sha, "test", "failure");
    expect((await finished(cancelled)).flakyOnly).toBeUndefined();
  });
});
