/**
 * `mainline repo create`, `pr open|close`, `pr list --local` and `ci runs|logs` as real processes
 * against a real server: the local git host and the built-in CI from the command line.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocalProject, git, type LocalProject } from "../helpers/local-project.js";
import { runCliInProcess, stopAllProcesses, waitFor, type CliResult } from "../helpers/process.js";
import { ok, startTestServer, type TestServer } from "../helpers/server.js";
import { failed as failedAtAll, succeeded } from "./support.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ startWorker: false, engine: { pollMs: 100 } });
});

afterAll(async () => {
  await stopAllProcesses();
  await server.close();
});

/** `mainline <args>` aimed at the test server, as acme, with $USER set to carol (never sent). */
const cli = (...args: string[]): Promise<CliResult> =>
  runCliInProcess(args, { MAINLINE_URL: server.url, MAINLINE_TOKEN: server.token, USER: "carol" });

/** The error line of a command the server refused: `mainline: <message>`, a non-zero exit. */
function failed(result: CliResult): string {
  const stderr = failedAtAll(result);
  expect(stderr).toMatch(/^mainline: /m);
  return stderr;
}

/** Creates acme/`name` with the CLI and pushes the project to the path it printed. */
async function createProject(name: string): Promise<LocalProject> {
  const created = succeeded(await cli("repo", "create", `acme/${name}`));
  const remote = created.stdout.trim();
  expect(created.stdout).toBe(`${remote}\n`);
  expect(remote).toMatch(new RegExp(`/git/${server.organizationId}/acme/${name}\\.git$`));
  expect(created.stderr).toContain(`Created acme/${name}.`);
  return createLocalProject(remote);
}

describe("mainline repo create", () => {
  it("prints the path to push to; a second create fails", async () => {
    const project = await createProject("app");
    expect(await project.remoteBranches()).toEqual(["main"]);
    const again = failed(await cli("repo", "create", "acme/app"));
    expect(again).toContain("acme/app exists already");
    expect(failed(await cli("repo", "create", "acme/a b"))).toContain("repo.name");
    // A usage mistake is caught by the CLI before any request.
    const usage = await cli("repo", "create", "just-a-name");
    expect(usage.code).not.toBe(0);
    expect(usage.stderr).toContain(
      "expected owner/name (a repository on Mainline's local git host)",
    );
    // Another host is refused, not quietly taken for the local one.
    const elsewhere = await cli("repo", "create", "github.com/acme/app");
    expect(elsewhere.code).not.toBe(0);
    expect(elsewhere.stderr).toContain("github.com/acme/app is not on Mainline's local git host");
  });

  it("--from seeds every branch of a repository", async () => {
    const seed = await createLocalProject(
      (
        await ok(
          server.call<{ remoteUrl: string }>("local/createRepository", {
            repo: { host: "local", owner: "acme", name: "seed" },
          }),
        )
      ).remoteUrl,
    );
    const featureSha = await seed.branch("feature", { "numbers/f.txt": "2\n" });
    const created = succeeded(await cli("repo", "create", "acme/seeded", "--from", seed.dir));
    const remote = created.stdout.trim();
    expect(created.stderr).toContain(`from ${seed.dir}`);
    expect(await git(remote, "rev-parse", "feature")).toBe(featureSha);
    expect(await git(remote, "rev-parse", "main")).toBe(await git(seed.dir, "rev-parse", "main"));
  });
});

const repoOf = (name: string) => ({ host: "local", owner: "acme", name });

/** acme/`name` with the project and branches x and y pushed (set up through the API). */
async function apiProject(name: string): Promise<LocalProject> {
  const { remoteUrl } = await ok(
    server.call<{ remoteUrl: string }>("local/createRepository", { repo: repoOf(name) }),
  );
  const project = await createLocalProject(remoteUrl);
  await project.branch("x", { "numbers/x.txt": "2\n" }, "Add x");
  await project.branch("y", { "numbers/y.txt": "3\n" }, "Add y");
  return project;
}

