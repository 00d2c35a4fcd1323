/**
 * `mainline pr …` as a real process against a server running the real merge-queue engine, with
 * an in-memory git host.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliInProcess, stopAllProcesses, type CliResult } from "../helpers/process.js";
import { InMemoryGitHost, startEngineServer } from "../helpers/git-host.js";
import type { TestServer } from "../helpers/server.js";
import { failed, succeeded } from "./support.js";
import { describeWaitingFor, localClockTime } from "../../src/cli/waiting.js";

const REPO = { host: "github.com", owner: "acme", name: "app" };
const BRANCH = "cli-main";

let server: TestServer;
let git: InMemoryGitHost;

beforeAll(async () => {
  ({ server, git } = await startEngineServer());
  const address = { repo: REPO, targetBranch: BRANCH };
  expect((await server.call("createQueue", address)).status).toBe(200);
  // Paused: submitted pull requests wait in `pending`, so that what the CLI shows is stable.
  expect((await server.call("updateQueue", { ...address, state: "paused" })).status).toBe(200);
});

afterAll(async () => {
  await stopAllProcesses();
  await server.close();
});

let headCounter = 0;
function openPr(title: string): { number: number; head: string } {
  const head = `cli/feature-${++headCounter}`;
  const { number } = git.openPullRequest({
    ...REPO,
    head,
    base: BRANCH,
    title,
    author: "alice",
  });
  return { number, head };
}

/** `mainline pr …` aimed at the test server's queue. */
const pr = (...args: string[]): Promise<CliResult> =>
  runCliInProcess([
    "pr",
    ...args,
    "--repo",
    "github.com/acme/app",
    "--branch",
    BRANCH,
    "--url",
    server.url,
    "--token",
    server.token,
  ]);

type Json = Record<string, unknown> & {
  pullRequests?: { prNumber: number }[];
  nextCursor?: string;
};
const json = (result: CliResult): Json => JSON.parse(succeeded(result).stdout) as Json;

