/**
 * GitHub API cost of the merge queue (docs/benchmarks.md, "GitHub: API requests per merged PR"):
 * a real `mainline serve` with the GitHub App configured against the fake GitHub (real git
 * underneath, its Actions-like CI running a check on every push to `trunk-merge/**`), a queue
 * with comments and status checks on, PRS pull requests that each change their own file,
 * submitted at once. Counted: every request Mainline made to GitHub from the first submit until
 * the last PR merged and its comment and check were final, per merged PR, by operation; 304s (a
 * conditional GET that found nothing new: free of rate limit) apart. Serial (concurrency 1, no
 * batching), then batching (batches of BATCH).
 *
 * The count does not depend on the database; SQLite is used.
 *
 * Usage: npm run bench:github-queue   (BENCH_PRS=<2..60>, default 12; BENCH_BATCH=<2..20>,
 *                                      default 4; BENCH_DUMP=<path prefix>: every request
 *                                      counted, one a line, to <prefix>-<scenario>.txt)
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { FakeGitHub } from "../test/helpers/fake-github/index.js";
import { integerFromEnv } from "./support/env.js";
import { formatTable } from "./support/table.js";
import { ROOT, showServerOutput, startServer } from "./support/server.js";
import { Api } from "./support/api.js";

const RESULTS_FILE = path.join(ROOT, "bench", "results", "github-queue.json");
const PRS = integerFromEnv("BENCH_PRS", 12, 2, 60);
const BATCH = integerFromEnv("BENCH_BATCH", 4, 2, 20);
/** The issue's bar: serial, comments and status checks on. */
const TARGET_PER_MERGED_PR = 12;
const SCENARIO_TIMEOUT_MS = 10 * 60_000;
const OWNER = "acme";
const NAME = "widgets";
const QUEUE = { repo: { host: "github.com", owner: OWNER, name: NAME }, targetBranch: "main" };

interface Scenario {
  name: string;
  settings: Record<string, unknown>;
}

interface ScenarioResult {
  name: string;
  merged: number;
  failed: number;
  requests: number;
  notModified: number;
  perMergedPr: number | null;
  byOperation: Record<string, number>;
  wallMs: number;
}