describe("mainline pr open|close", () => {
  it("open prints the number; close closes; mistakes fail with the server's message", async () => {
    await apiProject("shop");
    const local = ["--repo", "acme/shop"];
    const opened = succeeded(await cli("pr", "open", ...local, "--head", "x"));
    expect(opened.stdout).toBe("1\n");
    expect(opened.stderr).toContain("Opened #1: x into main.");
    const second = await cli(
      ...["pr", "open", ...local, "--head", "y", "--title", "Add y"],
      ...["--description", "Adds y.\n\nBecause x needs it."],
    );
    expect(succeeded(second).stdout).toBe("2\n");

    const [twice, missing, unknownRepo] = await Promise.all([
      cli("pr", "open", ...local, "--head", "x"),
      cli("pr", "open", ...local, "--head", "nope"),
      cli("pr", "open", "--repo", "acme/nowhere", "--head", "x"),
    ]);
    expect(failed(twice)).toContain("Pull request #1 from x into main is already open.");
    expect(failed(missing)).toMatch(/^mainline: head names branch "nope".*push it first/m);
    expect(failed(unknownRepo)).toContain("No local repository acme/nowhere");

    const closed = succeeded(await cli("pr", "close", "2", ...local));
    expect(closed.stderr).toContain("Closed #2.");
    expect(failed(await cli("pr", "close", "9", ...local))).toContain(
      "No pull request #9 in acme/shop",
    );
    const prs = await ok(
      server.call<{
        pullRequests: { number: number; state: string; author: string; description: string }[];
      }>("local/listPullRequests", { repo: repoOf("shop") }),
    );
    expect(prs.pullRequests).toEqual([
      expect.objectContaining({
        number: 2,
        state: "closed",
        author: "Dev",
        description: "Adds y.\n\nBecause x needs it.",
      }),
      // Without --author: who wrote the changes (the project's commits are by Dev), not $USER.
      expect.objectContaining({ number: 1, state: "open", author: "Dev", description: "" }),
    ]);
  });
});