describe("mainline pr", () => {
  it("submit with a priority, then status as JSON and as text", async () => {
    const { number } = openPr("Add login");
    const submitted = succeeded(
      await pr("submit", String(number), "--priority", "high", "--no-batch"),
    );
    expect(submitted.stdout).toBe("");
    expect(submitted.stderr).toContain(`Submitted #${number} to the merge queue for ${BRANCH}.`);

    const body = json(await pr("status", String(number), "--json"));
    expect(body).toMatchObject({
      prNumber: number,
      state: "pending",
      priorityValue: 10,
      priorityName: "high",
      noBatch: true,
      isCurrentlySubmittedToQueue: true,
    });

    const text = succeeded(await pr("status", `#${number}`)).stdout;
    expect(text).toMatch(new RegExp(`^pr +#${number} Add login$`, "m"));
    expect(text).toMatch(/^state +pending$/m);
    expect(text).toMatch(/^priority +high \(10\)$/m);
    expect(text).not.toContain("timeline");
  });

  it("status by head branch, with the timeline", async () => {
    const { number, head } = openPr("By branch");
    succeeded(await pr("submit", String(number)));
    const text = succeeded(await pr("status", "--head", head, "--timeline")).stdout;
    expect(text).toMatch(new RegExp(`^pr +#${number} By branch$`, "m"));
    expect(text).toMatch(/^priority +medium \(100\), default$/m);
    expect(text).toContain("\ntimeline\n");
    // Reasons in words, as the pages say them.
    expect(text).toMatch(/^\S+ +- +not_ready +Submitted to the queue\. +api-token:/m);
    expect(text).toMatch(
      /^\S+ +not_ready +pending +Ready: it waits for its turn to be tested\. +queue/m,
    );
  });

  it("status, list and queue get say what a waiting pull request waits for, in local time", async () => {
    const targetBranch = "cli-batching";
    const address = { repo: REPO, targetBranch };
    expect((await server.call("createQueue", address)).status).toBe(200);
    const settings = { batch: true, batchingMinSize: 3, batchingMaxWaitTimeMinutes: 30 };
    expect((await server.call("updateQueue", { ...address, ...settings })).status).toBe(200);
    const head = `cli/batching-${++headCounter}`;
    const { number } = git.openPullRequest({
      ...REPO,
      head,
      base: targetBranch,
      title: "Alone",
      author: "alice",
    });
    const at = ["--repo", "github.com/acme/app", "--branch", targetBranch];
    const serverArgs = ["--url", server.url, "--token", server.token];
    succeeded(await runCliInProcess(["pr", "submit", String(number), ...at, ...serverArgs]));

    let until = "";
    for (let i = 0; i < 100 && until === ""; i++) {
      const read = await server.call<{ waitingFor?: { until?: string } }>(
        "getSubmittedPullRequest",
        { ...address, pr: { number } },
      );
      until = read.body.waitingFor?.until ?? "";
      if (until === "") await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(until).not.toBe("");
    const expected = `batch forming: 1 of 3, starts by ${localClockTime(Date.parse(until))} at the latest`;

    const status = succeeded(
      await runCliInProcess(["pr", "status", String(number), ...at, ...serverArgs]),
    ).stdout;
    expect(status).toMatch(/^state +pending$/m);
    expect(status).toMatch(new RegExp(`^waitingFor +${expected.replace(/[()]/g, "\\$&")}$`, "m"));

    const list = succeeded(await runCliInProcess(["pr", "list", ...at, ...serverArgs])).stdout;
    expect(list).toContain(`pending (${expected})`);

    const queue = succeeded(await runCliInProcess(["queue", "get", ...at, ...serverArgs])).stdout;
    expect(queue).toMatch(new RegExp(`#${number} +${expected}$`, "m"));
  });

  it("words a wait on the local clock, with the date when it is not today", () => {
    const now = new Date(2026, 0, 15, 9, 0).getTime();
    const until = new Date(2026, 0, 15, 15, 19).toISOString();
    const batch = { have: 1, need: 3 };
    expect(describeWaitingFor({ reason: "batch_forming", message: "", until, batch }, now)).toBe(
      "batch forming: 1 of 3, starts by 15:19 at the latest",
    );
    const tomorrow = new Date(2026, 0, 16, 0, 4).toISOString();
    expect(
      describeWaitingFor({ reason: "batch_forming", message: "", until: tomorrow, batch }, now),
    ).toBe("batch forming: 1 of 3, starts by 2026-01-16 00:04 at the latest");
    expect(
      describeWaitingFor({ reason: "bisection_ahead", message: "", prNumbers: [4, 5] }, now),
    ).toBe("waiting for the localization of the failed batch ahead (suspects #4, #5)");
    const localized = "under localization: testing 2 prefixes of batch run 7 …";
    expect(
      describeWaitingFor({ reason: "under_localization", message: localized, runId: "7" }, now),
    ).toBe(localized);
    expect(describeWaitingFor({ reason: "something_new", message: "as the server says" })).toBe(
      "as the server says",
    );
  });

  it("list as a table and as JSON pages", async () => {
    const a = openPr("First");
    const b = openPr("Second");
    succeeded(await pr("submit", String(a.number)));
    succeeded(await pr("submit", String(b.number)));
    const table = succeeded(await pr("list", "--state", "pending")).stdout.split("\n");
    expect(table[0]).toMatch(/^PR +STATE +PRIORITY +CHANGED +AUTHOR +TITLE$/);
    expect(
      table.some((line) => new RegExp(`^#${a.number} +pending +.* alice +First$`).test(line)),
    ).toBe(true);
    expect(
      table.some((line) => new RegExp(`^#${b.number} +pending +.* alice +Second$`).test(line)),
    ).toBe(true);

    const first = await pr("list", "--take", "1");
    succeeded(first);
    expect(first.stderr).toMatch(/More pull requests: add --cursor [0-9a-f-]{36}/);
    const page = json(await pr("list", "--take", "1", "--json"));
    expect(page.pullRequests).toHaveLength(1);
    expect(page.nextCursor).toMatch(/^[0-9a-f-]{36}$/);
    const next = json(
      await pr("list", "--take", "100", "--cursor", page.nextCursor ?? "", "--json"),
    );
    expect(next.pullRequests?.length).toBeGreaterThan(0);
  });

  it("cancel, then status shows it concluded; since lists it", async () => {
    const { number } = openPr("To cancel");
    const since = new Date().toISOString();
    succeeded(await pr("submit", String(number)));
    const cancelled = succeeded(await pr("cancel", String(number)));
    expect(cancelled.stderr).toContain(`Cancelled #${number} in the merge queue for ${BRANCH}.`);
    expect(json(await pr("status", String(number), "--json"))).toMatchObject({
      state: "cancelled",
      isCurrentlySubmittedToQueue: false,
    });
    const concluded = json(await pr("list", "--since", since, "--json"));
    expect(concluded.pullRequests?.map((p) => p.prNumber)).toEqual([number]);
  });

  it("the server's refusals: non-zero exit with its message", async () => {
    expect(failed(await pr("restart", "999999"))).toMatch(/^mainline: /m);
    expect(failed(await pr("status", "999998"))).toContain("#999998 has never been submitted");
    const stderr = failed(await pr("list", "--state", "queued"));
    expect(stderr).toMatch(/^mainline: .+\n {2}- state: .+/m);
    expect(failed(await pr("list", "--since", "yesterday"))).toContain("since");
  });
});
