/**
 * The merge queue on GitLab, end to end with real processes: `mainline serve` child processes
 * configured for the fake GitLab (real bare repositories, git over HTTP, pipelines running the
 * project's own `.gitlab-ci.yml` in real checkouts), with faults on. Good, breaking, conflicting,
 * stacked and flaky merge requests; the server killed (SIGKILL) mid-queue and another started on
 * the same database. The CI job's tests write JUnit and its `after_script` uploads them with
 * `mainline upload`; the flaky merge request's run fails on a quarantined test only, is run once
 * more and merges. Every good merge request is merged once, in order, with a tree a passing
 * pipeline tested; the others stay open.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { GITLAB_HOST, startGitLabWorld, type GitLabWorld } from "../helpers/gitlab.js";
import {
  CLI_ANYWHERE,
  startServer,
  stopAllProcesses,
  waitFor,
  type RunningServer,
} from "../helpers/process.js";
import { bundle, testIdOf } from "../helpers/uploads.js";
import { post, postOk } from "../cli/support.js";
import { FLAKY_SUITE_CHECK } from "../helpers/flaky-suite.js";

const PROJECT = "acme-gl/widgets";
const REPO = { host: GITLAB_HOST, owner: "acme-gl", name: "widgets" };
const QUEUE = { repo: REPO, targetBranch: "main" };
/** The repository's test suite (`check.sh`): `content`, and `checkout`, flaky. */
const CHECK = FLAKY_SUITE_CHECK;
const CI = `workflow:
  rules:
    - if: $CI_COMMIT_BRANCH =~ /^trunk-merge\\//
test:
  script:
    - sh check.sh
  after_script:
    - '"$MAINLINE_NODE" $MAINLINE_CLI upload --junit reports/junit.xml --repo "$MAINLINE_REPO" --wait --wait-timeout 30 || true'
`;
const CHECKOUT_TEST = testIdOf({
  name: "checkout",
  classname: "widgets",
  suite: "widgets",
  repo: REPO,
});

let world: GitLabWorld | undefined;
let database: TestDatabase | undefined;
const servers: RunningServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop("SIGKILL")));
  await world?.gl.close();
  world = undefined;
  await database?.cleanup();
  database = undefined;
});
afterAll(stopAllProcesses);

async function states(url: string, token: string, numbers: number[]) {
  const body = await postOk(
    url,
    "getSubmittedPullRequests",
    { ...QUEUE, prs: numbers.map((number) => ({ number })) },
    token,
  );
  const list = body.pullRequests as { prNumber: number; state: string }[];
  return new Map(list.map((pr) => [pr.prNumber, pr.state]));
}

function git(gitDir: string, args: string[]): string {
  return execFileSync("git", ["--git-dir", gitDir, ...args], { encoding: "utf8" }).trim();
}

