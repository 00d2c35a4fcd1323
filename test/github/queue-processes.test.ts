/**
 * The merge queue on GitHub, end to end with real processes: `mainline serve` child processes
 * with the GitHub App configured against the fake GitHub (real bare git repositories, its
 * Actions-like CI running a real shell check in a worktree of every pushed test branch), with
 * faults on. A queue of good, breaking, conflicting and stacked pull requests; the server killed
 * (SIGKILL) mid-queue and another started on the same database; then, on PostgreSQL, two servers
 * on one database taking GitHub's deliveries in turn. Every good pull request is merged once, in
 * order; the breaking and conflicting ones fail; nothing untested lands on main. The CI job's test
 * suite writes JUnit and uploads it to Mainline as Trunk's uploader does; a quarantined test that
 * fails in a queue run (a flaky pull request's) gets the run retried once, and the pull request
 * merges.
 */
import { execFile, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { startGitHubWorld, type GitHubWorld } from "../helpers/github.js";
import { startServer, stopAllProcesses, waitFor, type RunningServer } from "../helpers/process.js";
import { post, postOk } from "../cli/support.js";
import { bundle, testIdOf } from "../helpers/uploads.js";
import type { Checkout } from "../helpers/fake-github/ci.js";
import { FLAKY_SUITE_CHECK } from "../helpers/flaky-suite.js";

const OWNER = "acme-gh";
const NAME = "widgets";
const FULL = `${OWNER}/${NAME}`;
const QUEUE = { repo: { host: "github.com", owner: OWNER, name: NAME }, targetBranch: "main" };
const REPO = { host: "github.com", owner: OWNER, name: NAME };
/** The repository's test suite (`check.sh`): `content`, and `checkout`, flaky. */
const CHECK = FLAKY_SUITE_CHECK;
const CHECKOUT_TEST = testIdOf({
  name: "checkout",
  classname: "widgets",
  suite: "widgets",
  repo: REPO,
});

let world: GitHubWorld | undefined;
let database: TestDatabase | undefined;
const servers: RunningServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop("SIGKILL")));
  await world?.gh.close();
  world = undefined;
  await database?.cleanup();
  database = undefined;
});
afterAll(stopAllProcesses);

interface Prepared {
  world: GitHubWorld;
  env: Record<string, string>;
  token: string;
  prs: { good: number[]; breaking: number; conflicting: number; flaky: number };
  /** Where the CI job uploads its reports (the server taking them now). */
  uploads: { url: string };
}

/**
 * The CI job: runs the test suite in the checkout, then uploads its JUnit to Mainline (the bundle
 * upload API with the organization's token, for the tested commit and branch), retrying while the
 * server is away (killed), as a job step would. Passes when the suite does.
 */
async function testJob(
  checkout: Checkout,
  uploads: { url: string },
  token: string,
  flakyDir: string,
) {
  const passed = await promisify(execFile)("sh", ["./check.sh"], {
    cwd: checkout.dir,
    env: { ...process.env, FLAKY_DIR: flakyDir },
  }).then(
    () => true,
    () => false,
  );
  const report = readFileSync(path.join(checkout.dir, "reports", "junit.xml"), "utf8");
  await upload(uploads, token, report, checkout.sha, checkout.ref);
  return passed;
}

