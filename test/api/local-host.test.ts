/**
 * The local git host's and the built-in CI's operations over real HTTP (docs/contract.md §6), with real
 * bare repositories pushed to with git: every route, the errors a client can cause (each leaving
 * nothing changed), and what pushes and closes do to queued pull requests.
 */
import { readdir } from "node:fs/promises";
import path from "node:path";
import type { CiRunView as CiRun } from "../../src/providers/local/routes/ci.js";
import type { LocalPullRequestView as LocalPr } from "../../src/providers/local/routes/pull-requests.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PROJECT_FILES,
  createLocalProject,
  git,
  mainlineYml,
  type LocalProject,
} from "../helpers/local-project.js";
import { waitFor } from "../helpers/process.js";
import { ok, startTestServer, type ApiResponse, type TestServer } from "../helpers/server.js";

interface ErrorBody {
  error: { code: string; message: string; details?: { path: string; message: string }[] };
}

interface TimelineEntry {
  toState: string;
  reason: string;
  detail: string | null;
}

type Repo = { host: string; owner: string; name: string };

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    startWorker: false,
    engine: { pollMs: 100 },
    watchIntervalMs: 200,
  });
});

afterAll(async () => {
  await server.close();
});

/** The error answered, after checking its status and code; its message names `names`. */
function refused(response: ApiResponse, status: number, ...names: string[]): string {
  expect(response.status, response.text).toBe(status);
  const { error } = response.body as ErrorBody;
  for (const name of names) expect(error.message).toContain(name);
  return error.message;
}

let repoCounter = 0;
/** A fresh local repository of acme's, created through the API. */
async function newRepo(): Promise<{ repo: Repo; remoteUrl: string }> {
  const repo = { host: "local", owner: "acme", name: `repo-${String(++repoCounter)}` };
  const { remoteUrl } = await ok(
    server.call<{ remoteUrl: string }>("local/createRepository", { repo }),
  );
  return { repo, remoteUrl };
}

/** A fresh repository holding the project, with branches pushed. */
async function newProject(
  files: Record<string, string> = PROJECT_FILES,
): Promise<{ repo: Repo; project: LocalProject }> {
  const { repo, remoteUrl } = await newRepo();
  return { repo, project: await createLocalProject(remoteUrl, files) };
}

const openPr = (repo: Repo, body: Record<string, unknown>) =>
  server.call<{ number: number }>("local/openPullRequest", { repo, base: "main", ...body });

async function listPrs(repo: Repo, state?: string): Promise<LocalPr[]> {
  const body = await ok(
    server.call<{ pullRequests: LocalPr[] }>("local/listPullRequests", {
      repo,
      ...(state === undefined ? {} : { state }),
    }),
  );
  return body.pullRequests;
}

/** The directories under acme's `git/{organizationId}/{owner}`: the bare repositories on disk. */
async function onDisk(owner: string): Promise<string[]> {
  try {
    return (
      await readdir(path.join(server.database.dataDir, "git", server.organizationId, owner))
    ).sort();
  } catch {
    return [];
  }
}

const queueOf = (repo: Repo) => ({ repo, targetBranch: "main" });

async function submitted(repo: Repo, number: number) {
  return ok(
    server.call<{ state: string; timeline: TimelineEntry[] }>("getSubmittedPullRequest", {
      ...queueOf(repo),
      pr: { number },
      includeTimeline: true,
    }),
  );
}

async function waitForState(repo: Repo, number: number, state: string): Promise<TimelineEntry[]> {
  let timeline: TimelineEntry[] = [];
  await waitFor(
    async () => {
      const pr = await submitted(repo, number);
      timeline = pr.timeline;
      return pr.state === state;
    },
    `#${String(number)} to be ${state}`,
  );
  return timeline;
}