/** A JUnit report of main, so that the suite's tests are known; `checkout` is then quarantined. */
async function quarantineCheckout(url: string, token: string, head: string): Promise<void> {
  const report = [
    '<testsuite name="widgets">',
    '<testcase classname="widgets" name="content"/>',
    '<testcase classname="widgets" name="checkout"/>',
    "</testsuite>",
  ].join("\n");
  const body = await bundle({ files: [report], commit: head, branch: "main", repo: REPO });
  const created = await postOk(
    url,
    "metrics/createBundleUpload",
    { repo: REPO, orgUrlSlug: "acme", clientVersion: "ci-job", remoteUrls: [] },
    token,
  );
  expect((await fetch(created.url as string, { method: "PUT", body })).ok).toBe(true);
  await waitFor(
    async () =>
      (
        await post(
          url,
          "flaky-tests/set-quarantine-override",
          {
            repo: REPO,
            org_url_slug: "acme",
            test_id: CHECKOUT_TEST,
            override: "ALWAYS_QUARANTINE",
          },
          token,
        )
      ).status === 200,
    "the flaky test quarantined",
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

describe("the merge queue on GitLab, real processes", () => {
  it("a server killed mid-queue: another on the same database finishes it, faults on", async () => {
    world = await startGitLabWorld();
    database = await createTestDatabase();
    const { gl } = world;
    gl.createUser("alice");
    await gl.createProject({
      path: PROJECT,
      files: { "check.sh": CHECK, "shared.txt": "one\ntwo\nthree\n", ".gitlab-ci.yml": CI },
    });
    gl.addMember(PROJECT, "alice", 30);
    const bot = gl.createProjectToken(PROJECT, { accessLevel: 40 });
    const token = randomBytes(32).toString("hex");
    const flakyDir = mkdtempSync(path.join(tmpdir(), "mainline-flaky-"));
    const mr = async (branch: string, from: string, files: Record<string, string>) => {
      await gl.commit(PROJECT, branch, files, { author: "alice", from });
      return (
        await gl.createMergeRequest({
          project: PROJECT,
          sourceBranch: branch,
          title: branch,
          author: "alice",
        })
      ).iid;
    };
    const first = await mr("first", "main", { "first.txt": "first\n" });
    const shared = await mr("shared", "main", { "shared.txt": "one\nTWO\nthree\n" });
    const breaking = await mr("breaking", "main", { "breaking.txt": "BROKEN\n" });
    const conflicting = await mr("conflicting", "main", { "shared.txt": "one\n2\nthree\n" });
    const base = await mr("base", "main", { "base.txt": "base\n" });
    // Stacked: its head contains `base`'s head.
    const stacked = await mr("stacked", "base", { "stacked.txt": "stacked\n" });
    const flaky = await mr("flaky", "main", { "flaky.txt": "flaky\n" });
    const good = [first, shared, base, stacked, flaky];
    const order = [first, shared, breaking, conflicting, base, stacked, flaky];

    const env = {
      ...database.env,
      ...world.env,
      MAINLINE_GITLAB_RECONCILE_SECONDS: "2",
      MAINLINE_BOOTSTRAP_ORG: "acme",
      MAINLINE_BOOTSTRAP_TOKEN: token,
      // A killed server's queue and deliveries are taken over 5 s after its last renewal, not 30.
      MAINLINE_QUEUE_LEASE_SECONDS: "5",
    };
    const jobVariables = (url: string) => ({
      MAINLINE_URL: url,
      MAINLINE_TOKEN: token,
      MAINLINE_REPO: `${GITLAB_HOST}/${PROJECT}`,
      MAINLINE_NODE: process.execPath,
      MAINLINE_CLI: CLI_ANYWHERE.join(" "),
      FLAKY_DIR: flakyDir,
    });
    gl.setWebhookChaos({ duplicate: 0.2, reorder: 0.2, lateMs: 300 });
    const faults = [
      gl.faults.add(
        gl.fault.didThen5xx({ method: "PUT", path: "/projects/:id/merge_requests/:iid/merge" }),
      ),
      gl.faults.add(
        gl.fault.serverError(502, { method: "GET", path: "/projects/:id/merge_requests/:iid" }),
      ),
      gl.faults.add(gl.fault.serverError(503, { method: "POST", path: /git-receive-pack$/ })),
    ];

    const one = await startServer(env);
    servers.push(one);
    gl.setVariables(PROJECT, jobVariables(one.url));
    const connected = await postOk(one.url, "gitlab/connect", { token: bot.token }, token);
    const hook = (connected.connection as { webhook: { path: string; secret: string } }).webhook;
    gl.addHook(PROJECT, { url: `${one.url}${hook.path}`, token: hook.secret });
    await postOk(one.url, "createQueue", QUEUE, token);
    await postOk(one.url, "updateQueue", { ...QUEUE, mergeMethod: "merge_commit" }, token);
    await quarantineCheckout(one.url, token, (await gl.branchHead(PROJECT, "main")) ?? "");
    for (const number of order) {
      await postOk(one.url, "submitPullRequest", { ...QUEUE, pr: { number } }, token);
    }
    // Killed once the first has merged, with the rest of the queue in flight.
    await waitFor(() => gl.mergeRequest(PROJECT, first).state === "merged", "the first merged", {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    await one.stop("SIGKILL");
    servers.splice(servers.indexOf(one), 1);

    const two = await startServer(env);
    servers.push(two);
    gl.setVariables(PROJECT, jobVariables(two.url));
    // The killed server's hook keeps failing (GitLab disables it); a Maintainer points a new one.
    gl.addHook(PROJECT, { url: `${two.url}${hook.path}`, token: hook.secret });
    let final = new Map<number, string>();
    await waitFor(
      async () => {
        final = await states(two.url, token, order);
        // The conflicting one fails as a conflict where its test branch found it, or (the one
        // ahead landed first) waits out of the order for its author, as GitLab says it conflicts.
        return order.every((number) =>
          (number === conflicting ? ["failed", "not_ready"] : ["merged", "failed"]).includes(
            final.get(number) ?? "",
          ),
        );
      },
      "every merge request concluded",
      { timeoutMs: 150_000, intervalMs: 250 },
    ).catch((error: unknown) => {
      // What was left, and what the server said last: the failure's own account.
      throw new Error(
        `${String(error)}; states ${JSON.stringify([...final])}; log:\n${two.stdout.slice(-3000)}`,
      );
    });
    for (const number of good) expect(final.get(number), `!${String(number)}`).toBe("merged");
    expect(final.get(breaking)).toBe("failed");
    const held = (
      await postOk(
        two.url,
        "getSubmittedPullRequest",
        { ...QUEUE, pr: { number: conflicting }, includeTimeline: true },
        token,
      )
    ).timeline as { reason: string }[];
    expect(held.at(-1)?.reason).toMatch(/^(merge_conflict|not_mergeable)$/);
    for (const number of good) expect(gl.mergeRequest(PROJECT, number).state).toBe("merged");
    for (const number of [breaking, conflicting]) {
      expect(gl.mergeRequest(PROJECT, number).state).toBe("opened");
    }
    for (const rule of faults) expect(gl.faults.fired(rule)).toBeGreaterThan(0);
    // The GitLab token reached no log line (git's failures and GitLab's refusals among them).
    expect(`${one.stdout}${one.stderr}${two.stdout}${two.stderr}`).not.toContain(bot.token);

    // One merge commit on main per good merge request, in submission order: none twice.
    const gitDir = gl.gitDir(PROJECT);
    const history = git(gitDir, ["log", "--first-parent", "--reverse", "--format=%H %T", "main"])
      .split("\n")
      .slice(1)
      .map((line) => line.split(" ") as [string, string]);
    expect(history.map(([sha]) => sha)).toEqual(
      good.map((number) => gl.mergeRequest(PROJECT, number).mergeCommitSha),
    );
    // Each landed tree is one a passing pipeline tested (its commit, or one it was made on).
    const tested = new Set(
      gl
        .pipelines(PROJECT)
        .filter((pipeline) => pipeline.status === "success")
        .flatMap((pipeline) =>
          git(gitDir, [
            "log",
            "--first-parent",
            "--max-count=8",
            "--format=%T",
            pipeline.sha,
          ]).split("\n"),
        ),
    );
    for (const [, tree] of history) expect(tested.has(tree)).toBe(true);

    // The flaky one's run failed on the quarantined test only: run once more, merged.
    const timeline = (
      await postOk(
        two.url,
        "getSubmittedPullRequest",
        { ...QUEUE, pr: { number: flaky }, includeTimeline: true },
        token,
      )
    ).timeline as { reason: string; detail?: string | null }[];
    expect(timeline.some((t) => t.reason === "retried_flaky_failure")).toBe(true);
    const broken = (
      await postOk(
        two.url,
        "getSubmittedPullRequest",
        { ...QUEUE, pr: { number: breaking }, includeTimeline: true },
        token,
      )
    ).timeline as { reason: string; toState?: string }[];
    expect(broken.at(-1)).toMatchObject({ toState: "failed", reason: "failing_required_check" });
  }, 240_000);

  it("batching on real processes: a breaking MR localized, the good ones merged in order", async () => {
    world = await startGitLabWorld();
    database = await createTestDatabase();
    const { gl } = world;
    gl.createUser("alice");
    await gl.createProject({
      path: PROJECT,
      files: { "check.sh": CHECK, ".gitlab-ci.yml": CI.replace(/ {2}after_script:\n.*\n/, "") },
    });
    gl.addMember(PROJECT, "alice", 30);
    const bot = gl.createProjectToken(PROJECT, { accessLevel: 40 });
    const token = randomBytes(32).toString("hex");
    const order: number[] = [];
    for (const [branch, file, text] of [
      ["one", "one.txt", "one\n"],
      ["two", "two.txt", "two\n"],
      ["bad", "bad.txt", "BROKEN\n"],
      ["three", "three.txt", "three\n"],
      ["four", "four.txt", "four\n"],
    ] as const) {
      await gl.commit(PROJECT, branch, { [file]: text }, { author: "alice", from: "main" });
      const made = await gl.createMergeRequest({
        project: PROJECT,
        sourceBranch: branch,
        title: branch,
        author: "alice",
      });
      order.push(made.iid);
    }
    const [one, two, bad, three, four] = order as [number, number, number, number, number];
    const env = {
      ...database.env,
      ...world.env,
      MAINLINE_BOOTSTRAP_ORG: "acme",
      MAINLINE_BOOTSTRAP_TOKEN: token,
      MAINLINE_BATCH_WAIT_LIMIT_SECONDS: "2",
    };
    gl.setVariables(PROJECT, { FLAKY_DIR: mkdtempSync(path.join(tmpdir(), "mainline-flaky-")) });
    const merge = gl.faults.add(
      gl.fault.didThen5xx({ method: "PUT", path: "/projects/:id/merge_requests/:iid/merge" }),
    );
    const server = await startServer(env);
    servers.push(server);
    const connected = await postOk(server.url, "gitlab/connect", { token: bot.token }, token);
    const hook = (connected.connection as { webhook: { path: string; secret: string } }).webhook;
    gl.addHook(PROJECT, { url: `${server.url}${hook.path}`, token: hook.secret });
    await postOk(server.url, "createQueue", QUEUE, token);
    await postOk(
      server.url,
      "updateQueue",
      { ...QUEUE, batch: true, batchingMinSize: 3, batchingMaxWaitTimeMinutes: 1 },
      token,
    );
    for (const number of order) {
      await postOk(server.url, "submitPullRequest", { ...QUEUE, pr: { number } }, token);
    }
    let final = new Map<number, string>();
    await waitFor(
      async () => {
        final = await states(server.url, token, order);
        return [...final.values()].every((state) => ["merged", "failed"].includes(state));
      },
      "every merge request concluded",
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    expect(Object.fromEntries(final)).toEqual({
      [one]: "merged",
      [two]: "merged",
      [bad]: "failed",
      [three]: "merged",
      [four]: "merged",
    });
    expect(gl.faults.fired(merge)).toBe(1);
    const gitDir = gl.gitDir(PROJECT);
    const landed = git(gitDir, ["log", "--first-parent", "--reverse", "--format=%H", "main"])
      .split("\n")
      .slice(1);
    expect(landed).toEqual(
      [one, two, three, four].map((number) => gl.mergeRequest(PROJECT, number).mergeCommitSha),
    );
    expect(gl.mergeRequest(PROJECT, bad).state).toBe("opened");
    // Fewer pipelines than merge requests, the localization included (one at a time: five).
    expect(gl.pipelines(PROJECT).length).toBeLessThan(order.length);
  }, 180_000);
});