async function scenario(scenarioSpec: Scenario): Promise<ScenarioResult> {
  const gh = await FakeGitHub.start({ seed: 3, validate: false });
  const app = gh.createApp({ slug: "mainline-bench" });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-gh-"));
  const token = randomBytes(24).toString("hex");
  try {
    gh.createOrganization(OWNER);
    gh.createUser("alice");
    gh.addOrgMember(OWNER, "alice", "admin");
    await gh.createRepository({ owner: OWNER, name: NAME, files: { "README.md": "widgets\n" } });
    gh.configureCi(`${OWNER}/${NAME}`, [
      {
        name: "test",
        on: { push: { branches: ["trunk-merge/**"] } },
        checks: [{ name: "ci", outcome: "pass" }],
      },
    ]);
    const server = await startServer({
      token,
      dataDir,
      env: {
        MAINLINE_GITHUB_APP_ID: String(app.id),
        MAINLINE_GITHUB_PRIVATE_KEY: app.privateKey,
        MAINLINE_GITHUB_WEBHOOK_SECRET: app.webhookSecret,
        MAINLINE_GITHUB_API_URL: gh.url,
        MAINLINE_GITHUB_HOST: "github.com",
      },
    });
    try {
      gh.setWebhookUrls(app.id, [`${server.baseUrl}/webhooks/github`]);
      const installationId = gh.installApp(app.id, { account: OWNER, repositories: "all" }).id;
      const api = new Api(server.baseUrl, token);
      await gh.settleWebhooks();
      await api.call("github/linkInstallation", {
        installationId,
        githubToken: gh.createUserToken("alice"),
      });
      await api.call("createQueue", QUEUE);
      await api.call("updateQueue", {
        ...QUEUE,
        commentsEnabled: true,
        statusCheckEnabled: true,
        requiredStatuses: ["ci"],
        testingTimeoutMinutes: 0,
        ...scenarioSpec.settings,
      });
      const numbers: number[] = [];
      for (let k = 1; k <= PRS; k++) {
        await gh.commit(`${OWNER}/${NAME}`, {
          branch: `change-${String(k)}`,
          from: "main",
          files: { [`change-${String(k)}.txt`]: `change ${String(k)}\n` },
          by: "alice",
        });
        numbers.push(
          await gh.openPullRequest(`${OWNER}/${NAME}`, {
            head: `change-${String(k)}`,
            by: "alice",
          }),
        );
      }
      await gh.settleWebhooks();

      const mark = gh.requests.mark();
      const started = Date.now();
      for (const number of numbers) {
        await api.call("submitPullRequest", { ...QUEUE, pr: { number } });
      }
      let states: { number: number; state: string }[] = [];
      while (Date.now() - started < SCENARIO_TIMEOUT_MS) {
        const answer = await api.call<{
          pullRequests: { prNumber: number; state: string }[];
        }>("getSubmittedPullRequests", { ...QUEUE, prs: numbers.map((number) => ({ number })) });
        states = answer.pullRequests.map((p) => ({ number: p.prNumber, state: p.state }));
        if (states.every((s) => ["merged", "failed", "cancelled"].includes(s.state))) break;
        await delay(250);
      }
      const wallMs = Date.now() - started;
      // The last comment and check updates follow the last merge: until GitHub hears nothing
      // more for 3 s (a minute at most).
      const quietSince = Date.now();
      let heard = -1;
      while (gh.requests.entries.length !== heard && Date.now() - quietSince < 60_000) {
        heard = gh.requests.entries.length;
        await gh.settleWebhooks();
        await delay(3000);
      }
      const made = gh.requests.entries.filter(
        (entry) => entry.seq >= mark && entry.installationId !== null,
      );
      if (process.env.BENCH_DUMP) {
        await writeFile(
          `${process.env.BENCH_DUMP}-${scenarioSpec.name.replaceAll(" ", "-")}.txt`,
          made.map((e) => `${String(e.status)} ${e.method} ${e.path}`).join("\n"),
        );
      }
      const notModified = made.filter((entry) => entry.status === 304).length;
      const byOperation: Record<string, number> = {};
      for (const entry of made) {
        if (entry.status === 304) continue;
        byOperation[entry.operationId] = (byOperation[entry.operationId] ?? 0) + 1;
      }
      const merged = states.filter((s) => s.state === "merged").length;
      const requests = made.length - notModified;
      showServerOutput(`(${scenarioSpec.name})`, server.takeOutput());
      return {
        name: scenarioSpec.name,
        merged,
        failed: states.length - merged,
        requests,
        notModified,
        perMergedPr: merged > 0 ? Math.round((requests / merged) * 10) / 10 : null,
        byOperation,
        wallMs,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await gh.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const loadAverage = os.loadavg()[0] ?? 0;
const results: ScenarioResult[] = [];
for (const spec of [
  { name: "serial", settings: { mode: "single", concurrency: 1, batch: false } },
  {
    name: `batches of ${String(BATCH)}`,
    settings: {
      mode: "single",
      concurrency: 1,
      batch: true,
      batchingMinSize: BATCH,
      batchingMaxWaitTimeMinutes: 1,
    },
  },
]) {
  process.stdout.write(`${spec.name}…\n`);
  results.push(await scenario(spec));
}
process.stdout.write(
  `${formatTable(
    ["scenario", "merged", "failed", "requests", "per merged PR", "304s", "wall s"],
    results.map((r) => [
      r.name,
      String(r.merged),
      String(r.failed),
      String(r.requests),
      r.perMergedPr === null ? "-" : String(r.perMergedPr),
      String(r.notModified),
      (r.wallMs / 1000).toFixed(1),
    ]),
    [0],
  )}\n`,
);
for (const r of results) {
  const ops = Object.entries(r.byOperation).sort((a, b) => b[1] - a[1]);
  process.stdout.write(`${r.name}: ${ops.map(([op, n]) => `${op} ${String(n)}`).join(", ")}\n`);
}
const serial = results[0];
const pass =
  serial !== undefined &&
  serial.failed === 0 &&
  serial.perMergedPr !== null &&
  serial.perMergedPr <= TARGET_PER_MERGED_PR;
process.stdout.write(
  `serial, comments and status checks on: at most ${String(TARGET_PER_MERGED_PR)} requests per merged PR: ${pass ? "yes" : "no"}\n`,
);
await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
await writeFile(
  RESULTS_FILE,
  `${JSON.stringify(
    {
      measuredAt: new Date().toISOString(),
      prs: PRS,
      loadAverageBefore: Math.round(loadAverage * 10) / 10,
      targetPerMergedPr: TARGET_PER_MERGED_PR,
      pass,
      results,
    },
    null,
    2,
  )}\n`,
);
