import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCommand, type CommandOptions } from "../../src/providers/local/ci/process.js";
import { expectGone } from "../helpers/ci-git.js";

let dir: string;
let logPath: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "mainline-process-"));
  logPath = path.join(dir, "logs", "check.log");
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function run(command: string, options: Partial<CommandOptions> = {}) {
  return runCommand({
    command,
    cwd: dir,
    env: process.env,
    timeoutMs: 10_000,
    logPath,
    ...options,
  });
}

/** The pid a command printed as `bg=<pid>`. */
async function backgroundPid(): Promise<number> {
  const match = /bg=(\d+)/.exec(await readFile(logPath, "utf8"));
  if (match?.[1] === undefined) throw new Error("the command did not print its background pid");
  return Number(match[1]);
}

async function waitForLog(text: string): Promise<void> {
  for (;;) {
    const log = await readFile(logPath, "utf8").catch(() => "");
    if (log.includes(text)) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("runCommand", () => {
  it("logs stdout and stderr, then how the command ended", async () => {
    const outcome = await run("echo out; echo err >&2; exit 4");
    expect(outcome).toMatchObject({ conclusion: "failure", exitCode: 4, signal: null });
    const log = await readFile(logPath, "utf8");
    expect(log).toMatch(/^out\nerr\n\n\[mainline\] exited with code 4 after \d+\.\d s\n$/);
    expect((await run("true")).conclusion).toBe("success");
  });

  it("kills what a command left running in the background when it exits", async () => {
    const outcome = await run('sleep 1000 & echo "bg=$!"');
    expect(outcome.conclusion).toBe("success");
    await expectGone(await backgroundPid());
  });

  it("kills the whole group at the timeout, with SIGKILL when SIGTERM is ignored", async () => {
    const outcome = await run('trap "" TERM; sleep 1000 & echo "bg=$!"; wait', {
      timeoutMs: 300,
      graceMs: 200,
    });
    expect(outcome).toMatchObject({ conclusion: "timed_out", exitCode: null, signal: "SIGKILL" });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(450);
    await expectGone(await backgroundPid());
    expect(await readFile(logPath, "utf8")).toMatch(
      /\[mainline\] timed out after .* \(limit 0\.3 s\)/,
    );
  });

  it("stops the group when its signal is aborted, and does not start when already aborted", async () => {
    const controller = new AbortController();
    const running = run('sleep 1000 & echo "bg=$!"; wait', { signal: controller.signal });
    await waitForLog("bg=");
    controller.abort();
    expect(await running).toMatchObject({ conclusion: "cancelled", signal: "SIGTERM" });
    await expectGone(await backgroundPid());
    const never = await run("echo ran", { signal: controller.signal });
    expect(never.conclusion).toBe("cancelled");
    expect(await readFile(logPath, "utf8")).not.toContain("ran\n");
  });

  it("fails a command that cannot start", async () => {
    const outcome = await run("true", { cwd: path.join(dir, "missing") });
    expect(outcome.conclusion).toBe("failure");
    expect(await readFile(logPath, "utf8")).toContain("[mainline] could not start: ");
  });
});
