/**
 * GitLab cost of the merge queue (docs/benchmarks.md, "GitLab: requests per merged MR"): a real
 * `mainline serve` configured for the fake GitLab (real git underneath, git over HTTP, pipelines
 * running the project's `.gitlab-ci.yml` on every push to `trunk-merge/**`), an organization
 * connected with a project access token, and a queue with its note and commit status on. PRS merge
 * requests that each change their own file, submitted at once: serial (concurrency 1, no batching),
 * then batching (batches of BATCH).
 *
 * Counted: every request the token's user made to GitLab, REST and git over HTTP alike, from the
 * first submit until the last merge request merged and the queue's notes were final, per merged
 * merge request, by route. The count does not depend on the database; SQLite is used.
 *
 * Usage: npm run bench:gitlab-queue   (BENCH_PRS=<2..60>, default 12; BENCH_BATCH=<2..20>, default 4)
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { FakeGitLab } from "../test/helpers/fake-gitlab/index.js";
import { Api } from "./support/api.js";
import { integerFromEnv } from "./support/env.js";
import { ROOT, showServerOutput, startServer } from "./support/server.js";
import { formatTable } from "./support/table.js";

const RESULTS_FILE = path.join(ROOT, "bench", "results", "gitlab-queue.json");
const PRS = integerFromEnv("BENCH_PRS", 12, 2, 60);
const BATCH = integerFromEnv("BENCH_BATCH", 4, 2, 20);
const TARGET_PER_MERGED = 12;
const PROJECT = "acme/widgets";
const HOST = "gitlab.example.com";
const QUEUE = { repo: { host: HOST, owner: "acme", name: "widgets" }, targetBranch: "main" };
const CI = `workflow:\n  rules:\n    - if: $CI_COMMIT_BRANCH =~ /^trunk-merge\\//\ntest:\n  script:\n    - "true"\n`;

interface Outcome {
  scenario: string;
  merged: number;
  requests: number;
  rest: number;
  git: number;
  perMerged: number;
  byRoute: Record<string, number>;
  seconds: number;
}

async function scenario(name: string, settings: Record<string, unknown>): Promise<Outcome> {
  const gl = await FakeGitLab.start({ seed: 3 });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-gitlab-"));
  const token = randomBytes(32).toString("hex");
  try {
    gl.createUser("alice");
    await gl.createProject({
      path: PROJECT,
      files: { "README.md": "widgets\n", ".gitlab-ci.yml": CI },
    });
    gl.addMember(PROJECT, "alice", 30);
    const bot = gl.createProjectToken(PROJECT, { accessLevel: 40 });
    const server = await startServer({
      token,
      dataDir,
      env: {
        MAINLINE_GITLAB_URL: gl.url,
        MAINLINE_GITLAB_HOST: HOST,
        MAINLINE_GITLAB_RETRY_BASE_MS: "0",
        MAINLINE_GITLAB_CI_POLL_SECONDS: "15",
        MAINLINE_GITLAB_RECONCILE_SECONDS: "0",
        MAINLINE_BATCH_WAIT_LIMIT_SECONDS: "2",
      },
    });
    try {
      const api = new Api(server.baseUrl, token);
      const connected = await api.call<{
        connection: { webhook: { path: string; secret: string } };
      }>("gitlab/connect", { token: bot.token });
      const { path: hookPath, secret } = connected.connection.webhook;
      gl.addHook(PROJECT, { url: `${server.baseUrl}${hookPath}`, token: secret });
      await api.call("createQueue", QUEUE);
      await api.call("updateQueue", {
        ...QUEUE,
        commentsEnabled: true,
        statusCheckEnabled: true,
        ...settings,
      });
      const numbers: number[] = [];
      for (let k = 1; k <= PRS; k++) {
        const branch = `change-${String(k)}`;
        await gl.commit(
          PROJECT,
          branch,
          { [`${branch}.txt`]: `${String(k)}\n` },
          { author: "alice", from: "main" },
        );
        numbers.push(
          (
            await gl.createMergeRequest({
              project: PROJECT,
              sourceBranch: branch,
              title: branch,
              author: "alice",
            })
          ).iid,
        );
      }
      await gl.settle();
      const from = gl.requestLog.length;
      const started = Date.now();
      for (const number of numbers)
        await api.call("submitPullRequest", { ...QUEUE, pr: { number } });
      for (;;) {
        const answer = await api.call<{ pullRequests: { state: string }[] }>(
          "getSubmittedPullRequests",
          {
            ...QUEUE,
            prs: numbers.map((number) => ({ number })),
          },
        );
        if (answer.pullRequests.every((pr) => ["merged", "failed", "cancelled"].includes(pr.state)))
          break;
        if (Date.now() - started > 10 * 60_000)
          throw new Error(`${name}: the queue did not finish`);
        await delay(250);
      }
      const seconds = (Date.now() - started) / 1000;
      // Quiet: the last notes edited (the presence settles states for 2 s), nothing in flight.
      let seen = -1;
      while (seen !== gl.requestLog.length) {
        seen = gl.requestLog.length;
        await delay(3_000);
        await gl.settle();
      }
      const made = gl.requestLog
        .slice(from)
        .filter((request) => request.user === bot.user.username);
      const byRoute: Record<string, number> = {};
      for (const request of made) {
        const key = `${request.method} ${request.route}`;
        byRoute[key] = (byRoute[key] ?? 0) + 1;
      }
      const merged = numbers.filter(
        (number) => gl.mergeRequest(PROJECT, number).state === "merged",
      ).length;
      const git = made.filter((request) => request.route === "git").length;
      showServerOutput(`(${name})`, server.takeOutput());
      return {
        scenario: name,
        merged,
        requests: made.length,
        rest: made.length - git,
        git,
        perMerged: Math.round((made.length / Math.max(1, merged)) * 100) / 100,
        byRoute,
        seconds,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await gl.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const outcomes = [
    await scenario("serial", { mode: "single", concurrency: 1, batch: false }),
    await scenario(`batching (${String(BATCH)})`, {
      mode: "single",
      concurrency: 1,
      batch: true,
      batchingMinSize: BATCH,
      batchingMaxWaitTimeMinutes: 1,
    }),
  ];
  console.log(
    formatTable(
      ["scenario", "merged", "requests", "REST", "git", "per merged MR", "target", "seconds"],
      outcomes.map((o) => [
        o.scenario,
        String(o.merged),
        String(o.requests),
        String(o.rest),
        String(o.git),
        o.perMerged.toFixed(2),
        `≤ ${String(TARGET_PER_MERGED)}`,
        o.seconds.toFixed(1),
      ]),
      [0],
    ),
  );
  for (const o of outcomes) console.log(`${o.scenario}:`, JSON.stringify(o.byRoute));
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(
    RESULTS_FILE,
    `${JSON.stringify({ measuredAt: new Date().toISOString(), prs: PRS, batch: BATCH, outcomes }, null, 2)}\n`,
  );
}

await main();