/** A queue on the repository's main, with `settings`, and pull request `number` submitted. */
async function queueAndSubmit(repo: Repo, number: number, settings: Record<string, unknown> = {}) {
  await ok(server.call("createQueue", queueOf(repo)));
  await ok(server.call("updateQueue", { ...queueOf(repo), testingTimeoutMinutes: 0, ...settings }));
  await ok(server.call("submitPullRequest", { ...queueOf(repo), pr: { number } }));
}

/** The project with a check that takes a couple of seconds, so that a run is in flight a while. */
const SLOW_PROJECT: Record<string, string> = {
  ...PROJECT_FILES,
  ".mainline.yml": mainlineYml("sleep 2 && sh test.sh", []),
};

describe("local/createRepository", () => {
  it("creates a bare repository to push to, under git/{organizationId}/{owner}/{name}.git", async () => {
    const { repo, remoteUrl } = await newRepo();
    expect(remoteUrl).toBe(
      path.join(server.database.dataDir, "git", server.organizationId, "acme", `${repo.name}.git`),
    );
    expect(await git(remoteUrl, "rev-parse", "--is-bare-repository")).toBe("true");
    const project = await createLocalProject(remoteUrl);
    await project.branch("feature", { "numbers/f.txt": "2\n" });
    expect((await project.remoteBranches()).sort()).toEqual(["feature", "main"]);
    expect(await listPrs(repo)).toEqual([]);
  });

  it("answers 409 to a second create, in any letter case, and leaves the repository as it was", async () => {
    const { repo, project } = await newProject();
    const before = await onDisk("acme");
    const message = refused(await server.call("local/createRepository", { repo }), 409, repo.name);
    expect(message).toContain("exists already");
    refused(
      await server.call("local/createRepository", {
        repo: { ...repo, name: repo.name.toUpperCase() },
      }),
      409,
    );
    expect(await onDisk("acme")).toEqual(before);
    expect(await project.remoteBranches()).toEqual(["main"]);
  });

  it.each([
    ["owner", ".."],
    ["owner", "a b"],
    ["owner", "x.git"],
    ["name", ".."],
    ["name", "a b"],
    ["name", "x.git"],
  ])("answers 400 naming repo.%s for %j, creating nothing", async (field, value) => {
    const repo = { host: "local", owner: "acme", name: "fine", [field]: value };
    const before = await onDisk("acme");
    const response = await server.call("local/createRepository", { repo });
    refused(response, 400, `repo.${field}`);
    expect(await onDisk("acme")).toEqual(before);
    expect(await readdir(path.join(server.database.dataDir, "git"))).not.toContain(value);
    expect(
      await readdir(path.join(server.database.dataDir, "git", server.organizationId)),
    ).not.toContain(value);
  });

  it("answers 400 naming repo.host for a host other than local, creating nothing", async () => {
    const repo = { host: "github.com", owner: "acme", name: "elsewhere" };
    refused(await server.call("local/createRepository", { repo }), 400, "repo.host", "local");
    expect(await onDisk("acme")).not.toContain("elsewhere.git");
    refused(
      await server.call("local/listPullRequests", { repo: { ...repo, host: "local" } }),
      404,
      "acme/elsewhere",
    );
  });

  it("gives another organization a repository of its own with the same name", async () => {
    const { repo, project } = await newProject();
    const other = await server.services.organizations.createOrganizationWithToken("other");
    // Before it creates one, the other organization reaches nothing of acme's.
    refused(
      await server.call("local/listPullRequests", { repo }, { token: other.token }),
      404,
      '"other"',
    );
    const { remoteUrl } = await ok(
      server.call<{ remoteUrl: string }>(
        "local/createRepository",
        { repo },
        { token: other.token },
      ),
    );
    expect(remoteUrl).toBe(
      path.join(server.database.dataDir, "git", other.organization.id, "acme", `${repo.name}.git`),
    );
    expect(remoteUrl).not.toBe(project.remote);
    // Its repository is empty; acme's is untouched.
    expect(await git(remoteUrl, "for-each-ref", "refs/heads")).toBe("");
    expect(await project.remoteBranches()).toEqual(["main"]);
    expect(await listPrs(repo)).toEqual([]);
  });

  it.each([
    ["owner", 101],
    ["name", 101],
    ["name", 252],
    ["name", 255],
  ])(
    "answers 400 naming repo.%s for a name of %d characters, creating nothing",
    async (field, length) => {
      const repo = { host: "local", owner: "acme", name: "fine", [field]: "x".repeat(length) };
      const before = await onDisk("acme");
      refused(await server.call("local/createRepository", { repo }), 400, `repo.${field}`, "100");
      refused(
        await server.call("createQueue", { repo, targetBranch: "main" }),
        400,
        `repo.${field}`,
      );
      expect(await onDisk("acme")).toEqual(before);
    },
  );

  it("accepts an owner and a name of 100 characters each", async () => {
    const repo = { host: "local", owner: "o".repeat(100), name: "n".repeat(100) };
    const { remoteUrl } = await ok(
      server.call<{ remoteUrl: string }>("local/createRepository", { repo }),
    );
    const project = await createLocalProject(remoteUrl);
    await project.branch("feature", { "numbers/f.txt": "2\n" });
    expect(await ok(openPr(repo, { head: "feature" }))).toEqual({ number: 1 });
    await ok(server.call("createQueue", queueOf(repo)));
    expect((await listPrs(repo)).map((pr) => pr.number)).toEqual([1]);
  });
});