/** A JUnit report to Mainline as Trunk's uploader sends it, retried while the server is away. */
async function upload(
  uploads: { url: string },
  token: string,
  report: string,
  commit: string,
  branch: string,
): Promise<void> {
  const body = await bundle({ files: [report], commit, branch, repo: REPO });
  for (let attempt = 0; attempt < 150; attempt++) {
    try {
      const created = await post(
        uploads.url,
        "metrics/createBundleUpload",
        { repo: REPO, orgUrlSlug: "acme", clientVersion: "ci-job", remoteUrls: [] },
        token,
      );
      const url = (created.body as { url?: string } | undefined)?.url;
      if (created.status === 200 && url !== undefined) {
        const put = await fetch(url, { method: "PUT", body });
        if (put.ok) break;
      }
    } catch {
      // The server is away: try again.
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** main's CI reported the suite once (the tests are known); `checkout` is then quarantined. */
async function quarantineCheckout(prepared: Prepared): Promise<void> {
  const { gh } = prepared.world;
  const report = [
    '<testsuite name="widgets">',
    '<testcase classname="widgets" name="content"/>',
    '<testcase classname="widgets" name="checkout"/>',
    "</testsuite>",
  ].join("\n");
  const head = (await gh.readRef(FULL, "heads/main")) ?? "";
  await upload(prepared.uploads, prepared.token, report, head, "main");
  await waitFor(
    async () => {
      const answer = await post(
        prepared.uploads.url,
        "flaky-tests/set-quarantine-override",
        { repo: REPO, org_url_slug: "acme", test_id: CHECKOUT_TEST, override: "ALWAYS_QUARANTINE" },
        prepared.token,
      );
      return answer.status === 200;
    },
    "the flaky test quarantined",
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

/**
 * The fake GitHub with the App installed on `acme-gh`, a repository whose CI runs the test job on
 * every push to `trunk-merge/**`, and seven pull requests: four good (one stacked on another), one
 * that breaks the check, one that conflicts with a good one ahead of it, one with a flaky test.
 */
async function prepare(): Promise<Prepared> {
  world = await startGitHubWorld({ mergeabilityDelayMs: 50 });
  database = await createTestDatabase();
  const { gh } = world;
  gh.createOrganization(OWNER);
  gh.createUser("alice");
  gh.addOrgMember(OWNER, "alice", "admin");
  await gh.createRepository({
    owner: OWNER,
    name: NAME,
    files: { "check.sh": CHECK, "shared.txt": "one\ntwo\nthree\n" },
  });
  const token = randomBytes(32).toString("hex");
  const uploads = { url: "" };
  const flakyDir = mkdtempSync(path.join(tmpdir(), "mainline-flaky-"));
  gh.configureCi(FULL, [
    {
      name: "test",
      on: { push: { branches: ["trunk-merge/**"] } },
      checks: [{ name: "ci", run: (checkout) => testJob(checkout, uploads, token, flakyDir) }],
    },
  ]);
  const branch = async (name: string, from: string, files: Record<string, string>) => {
    await gh.commit(FULL, { branch: name, from, files, by: "alice" });
    return gh.openPullRequest(FULL, { head: name, by: "alice" });
  };
  const first = await branch("first", "main", { "first.txt": "first\n" });
  const shared = await branch("shared", "main", { "shared.txt": "one\nTWO\nthree\n" });
  const breaking = await branch("breaking", "main", { "breaking.txt": "BROKEN\n" });
  const conflicting = await branch("conflicting", "main", { "shared.txt": "one\n2\nthree\n" });
  const base = await branch("base", "main", { "base.txt": "base\n" });
  // Stacked: its head contains `base`'s head.
  const stacked = await branch("stacked", "base", { "stacked.txt": "stacked\n" });
  const flaky = await branch("flaky", "main", { "flaky.txt": "flaky\n" });

  const env = {
    ...database.env,
    ...world.env,
    MAINLINE_BOOTSTRAP_ORG: "acme",
    MAINLINE_BOOTSTRAP_TOKEN: token,
    // A killed server's queue and deliveries are taken over 5 s after its last renewal, not 30.
    MAINLINE_QUEUE_LEASE_SECONDS: "5",
  };
  return {
    world,
    env,
    token,
    prs: { good: [first, shared, base, stacked], breaking, conflicting, flaky },
    uploads,
  };
}

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

/** `main`'s first-parent history, oldest first: subject and tree of each commit. */
function mainHistory(gitDir: string): { sha: string; tree: string; subject: string }[] {
  const out = execFileSync(
    "git",
    ["--git-dir", gitDir, "log", "--first-parent", "--reverse", "--format=%H %T %s", "main"],
    { encoding: "utf8" },
  );
  return out
    .trim()
    .split("\n")
    .map((line) => {
      const [sha = "", tree = "", ...subject] = line.split(" ");
      return { sha, tree, subject: subject.join(" ") };
    });
}

/** The trees of a tested commit and of the test branch's commits before it (first parents). */
function testedStates(gitDir: string, sha: string): string[] {
  return execFileSync(
    "git",
    ["--git-dir", gitDir, "log", "--first-parent", "--max-count=8", "--format=%T", sha],
    { encoding: "utf8" },
  )
    .trim()
    .split("\n");
}

/**
 * What must hold however the run went: merged once each, in order, and only tested trees. `good`:
 * the pull requests that must merge, in submission order (default the four good ones).
 */
function assertOutcome(
  prepared: Prepared,
  final: Map<number, string>,
  good = prepared.prs.good,
): void {
  const { gh } = prepared.world;
  const { breaking, conflicting } = prepared.prs;
  for (const number of good) expect(final.get(number), `#${String(number)}`).toBe("merged");
  expect(final.get(breaking)).toBe("failed");
  expect(final.get(conflicting)).toBe("failed");
  for (const number of good) expect(gh.pullRequest(FULL, number).mergedAt).not.toBeNull();
  for (const number of [breaking, conflicting]) {
    expect(gh.pullRequest(FULL, number).state).toBe("open");
  }
  const gitDir = gh.gitDir(FULL);
  const history = mainHistory(gitDir).slice(1); // the repository's first commit
  // One commit on main per good pull request, in submission order: none twice, none other.
  expect(history).toHaveLength(good.length);
  const mergedShas = good.map((number) => gh.pullRequest(FULL, number).mergeCommitSha);
  expect(history.map((commit) => commit.sha)).toEqual(mergedShas);
  // Each landed tree is one a passing run tested: its test branch's tip, or (batching) the
  // state after one of the pull requests merged onto the test branch before that tip.
  const passedTrees = new Set(
    gh.ci.runs
      .filter((run) => run.conclusion === "success")
      .flatMap((run) => testedStates(gitDir, run.sha)),
  );
  for (const commit of history) expect(passedTrees.has(commit.tree)).toBe(true);
}

/**
 * Points the fake's webhooks at the servers, installs the App on the repository, links the
 * installation (through the first server) and creates the queue (through the last) with settings.
 */
async function connect(
  prepared: Prepared,
  urls: string[],
  settings: Record<string, unknown>,
): Promise<void> {
  const { gh, app } = prepared.world;
  gh.setWebhookUrls(
    app.id,
    urls.map((url) => `${url}/webhooks/github`),
  );
  const installationId = gh.installApp(app.id, { account: OWNER, repositories: [NAME] }).id;
  await gh.settleWebhooks();
  const [first = "", last = ""] = [urls[0], urls.at(-1)];
  await postOk(
    first,
    "github/linkInstallation",
    { installationId, githubToken: gh.createUserToken("alice") },
    prepared.token,
  );
  await postOk(last, "createQueue", QUEUE, prepared.token);
  await postOk(
    first,
    "updateQueue",
    { ...QUEUE, requiredStatuses: ["ci"], mergeMethod: "merge_commit", ...settings },
    prepared.token,
  );
}

describe("the merge queue on GitHub, real processes", () => {
  it("a server killed mid-queue: another on the same database finishes the queue, faults on (merges made then answered 502 among them)", async () => {
    const prepared = await prepare();
    const { gh } = prepared.world;
    const { good, breaking, conflicting, flaky } = prepared.prs;
    gh.setWebhookChaos({ delayMs: [0, 100], duplicate: 0.2, reorder: 4 });
    const faults = [
      gh.addFault(gh.fault.baseBranchModified({ times: 1 })),
      gh.addFault(gh.fault.mergeAlreadyInProgress({ merged: true, times: 1, skip: 1 })),
      gh.addFault(gh.fault.serverError("pulls/get", 502)),
      // Made, then answered 502: a test branch's merge (a repeat would answer 204) and a merge.
      gh.addFault(gh.fault.writesSucceedButError("repos/merge", 502, { times: 2, skip: 1 })),
      gh.addFault(gh.fault.writesSucceedButError("pulls/merge", 502, { times: 1 })),
    ];

    const first = await startServer(prepared.env);
    servers.push(first);
    prepared.uploads.url = first.url;
    await connect(prepared, [first.url], {});
    // The flaky pull request on one dialect only (it adds two runs at the end of the queue): the
    // matching of uploads to runs is covered on both by test/github/ci.test.ts.
    const withFlaky = TEST_DIALECT === "sqlite";
    if (withFlaky) await quarantineCheckout(prepared);
    const order = [good[0], good[1], breaking, conflicting, good[2], good[3]] as number[];
    if (withFlaky) order.push(flaky);
    for (const number of order) {
      await postOk(first.url, "submitPullRequest", { ...QUEUE, pr: { number } }, prepared.token);
    }
    // Killed once the first has merged, with the rest of the queue in flight.
    await waitFor(
      () => gh.pullRequest(FULL, order[0] ?? 0).mergedAt !== null,
      "the first pull request merged",
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    await first.stop("SIGKILL");
    servers.splice(servers.indexOf(first), 1);

    const second = await startServer(prepared.env);
    servers.push(second);
    prepared.uploads.url = second.url;
    gh.setWebhookUrls(prepared.world.app.id, [`${second.url}/webhooks/github`]);
    let final = new Map<number, string>();
    await waitFor(
      async () => {
        final = await states(second.url, prepared.token, order);
        return [...final.values()].every((state) => ["merged", "failed"].includes(state));
      },
      "every pull request concluded",
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    assertOutcome(prepared, final, withFlaky ? [...good, flaky] : good);
    for (const rule of faults) expect(gh.faults.fired(rule)).toBeGreaterThan(0);
    const timeline = async (number: number) => {
      const body = await postOk(
        second.url,
        "getSubmittedPullRequest",
        { ...QUEUE, pr: { number }, includeTimeline: true },
        prepared.token,
      );
      return body.timeline as { reason: string; toState: string; detail?: string | null }[];
    };
    // The breaking one failed on a real (uploaded) test failure, without a retry.
    const broken = await timeline(breaking);
    expect(broken.at(-1)).toMatchObject({ toState: "failed", reason: "failing_required_check" });
    expect(broken.some((t) => t.reason === "retried_flaky_failure")).toBe(false);
    if (!withFlaky) return;
    // The flaky pull request's run failed on the quarantined test only: run once more, merged.
    const retried = (await timeline(flaky)).filter((t) => t.reason === "retried_flaky_failure");
    expect(retried.length).toBeGreaterThan(0);
    expect(retried[0]?.detail).toMatch(/only known flaky tests failed/);
  }, 240_000);

  // SQLite is served by one process (a second is refused: test/cli/serve.test.ts).
  if (TEST_DIALECT === "postgres") {
    it("two servers on one PostgreSQL database take GitHub's deliveries in turn, batching, writes made then answered 502", async () => {
      const prepared = await prepare();
      const { gh } = prepared.world;
      const { good, breaking, conflicting } = prepared.prs;
      gh.setWebhookChaos({ delayMs: [0, 50], duplicate: 0.1 });
      const faults = [
        gh.addFault(gh.fault.secondaryRateLimit("pulls/merge", 1)),
        // Made, then answered 502: the merge of the last pull request of a batch onto its test
        // branch (a repeat answers 204: the branch would be published without it), one in the
        // middle of a batch, and a merge.
        gh.addFault(
          gh.fault.writesSucceedButError("repos/merge", 502, {
            when: (ctx) => ctx.body.head === gh.pullRequest(FULL, good[3] ?? 0).headSha,
          }),
        ),
        gh.addFault(
          gh.fault.writesSucceedButError("repos/merge", 502, {
            when: (ctx) => ctx.body.head === gh.pullRequest(FULL, good[1] ?? 0).headSha,
          }),
        ),
        gh.addFault(gh.fault.writesSucceedButError("pulls/merge", 502, { times: 1, skip: 1 })),
        gh.addFault(gh.fault.writesSucceedButError("git/update-ref", 502, { times: 2, skip: 3 })),
      ];

      // A batch that cannot fill starts after seconds, not the queue's minute (not what is tested).
      const env = { ...prepared.env, MAINLINE_BATCH_WAIT_LIMIT_SECONDS: "5" };
      const a = await startServer(env);
      servers.push(a);
      const b = await startServer(env);
      servers.push(b);
      prepared.uploads.url = b.url;
      // Batching: the breaking pull request's batch fails and is bisected.
      await connect(prepared, [a.url, b.url], {
        batch: true,
        batchingMinSize: 3,
        batchingMaxWaitTimeMinutes: 1,
      });
      const order = [good[0], good[1], breaking, conflicting, good[2], good[3]] as number[];
      for (const [index, number] of order.entries()) {
        const url = index % 2 === 0 ? a.url : b.url;
        await postOk(url, "submitPullRequest", { ...QUEUE, pr: { number } }, prepared.token);
      }
      let final = new Map<number, string>();
      await waitFor(
        async () => {
          final = await states(b.url, prepared.token, order);
          return [...final.values()].every((state) => ["merged", "failed"].includes(state));
        },
        "every pull request concluded",
        { timeoutMs: 120_000, intervalMs: 250 },
      );
      assertOutcome(prepared, final);
      // Both servers took deliveries.
      const urls = gh.deliveries().flatMap((d) => d.attempts.map((attempt) => attempt.url));
      expect(new Set(urls).size).toBe(2);
      for (const rule of faults) expect(gh.faults.fired(rule)).toBeGreaterThan(0);
    }, 240_000);
  }
});
