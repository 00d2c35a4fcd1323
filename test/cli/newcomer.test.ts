/**
 * What a newcomer meets on the local git host from the command line, as real `mainline`
 * processes against a real server with the real queue engine and real git: who a pull request
 * is by, one line per pull request however often it was submitted, and one name per repository.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocalProject, git, type LocalProject } from "../helpers/local-project.js";
import { runCli, stopAllProcesses, waitFor, type CliResult } from "../helpers/process.js";
import { ok, startTestServer, type TestServer } from "../helpers/server.js";
import { succeeded } from "./support.js";

const REPO = { host: "local", owner: "acme", name: "calc" };
const QUEUE = { repo: REPO, targetBranch: "main" };

let server: TestServer;
let project: LocalProject;
let created: CliResult;

/** `mainline <args>` as its own process, aimed at the test server, with no $USER at all. */
const cli = (...args: string[]): Promise<CliResult> =>
  runCli(args, { MAINLINE_URL: server.url, MAINLINE_TOKEN: server.token, USER: undefined });

/** Commits `files` on a new branch from main as `author` and pushes it. */
async function pushBranch(name: string, files: Record<string, string>, author: string) {
  await git(project.dir, "checkout", "--quiet", "-b", name, "main");
  for (const [file, text] of Object.entries(files))
    await writeFile(path.join(project.dir, file), text);
  await git(project.dir, "add", "-A");
  await git(project.dir, "commit", "--quiet", "-m", `Change ${name}`, `--author=${author}`);
  await git(project.dir, "push", "--quiet", project.remote, name);
  await git(project.dir, "checkout", "--quiet", "main");
}

async function stateOf(number: number): Promise<string> {
  const pr = await ok(
    server.call<{ state: string }>("getSubmittedPullRequest", { ...QUEUE, pr: { number } }),
  );
  return pr.state;
}

beforeAll(async () => {
  server = await startTestServer({ startWorker: false, engine: { pollMs: 100 } });
  created = await cli("repo", "create", "acme/calc");
  project = await createLocalProject(succeeded(created).stdout.trim());
  await ok(server.call("createQueue", QUEUE));
  // Paused: submitted pull requests wait in `pending`, so that what the CLI shows is stable.
  await ok(server.call("updateQueue", { ...QUEUE, state: "paused" }));
  // The ref watcher notices pushes from its first poll (each second) after the queue exists.
  await new Promise((resolve) => setTimeout(resolve, 2500));
}, 60_000);

afterAll(async () => {
  await stopAllProcesses();
  await server.close();
});

describe("the author of a local pull request", () => {
  it("is who wrote its changes when none is given, in pr list --local, pr status and pr list", async () => {
    await pushBranch("add-two", { "two.txt": "2\n" }, "Ada Lovelace <ada@example.com>");
    const opened = succeeded(await cli("pr", "open", "--repo", "acme/calc", "--head", "add-two"));
    const number = Number(opened.stdout.trim());

    const local = succeeded(await cli("pr", "list", "--local", "--repo", "acme/calc"));
    expect(local.stdout.split("\n")[1]).toMatch(
      new RegExp(`^#${number} +open +add-two +main +[0-9a-f]{10} +Ada Lovelace +add-two$`),
    );

    succeeded(await cli("pr", "submit", String(number), "--repo", "acme/calc"));
    await waitFor(async () => (await stateOf(number)) === "pending", "the submission");
    const status = succeeded(await cli("pr", "status", String(number), "--repo", "acme/calc"));
    expect(status.stdout).toMatch(/^author +Ada Lovelace$/m);
    const list = succeeded(await cli("pr", "list", "--repo", "acme/calc"));
    expect(list.stdout).toMatch(new RegExp(`^#${number} +pending .* Ada Lovelace +add-two$`, "m"));

    // Given, it wins.
    await pushBranch("add-three", { "three.txt": "3\n" }, "Ada Lovelace <ada@example.com>");
    const named = await cli(
      ...["pr", "open", "--repo", "acme/calc", "--head", "add-three", "--author", "grace"],
    );
    const prs = await ok(
      server.call<{ pullRequests: { number: number; author: string }[] }>(
        "local/listPullRequests",
        { repo: REPO },
      ),
    );
    expect(prs.pullRequests).toEqual([
      expect.objectContaining({ number: Number(succeeded(named).stdout.trim()), author: "grace" }),
      expect.objectContaining({ number, author: "Ada Lovelace" }),
    ]);
  });
});

describe("a pull request submitted again", () => {
  it("is one line in pr list, as its latest submission; --history lists each submission", async () => {
    await pushBranch("add-four", { "four.txt": "4\n" }, "Ada Lovelace <ada@example.com>");
    const number = Number(
      succeeded(await cli("pr", "open", "--repo", "acme/calc", "--head", "add-four")).stdout,
    );
    succeeded(await cli("pr", "submit", String(number), "--repo", "acme/calc"));
    await waitFor(async () => (await stateOf(number)) === "pending", "the submission");
    // A push to its head takes it out of the queue; then it is submitted again.
    await git(project.dir, "checkout", "--quiet", "add-four");
    await writeFile(path.join(project.dir, "four.txt"), "four\n");
    await git(project.dir, "commit", "--quiet", "-am", "Spell four");
    await git(project.dir, "push", "--quiet", project.remote, "add-four");
    await git(project.dir, "checkout", "--quiet", "main");
    await waitFor(async () => (await stateOf(number)) === "cancelled", "the push to cancel it", {
      timeoutMs: 20_000,
    });
    succeeded(await cli("pr", "submit", String(number), "--repo", "acme/calc"));
    await waitFor(async () => (await stateOf(number)) === "pending", "the second submission");

    const rows = (text: string) =>
      text.split("\n").filter((line) => line.startsWith(`#${number} `));
    const list = succeeded(await cli("pr", "list", "--repo", "acme/calc"));
    expect(rows(list.stdout)).toEqual([expect.stringMatching(/^#\d+ +pending /)]);
    const history = succeeded(await cli("pr", "list", "--repo", "acme/calc", "--history"));
    expect(rows(history.stdout)).toEqual([
      expect.stringMatching(/^#\d+ +cancelled /),
      expect.stringMatching(/^#\d+ +pending /),
    ]);
    // The API the CLI reads says the same, and a state filter reads the latest submission.
    const listed = async (body: Record<string, unknown>) =>
      (
        await ok(
          server.call<{ pullRequests: { prNumber: number; state: string }[] }>("listPullRequests", {
            ...QUEUE,
            ...body,
          }),
        )
      ).pullRequests.filter((pr) => pr.prNumber === number);
    expect(await listed({})).toEqual([expect.objectContaining({ state: "pending" })]);
    expect(await listed({ state: "cancelled" })).toEqual([]);
    expect(await listed({ state: "cancelled", history: true })).toHaveLength(1);
    expect(await listed({ history: true })).toHaveLength(2);
  });
});

describe("the repository's name", () => {
  it("is the one typed at repo create, in the CLI's own messages and the server's", async () => {
    expect(created.stderr).toMatch(/^Created acme\/calc\. Push to it with: git push /);
    const missing = await cli("pr", "status", "99", "--repo", "acme/calc");
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toBe(
      "mainline: Pull request #99 has never been submitted to the merge queue for branch main of acme/calc.\n",
    );
  });
});