describe("mainline pr submit", () => {
  it("prints the mistakes in the configuration the run will use, as file:line: message", async () => {
    const project = await apiProject("depot");
    const repo = repoOf("depot");
    await ok(server.call("createQueue", { repo, targetBranch: "main" }));
    await ok(server.call("updateQueue", { repo, targetBranch: "main", state: "paused" }));
    // `.mainline.yml` requires `build`, a check it does not define (its item is line 3).
    const config = await readFile(path.join(project.dir, ".mainline.yml"), "utf8");
    await project.branch("z", {
      ".mainline.yml": `merge:\n  required_statuses:\n    - build\n${config}`,
    });
    await ok(server.call("local/openPullRequest", { repo, head: "z", base: "main" }));
    const submitted = succeeded(
      await cli("pr", "submit", "1", "--repo", "local/acme/depot", "--branch", "main"),
    );
    const lines = submitted.stderr.split("\n");
    expect(lines[0]).toBe("Submitted #1 to the merge queue for main.");
    expect(lines[1]).toMatch(/^mainline: warning: The built-in CI will fail the run of #1 at once/);
    expect(lines[2]).toBe(
      'mainline: warning: .mainline.yml:3: merge.required_statuses: "build" names no check in .mainline.yml, whose checks are "test"',
    );
    // A sound configuration: nothing more is said.
    await ok(server.call("local/openPullRequest", { repo, head: "x", base: "main" }));
    const plain = succeeded(
      await cli("pr", "submit", "2", "--repo", "local/acme/depot", "--branch", "main"),
    );
    expect(plain.stderr).toBe("Submitted #2 to the merge queue for main.\n");
  });
});

describe("mainline pr list --local", () => {
  it("lists as a table and as JSON, with a state filter", async () => {
    const project = await apiProject("market");
    const repo = repoOf("market");
    await ok(server.call("local/openPullRequest", { repo, head: "x", base: "main", author: "al" }));
    await ok(
      server.call("local/openPullRequest", {
        repo,
        head: "y",
        base: "main",
        title: "Add y",
        author: "bo",
      }),
    );
    await ok(server.call("local/closePullRequest", { repo, number: 2 }));

    const list = ["pr", "list", "--local", "--repo", "local/acme/market"];
    const [tableResult, jsonResult, noneResult, unknown] = await Promise.all([
      cli(...list),
      cli(...list, "--state", "OPEN", "--json"),
      cli(...list, "--state", "merged"),
      cli("pr", "list", "--local", "--repo", "local/acme/nowhere"),
    ]);
    const table = succeeded(tableResult).stdout.split("\n");
    expect(table[0]).toMatch(/^PR +STATE +HEAD +BASE +SHA +AUTHOR +TITLE$/);
    expect(table[1]).toMatch(/^#2 +closed +y +main +[0-9a-f]{10} +bo +Add y$/);
    expect(table[2]).toMatch(/^#1 +open +x +main +[0-9a-f]{10} +al +x$/);
    const open = JSON.parse(succeeded(jsonResult).stdout) as {
      pullRequests: { number: number; headSha: string }[];
    };
    expect(open.pullRequests.map((pr) => pr.number)).toEqual([1]);
    expect(open.pullRequests[0]?.headSha).toBe(await git(project.remote, "rev-parse", "x"));
    expect(succeeded(noneResult).stdout).toBe("");
    expect(noneResult.stderr).toContain("No pull requests.");
    expect(failed(unknown)).toContain("No local repository acme/nowhere");

    // One rule for --repo: acme/market is local/acme/market here too; another host is refused.
    const [short, elsewhere] = await Promise.all([
      cli("pr", "list", "--local", "--repo", "acme/market", "--state", "open", "--json"),
      cli("pr", "list", "--local", "--repo", "github.com/acme/market"),
    ]);
    expect(JSON.parse(succeeded(short).stdout)).toEqual(JSON.parse(succeeded(jsonResult).stdout));
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain("github.com/acme/market is not on it");
  });
});

describe("mainline ci runs|logs", () => {
  it("lists a queue's runs and prints a check's log", async () => {
    const project = await apiProject("store");
    const repo = repoOf("store");
    const queue = ["--repo", "local/acme/store", "--branch", "main"];
    expect(failed(await cli("ci", "runs", ...queue))).toContain("queue");
    await ok(server.call("createQueue", { repo, targetBranch: "main" }));
    await ok(server.call("local/openPullRequest", { repo, head: "x", base: "main" }));
    expect(succeeded(await cli("ci", "runs", ...queue)).stderr).toContain("No runs.");
    await ok(server.call("submitPullRequest", { repo, targetBranch: "main", pr: { number: 1 } }));
    await waitFor(async () => (await project.mainHistory()).includes("x (#1)"), "#1 to be merged");

    const runs = succeeded(await cli("ci", "runs", ...queue)).stdout.split("\n");
    // acme/store names the same repository for ci runs as for pr open (local/acme/store).
    const short = succeeded(await cli("ci", "runs", "--repo", "acme/store", "--json"));
    const long = succeeded(await cli("ci", "runs", ...queue, "--json"));
    expect(JSON.parse(short.stdout)).toEqual(JSON.parse(long.stdout));
    expect(runs[0]).toMatch(/^RUN +STATUS +PRS +SHA +CREATED +CHECKS$/);
    expect(runs[1]).toMatch(/^\S+ +passed +#1 +[0-9a-f]{10} +\S+ +test=success$/);
    const runId = runs[1]?.split(/ +/)[0] ?? "";
    const [log, noCheck, noRun] = await Promise.all([
      cli("ci", "logs", runId, "test", ...queue),
      cli("ci", "logs", runId, "lint", ...queue),
      cli("ci", "logs", "no-such-run", "test", ...queue),
    ]);
    expect(succeeded(log).stdout).toContain("all numbers are whole");
    expect(failed(noCheck)).toContain(`Run ${runId} has no check "lint" (checks: test).`);
    expect(failed(noRun)).toContain("No CI run no-such-run in this queue.");
  });
});
