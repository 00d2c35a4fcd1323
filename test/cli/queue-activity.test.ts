/**
 * `mainline queue get` says what the queue is doing besides its settings: the batch size in use
 * and why, each failed batch being localized, and what its pull requests and those behind wait
 * for; against the real engine, an in-memory git host and a CI whose results the test gives.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliInProcess, stopAllProcesses } from "../helpers/process.js";
import {
  REPO,
  eventually,
  finishRun,
  queueWithPullRequests,
  runOf,
  startLocalizationWorld,
  type LocalizationWorld,
} from "../helpers/localization.js";
import { succeeded } from "./support.js";

let world: LocalizationWorld;

beforeAll(async () => {
  world = await startLocalizationWorld();
});

afterAll(async () => {
  await stopAllProcesses();
  await world.server.close();
});

/** `mainline queue get` of a branch, as text. */
async function queueGet(branch: string): Promise<string> {
  const args = ["--repo", "github.com/acme/app", "--branch", branch];
  const server = ["--url", world.server.url, "--token", world.server.token];
  return succeeded(await runCliInProcess(["queue", "get", ...args, ...server])).stdout;
}

/** A line `label  text`, the label padded to the settings' width. */
const line = (label: string, text: string) =>
  new RegExp(`^ *${escape(label)} +${escape(text)}$`, "m");
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("queue get", () => {
  it("with batching off: one pull request at a time, nothing being localized", async () => {
    const address = { repo: REPO, targetBranch: "cli-unbatched" };
    expect((await world.server.call("createQueue", address)).status).toBe(200);
    const text = await queueGet("cli-unbatched");
    expect(text).toMatch(line("batchSize", "1: batching is off"));
    expect(text).not.toMatch(/^localization /m);
    expect(text).toMatch(line("enqueued", "0 pull request(s)"));
    // An update answers the settings only: nothing about what the queue is doing.
    const update = succeeded(
      await runCliInProcess([
        "queue",
        "update",
        "--repo",
        "github.com/acme/app",
        "--branch",
        "cli-unbatched",
        "--batch",
        "true",
        "--url",
        world.server.url,
        "--token",
        world.server.token,
      ]),
    ).stdout;
    expect(update).toMatch(/^batch +true$/m);
    expect(update).not.toMatch(/^batchSize /m);
    expect(await queueGet("cli-unbatched")).toMatch(
      line(
        "batchSize",
        "4 of at most 4: no failure has stood in the queue's recent runs: batches of 4, the most batchingMinSize allows",
      ),
    );
  });

  it("prints the batch size and why, each localization, and who waits for it", async () => {
    const { address, numbers } = await queueWithPullRequests(
      world,
      {
        requiredStatuses: ["test"],
        batch: true,
        batchingMinSize: 3,
        batchingMaxWaitTimeMinutes: 30,
        bisectionConcurrency: 2,
      },
      4,
    );
    const branch = address.targetBranch;
    const [a, b, c, d] = numbers as [number, number, number, number];
    const batchRun = await finishRun(world, branch, [a, b, c], false);
    await eventually(async () => {
      expect(runOf(world, branch, [a, b])).toBeDefined();
      expect(await queueGet(branch)).toMatch(/^localization +testing 2 prefixes/m);
    });

    const text = await queueGet(branch);
    expect(text).toMatch(
      /^batchSize +3 of at most 3: batches of 3 \(the most batchingMinSize allows\) merge the most at a \d+(\.\d)? % failure rate$/m,
    );
    expect(text).toMatch(
      line(
        "localization",
        `testing 2 prefixes of batch run ${batchRun} to find the failing pull request (one of #${a}, #${b}, #${c})`,
      ),
    );
    expect(text).toMatch(line("enqueued", "4 pull request(s)"));
    for (const n of [a, b, c]) {
      expect(text).toMatch(
        line(`#${n}`, `under localization: a suspect of failed batch run ${batchRun}`),
      );
    }
    expect(text).toMatch(
      line(
        `#${d}`,
        `waiting for the localization of the failed batch ahead (suspects #${a}, #${b}, #${c})`,
      ),
    );

    // #a passes alone, is cleared and merges: the localization says so.
    await finishRun(world, branch, [a], true);
    await eventually(async () => {
      expect(await queueGet(branch)).toMatch(
        line(
          "localization",
          `testing 1 prefix of batch run ${batchRun} to find the failing pull request (one of #${b}, #${c}); cleared #${a}`,
        ),
      );
    });
    // Decided: nothing is being localized any more.
    await finishRun(world, branch, [a, b], false);
    await eventually(async () => {
      expect(await queueGet(branch)).not.toMatch(/^localization /m);
    });
  });
});