describe("local/openPullRequest", () => {
  it("numbers pull requests 1, 2, … by default titled by the head branch, by its changes' author", async () => {
    const { repo, project } = await newProject();
    const aSha = await project.branch("a", { "numbers/a.txt": "2\n" });
    await project.branch("b", { "numbers/b.txt": "3\n" });
    expect(await ok(openPr(repo, { head: "a" }))).toEqual({ number: 1 });
    expect(await ok(openPr(repo, { head: "b", title: "Add b", author: "bob" }))).toEqual({
      number: 2,
    });
    const [second, first] = await listPrs(repo);
    expect(first).toMatchObject({
      number: 1,
      title: "a",
      // Who wrote the commits of `a` (the project's are by Dev).
      author: "Dev",
      head: "a",
      base: "main",
      headSha: aSha,
      state: "open",
      closedAt: null,
      mergedSha: null,
    });
    expect(second).toMatchObject({ number: 2, title: "Add b", author: "bob", head: "b" });
  });

  it("keeps a description (or GitHub's body) and answers it; none is the empty string", async () => {
    const { repo, project } = await newProject();
    for (const b of ["a", "b", "c"]) await project.branch(b, { [`numbers/${b}.txt`]: "2\n" });
    await ok(openPr(repo, { head: "a", description: "Adds a.\n\nMore on a." }));
    await ok(openPr(repo, { head: "b", body: "Adds b." }));
    await ok(openPr(repo, { head: "c" }));
    const described = (await listPrs(repo)).map((pr) => [pr.number, pr.description]);
    expect(described).toEqual([
      [3, ""],
      [2, "Adds b."],
      [1, "Adds a.\n\nMore on a."],
    ]);
    await project.branch("d", { "numbers/d.txt": "2\n" });
    refused(await openPr(repo, { head: "d", description: "x", body: "y" }), 400, "body");
    expect((await listPrs(repo)).map((pr) => pr.number)).toEqual([3, 2, 1]);
  });

  it("refuses what a client gets wrong, with the field named, and opens nothing", async () => {
    const { repo, project } = await newProject();
    await project.branch("a", { "numbers/a.txt": "2\n" });
    await ok(openPr(repo, { head: "a" }));

    refused(await openPr(repo, { head: "nope" }), 400, "head", '"nope"', "push it first");
    refused(await openPr(repo, { head: "a", base: "develop" }), 400, "base", '"develop"');
    refused(await openPr(repo, { head: "main" }), 400, "head", "must differ from base");
    refused(await openPr(repo, { head: " " }), 400, "head");
    refused(await openPr(repo, { base: "main" }), 400, "head");
    const twice = refused(await openPr(repo, { head: "a" }), 409, "#1", "already open");
    expect(twice).toContain("a into main");
    refused(
      await openPr({ ...repo, name: "missing" }, { head: "a" }),
      404,
      "acme/missing",
      "mainline repo create",
    );
    expect((await listPrs(repo)).map((pr) => pr.number)).toEqual([1]);
    expect(await ok(openPr(repo, { head: "main", base: "a" }))).toEqual({ number: 2 });
  });
});

describe("local/closePullRequest and local/listPullRequests", () => {
  it("closes, closes again, and 404s an unknown number", async () => {
    const { repo, project } = await newProject();
    await project.branch("a", { "numbers/a.txt": "2\n" });
    await ok(openPr(repo, { head: "a" }));
    const closed = await ok(server.call<LocalPr>("local/closePullRequest", { repo, number: 1 }));
    expect(closed).toMatchObject({ number: 1, state: "closed", head: "a" });
    expect(closed.closedAt).not.toBeNull();
    const again = await ok(server.call<LocalPr>("local/closePullRequest", { repo, number: 1 }));
    expect(again).toMatchObject({ number: 1, state: "closed" });
    refused(await server.call("local/closePullRequest", { repo, number: 7 }), 404, "#7");
    refused(
      await server.call("local/closePullRequest", {
        repo: { ...repo, name: "missing" },
        number: 1,
      }),
      404,
      "acme/missing",
    );
    // A closed pull request frees its head: the same branch can be opened again.
    expect(await ok(openPr(repo, { head: "a" }))).toEqual({ number: 2 });
  });

  it("lists newest first, filters by state in any letter case, and follows the head branch", async () => {
    const { repo, project } = await newProject();
    const aSha = await project.branch("a", { "numbers/a.txt": "2\n" });
    const bSha = await project.branch("b", { "numbers/b.txt": "3\n" });
    await project.branch("c", { "numbers/c.txt": "4\n" });
    for (const head of ["a", "b", "c"]) await ok(openPr(repo, { head }));
    await ok(server.call("local/closePullRequest", { repo, number: 2 }));

    expect((await listPrs(repo)).map((pr) => pr.number)).toEqual([3, 2, 1]);
    expect((await listPrs(repo, "OPEN")).map((pr) => pr.number)).toEqual([3, 1]);
    expect((await listPrs(repo, "Closed")).map((pr) => pr.number)).toEqual([2]);
    expect(await listPrs(repo, "merged")).toEqual([]);
    refused(await server.call("local/listPullRequests", { repo, state: "draft" }), 400, "state");

    const byNumber = async (n: number) => (await listPrs(repo)).find((pr) => pr.number === n);
    expect((await byNumber(1))?.headSha).toBe(aSha);
    expect((await byNumber(2))?.headSha).toBe(bSha);
    await git(project.dir, "push", "--quiet", project.remote, ":a");
    expect(await byNumber(1)).toMatchObject({ headSha: null, state: "open" });
  });
});

describe("the queue and the built-in CI on the local git host", () => {
  it("tests and merges a pull request: its runs, checks and logs; closing it afterwards is 409", async () => {
    const { repo, project } = await newProject();
    await project.branch("a", { "numbers/a.txt": "2\n" }, "Add a");
    await ok(
      openPr(repo, {
        head: "a",
        title: "Add a",
        description: "Numbers need a 2.\n\nIt is the next one.",
      }),
    );
    await queueAndSubmit(repo, 1);
    await waitForState(repo, 1, "merged");

    const [merged] = await listPrs(repo);
    expect(merged).toMatchObject({ number: 1, state: "merged" });
    expect(merged?.mergedSha).toBe(await git(project.remote, "rev-parse", "main"));
    // Squashed (the default): the title with its number, then the description.
    expect(await git(project.remote, "log", "-1", "--format=%B", "main")).toBe(
      "Add a (#1)\n\nNumbers need a 2.\n\nIt is the next one.",
    );
    const mergedRefusal = refused(
      await server.call("local/closePullRequest", { repo, number: 1 }),
      409,
      "#1",
      "merged",
    );
    expect(mergedRefusal).toContain("merged already");
    expect(await listPrs(repo, "merged")).toHaveLength(1);

    const { runs } = await ok(server.call<{ runs: CiRun[] }>("local/listCiRuns", queueOf(repo)));
    expect(runs).toHaveLength(1);
    const [run] = runs;
    expect(run).toMatchObject({
      status: "passed",
      prNumbers: [1],
      error: null,
      checks: [{ name: "test", status: "success", exitCode: 0 }],
    });
    expect(run?.testBranch).toBe(`mainline-merge/main/${run?.runId ?? ""}`);
    expect(run?.checks[0]?.finishedAt).not.toBeNull();
    const runId = run?.runId ?? "";

    const { log } = await ok(
      server.call<{ log: string }>("local/getCiLog", { ...queueOf(repo), runId, check: "test" }),
    );
    expect(log).toContain("all numbers are whole");

    refused(
      await server.call("local/getCiLog", {
        ...queueOf(repo),
        runId: "no-such-run",
        check: "test",
      }),
      404,
      "no-such-run",
    );
    refused(
      await server.call("local/getCiLog", { ...queueOf(repo), runId, check: "lint" }),
      404,
      '"lint"',
      "checks: test",
    );
    const otherQueue = { repo, targetBranch: "develop" };
    refused(await server.call("local/listCiRuns", otherQueue), 404, "develop");
    refused(
      await server.call("local/getCiLog", { ...otherQueue, runId, check: "test" }),
      404,
      "develop",
    );
    refused(await server.call("local/listCiRuns", { ...queueOf(repo), take: 0 }), 400, "take");
  });

  it("holds a pull request that conflicts with main, naming the files, and tests it once rebased", async () => {
    const { repo, project } = await newProject();
    await project.branch("a", { "NOTES.md": "from the pull request\n" });
    await project.pushToMain({ "NOTES.md": "from main\n" }, "Notes on main");
    await ok(openPr(repo, { head: "a" }));
    await queueAndSubmit(repo, 1);
    let timeline: TimelineEntry[] = [];
    await waitFor(async () => {
      timeline = (await submitted(repo, 1)).timeline;
      return timeline.some((t) => t.reason === "conflicts_with_base");
    }, "the conflict with main on #1's timeline");
    expect((await submitted(repo, 1)).state).toBe("not_ready");
    expect(timeline.find((t) => t.reason === "conflicts_with_base")).toMatchObject({
      toState: "not_ready",
      detail: "conflicts with main: NOTES.md",
    });
    // Rebased onto main (the conflict resolved): it goes on, and merges. The ref watcher notices
    // pushes from its first poll (each second) after the queue exists.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await git(project.dir, "checkout", "--quiet", "-B", "a", "main");
    await git(project.dir, "commit", "--quiet", "--allow-empty", "-m", "Rebased");
    await git(project.dir, "push", "--quiet", "--force", project.remote, "a");
    // A push to a queued pull request takes it out (pr_pushed_to); submitted again, it merges.
    await waitForState(repo, 1, "cancelled");
    await ok(server.call("submitPullRequest", { ...queueOf(repo), pr: { number: 1 } }));
    const merged = await waitForState(repo, 1, "merged");
    expect(merged.at(-1)).toMatchObject({ toState: "merged", reason: "merged_by_queue" });
  });

  it("cancels a queued pull request that is closed", async () => {
    const { repo, project } = await newProject();
    await project.branch("a", { "numbers/a.txt": "2\n" });
    await ok(openPr(repo, { head: "a" }));
    await queueAndSubmit(repo, 1, { state: "paused" });
    await waitForState(repo, 1, "pending");
    await ok(server.call("local/closePullRequest", { repo, number: 1 }));
    const timeline = await waitForState(repo, 1, "cancelled");
    expect(timeline.at(-1)).toMatchObject({ toState: "cancelled", reason: "pr_closed" });
  });

  it("cancels a queued pull request whose head branch is pushed to", async () => {
    const { repo, project } = await newProject(SLOW_PROJECT);
    await project.branch("a", { "numbers/a.txt": "2\n" });
    await ok(openPr(repo, { head: "a" }));
    await queueAndSubmit(repo, 1);
    await waitForState(repo, 1, "testing");
    await git(project.dir, "checkout", "--quiet", "a");
    await git(project.dir, "commit", "--quiet", "--allow-empty", "-m", "More");
    await git(project.dir, "push", "--quiet", project.remote, "a");
    const timeline = await waitForState(repo, 1, "cancelled");
    expect(timeline.at(-1)).toMatchObject({ toState: "cancelled", reason: "pr_pushed_to" });
    expect((await listPrs(repo))[0]?.state).toBe("open");
  });

  it("restarts a run in flight on the new base when main is pushed to, then merges", async () => {
    const { repo, project } = await newProject(SLOW_PROJECT);
    await project.branch("a", { "numbers/a.txt": "2\n" }, "Add a");
    await ok(openPr(repo, { head: "a", title: "Add a" }));
    await queueAndSubmit(repo, 1);
    await waitForState(repo, 1, "testing");
    await project.pushToMain({ "numbers/outside.txt": "3\n" }, "Outside push");
    const timeline = await waitForState(repo, 1, "merged");
    expect(timeline.map((t) => t.reason)).toContain("restarted_on_new_base");
    expect(await project.mainHistory()).toEqual([
      "Start the project",
      "Outside push",
      "Add a (#1)",
    ]);
    const { runs } = await ok(server.call<{ runs: CiRun[] }>("local/listCiRuns", queueOf(repo)));
    expect(runs.length).toBeGreaterThanOrEqual(2);
    expect(runs[0]?.status).toBe("passed");
  });

  it("fails at once, before any check runs, a required status that names no check", async () => {
    const { repo, project } = await newProject();
    await project.branch("a", { "numbers/a.txt": "2\n" });
    await ok(openPr(repo, { head: "a" }));
    await queueAndSubmit(repo, 1, { requiredStatuses: ["build"] });
    const timeline = await waitForState(repo, 1, "failed");
    expect(timeline.at(-1)).toMatchObject({ toState: "failed", reason: "config_parsing_failure" });
    expect(timeline.at(-1)?.detail).toBe(
      'required status "build" (from the queue\'s settings) names no check in .mainline.yml, whose checks are "test"',
    );
    const { runs } = await ok(server.call<{ runs: CiRun[] }>("local/listCiRuns", queueOf(repo)));
    expect(runs[0]?.error).toMatchObject({ reason: "config_parsing_failure" });
    expect(runs[0]?.checks.map((c) => c.status)).toEqual([]);
  });

  it("fails a pull request whose .mainline.yml is invalid, naming the key", async () => {
    const { repo, project } = await newProject();
    await project.branch("a", {
      ".mainline.yml": "ci:\n  checks:\n    - name: test\n      run: sh test.sh\n  colour: blue\n",
    });
    await ok(openPr(repo, { head: "a" }));
    await queueAndSubmit(repo, 1);
    const timeline = await waitForState(repo, 1, "failed");
    expect(timeline.at(-1)).toMatchObject({ toState: "failed", reason: "config_parsing_failure" });
    expect(timeline.at(-1)?.detail).toContain("colour");
    const { runs } = await ok(server.call<{ runs: CiRun[] }>("local/listCiRuns", queueOf(repo)));
    expect(runs[0]?.error).toMatchObject({ reason: "config_parsing_failure" });
    expect(await project.mainHistory()).toEqual(["Start the project"]);
  });
});
