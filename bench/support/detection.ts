/**
 * Detection quality through the real ingestion path (docs/benchmarks.md, "Detection quality"):
 * a seeded workload with known truth (src/testhealth/detection-workload.ts) is uploaded with
 * the uploader protocol's service calls (createBundleUpload, the signed PUT's receiveBundle),
 * processed by the ingestion worker (bundle reader, JUnit parser, stores, monitors) on a
 * virtual clock, and swept as time passes; then the statuses and their history are scored
 * against the truth. Shared by `npm run bench:detection` and test/ingest/detection-quality.
 */
import { Readable } from "node:stream";
import { createServices } from "../../src/app.js";
import type { DatabaseHandle } from "../../src/db/connection.js";
import { writeBundleBuffer } from "../../src/testhealth/bundle/index.js";
import {
  QUEUE_CLIENT,
  generateDetectionWorkload,
  renderDetectionJunit,
  type DetectionTruth,
  type DetectionUpload,
  type DetectionWorkloadOptions,
} from "../../src/testhealth/detection-workload.js";
import type { MonitorSettings } from "../../src/testhealth/monitors.js";
import { defaultTestSettings } from "../../src/testhealth/settings.js";

const HOUR = 3_600_000;
const REPO = { host: "github.com", owner: "bench", name: "detection" };
const ORG = "bench";

export interface DetectionRunOptions {
  workload: DetectionWorkloadOptions;
  database: DatabaseHandle;
  dataDir: string;
  /** The repository's monitors; the defaults when absent. */
  monitors?: MonitorSettings;
  /** How often the worker's sweep runs in simulated time (the server's is every minute). */
  sweepEveryMs?: number;
  /**
   * Uploads are processed as they arrive (0, the default) or, to replay a history faster,
   * together with those arriving within this long after the first waiting one, in one batch
   * (what the worker does with uploads that arrive while it is busy).
   */
  batchWithinMs?: number;
  onProgress?: (done: number, at: number) => void;
}

export interface FalsePositive {
  test: string;
  variant: string;
  truth: DetectionTruth["kind"];
  status: string;
  at: string;
  reason: string;
}

export interface Distribution {
  count: number;
  median: number | null;
  p95: number | null;
  max: number | null;
}

export interface DetectionReport {
  uploads: number;
  runs: number;
  ciRuns: number;
  /** Uploads of each shape of CI (main, PRs, queue, re-runs, outages, retries, …). */
  shapes: Record<string, number>;
  /** Tests of each truth (and of each flake rate). */
  truths: Record<string, number>;
  simulatedDays: number;
  seconds: number;
  flaky: {
    /** Truly flaky tests (ids) with a flake rate of 5% or more, and how many were found. */
    truePositives: number;
    falsePositives: number;
    precision: number;
    recall: number;
    /** Recall per flake rate (all rates, also below 5%). */
    recallByRate: Record<
      string,
      { tests: number; found: number; recall: number; runsToDetection: Distribution }
    >;
    /** From the first failure to the flaky status, for flake rates of 5% or more. */
    runsToDetection: Distribution;
    hoursToDetection: Distribution;
  };
  broken: {
    truePositives: number;
    falsePositives: number;
    precision: number;
    /** Of the tests broken for at least a day of the history. */
    recall: number;
    /** Hours from the breaking commit to the broken status. */
    hoursToDetection: Distribution;
  };
  /** Regressions (broken by one commit, fixed by a later one): hours marked after the fix. */
  fixedStaysMarkedHours: Distribution;
  /** Tests broken by a commit (on main, a variant or a PR) ever marked flaky; must be none. */
  brokenMarkedFlaky: FalsePositive[];
  falsePositives: FalsePositive[];
}

interface Observed {
  /** Counted runs of truly flaky tests, for runs-to-detection. */
  runs: { at: number; failed: boolean }[];
}

function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const pick = (q: number) =>
    sorted.length === 0
      ? null
      : (sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? null);
  const round = (v: number | null) => (v === null ? null : Math.round(v * 10) / 10);
  return {
    count: sorted.length,
    median: round(pick(0.5)),
    p95: round(pick(0.95)),
    max: round(sorted.at(-1) ?? null),
  };
}

const ratio = (a: number, b: number): number =>
  b === 0 ? 1 : Math.round((a / b) * 10_000) / 10_000;

/** What a test (one variant of it) should be: what counts as a true flaky or broken status. */
function expected(truth: DetectionTruth, variant: string): "flaky" | "broken" | "healthy" {
  if (truth.kind === "flaky") return "flaky";
  if (truth.kind === "broken" || truth.kind === "regression") return "broken";
  if (truth.kind === "variant-broken") return variant === truth.variant ? "broken" : "healthy";
  return "healthy";
}

export async function runDetection(options: DetectionRunOptions): Promise<DetectionReport> {
  const started = performance.now();
  const workload = generateDetectionWorkload(options.workload);
  const clock = { at: options.workload.startAt, now: () => clock.at };
  const services = createServices(options.database, { clock, dataDir: options.dataDir });
  const issued = await services.organizations.createOrganizationWithToken(ORG);
  const principal = {
    organizationId: issued.organization.id,
    organizationSlug: issued.organization.slug,
    tokenId: issued.tokenId,
  };
  const sweepEvery = options.sweepEveryMs ?? HOUR;
  const observed = new Map<string, Observed>();
  let repositoryId: string | undefined;
  let uploads = 0;
  let runs = 0;
  let nextSweep = options.workload.startAt + sweepEvery;
  const startedAts = new Set<number>();
  /** How many uploads of each shape the history had. */
  const shapes: Record<string, number> = {};

  const sweepUntil = async (until: number) => {
    while (nextSweep <= until) {
      clock.at = nextSweep;
      await services.worker.sweep();
      nextSweep += sweepEvery;
    }
  };

  let waitingSince: number | undefined;
  const processWaiting = async () => {
    while (await services.worker.processNext());
    waitingSince = undefined;
  };
  const send = async (upload: DetectionUpload) => {
    if (waitingSince !== undefined && upload.at - waitingSince > (options.batchWithinMs ?? 0)) {
      await processWaiting();
    }
    if (nextSweep <= upload.at) {
      await processWaiting();
      await sweepUntil(upload.at);
    }
    // The job uploads its report when it ends, half a minute after the tests ran.
    clock.at = upload.at + 30_000;
    const created = await services.uploads.createBundleUpload(
      principal,
      { repo: REPO, orgUrlSlug: ORG, clientVersion: upload.clientVersion },
      "http://bench.invalid",
    );
    if (repositoryId === undefined) {
      const record = await services.stores.uploads.find(created.id);
      repositoryId = record?.repositoryId;
      if (repositoryId && options.monitors) {
        await services.stores.testSettings.put(
          repositoryId,
          { ...defaultTestSettings(), monitors: options.monitors },
          clock.at,
        );
      }
    }
    const url = new URL(created.url);
    const bundle = await writeBundleBuffer({
      meta: {
        orgSlug: ORG,
        repo: REPO,
        commitSha: upload.commit,
        cliVersion: upload.clientVersion.split(" ")[1] ?? "0.0.0",
        uploadTimeEpochSeconds: Math.floor(clock.at / 1000),
        branch: upload.branch,
        variant: upload.variant,
        envs: {
          JOB_NAME: upload.job,
          ...(upload.prNumber !== null ? { TRUNK_PR_NUMBER: String(upload.prNumber) } : {}),
        },
      },
      junitFiles: [
        {
          originalPath: "reports/junit.xml",
          data: renderDetectionJunit(workload.tests, upload),
        },
      ],
    });
    await services.uploads.receiveBundle(
      created.id,
      {
        expires: url.searchParams.get("expires") ?? undefined,
        signature: url.searchParams.get("signature") ?? undefined,
      },
      Readable.from([bundle]),
    );
    if (waitingSince === undefined) waitingSince = upload.at;
    uploads += 1;
    startedAts.add(upload.startedAt);
    const count = (key: string) => {
      shapes[key] = (shapes[key] ?? 0) + 1;
    };
    count(
      `uploads on ${upload.kind === "main" ? "main" : upload.kind === "pr" ? "pull requests" : "the merge queue"}`,
    );
    if (upload.attempt > 1) count("re-runs of a failed job");
    if (upload.outage) count("infrastructure outages");
    if (upload.convicted) count("merge-queue runs of a convicted PR");
    if (upload.kind === "mq" && upload.clientVersion !== QUEUE_CLIENT) {
      count("merge-queue uploads from another CI");
      if (upload.convicted) count("merge-queue runs of a convicted PR from another CI");
    }
    if (upload.variant !== "linux") count(`uploads of variant ${upload.variant}`);
    if (upload.cases.some((c) => c.attempts.length > 1)) count("uploads with retries inside");
    for (const item of upload.cases) {
      runs += item.attempts.length;
      const test = workload.tests[item.test];
      if (test?.truth.kind !== "flaky" || upload.outage) continue;
      const key = `${test.name}\u0000${upload.variant}`;
      const seen = observed.get(key) ?? { runs: [] };
      for (const attempt of item.attempts)
        seen.runs.push({ at: upload.at, failed: attempt === "failed" });
      observed.set(key, seen);
    }
    options.onProgress?.(uploads, upload.at);
  };

  // Uploads arrive in time order: hold each until no later-starting CI run can precede it.
  let pending: DetectionUpload[] = [];
  for (const upload of workload.uploads()) {
    const ready = pending.filter((p) => p.at < upload.startedAt).sort((a, b) => a.at - b.at);
    pending = pending.filter((p) => p.at >= upload.startedAt);
    for (const item of ready) await send(item);
    pending.push(upload);
  }
  for (const item of pending.sort((a, b) => a.at - b.at)) await send(item);
  await processWaiting();
  await sweepUntil(workload.endAt);

  return score(options, workload.tests, observed, {
    uploads,
    runs,
    ciRuns: startedAts.size,
    shapes,
    truths: countTruths(workload.tests),
    seconds: Math.round(performance.now() - started) / 1000,
    database: options.database,
    repositoryId: repositoryId ?? "",
    endAt: workload.endAt,
  });
}

function countTruths(tests: readonly { truth: DetectionTruth }[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { truth } of tests) {
    const key =
      truth.kind === "flaky" ? `flaky ${String(Math.round(truth.rate * 100))}%` : truth.kind;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

async function score(
  options: DetectionRunOptions,
  tests: ReturnType<typeof generateDetectionWorkload>["tests"],
  observed: ReadonlyMap<string, Observed>,
  totals: {
    uploads: number;
    runs: number;
    ciRuns: number;
    shapes: Record<string, number>;
    truths: Record<string, number>;
    seconds: number;
    database: DatabaseHandle;
    repositoryId: string;
    endAt: number;
  },
): Promise<DetectionReport> {
  const { db } = totals.database;
  const rows = await db
    .selectFrom("testCases")
    .select(["key", "name", "variant"])
    .where("repositoryId", "=", totals.repositoryId)
    .execute();
  const history = await db
    .selectFrom("testStatusHistory")
    .select(["testKey", "at", "status", "reason"])
    .where("kind", "=", "status")
    .orderBy("testKey")
    .orderBy("at")
    .execute();
  const byKey = new Map<number, typeof history>();
  for (const entry of history) {
    const list = byKey.get(entry.testKey) ?? [];
    list.push(entry);
    byKey.set(entry.testKey, list);
  }
  const indexOf = new Map(tests.map((t, i) => [t.name, i]));

  let flakyTp = 0;
  let flakyFp = 0;
  let brokenTp = 0;
  let brokenFp = 0;
  let brokenTruth = 0;
  let brokenFound = 0;
  const byRate = new Map<number, { tests: number; found: number; runs: number[] }>();
  const runsToDetection: number[] = [];
  const hoursToDetection: number[] = [];
  const brokenHours: number[] = [];
  const fixedHours: number[] = [];
  const falsePositives: FalsePositive[] = [];
  const brokenMarkedFlaky: FalsePositive[] = [];

  for (const row of rows) {
    const test = tests[indexOf.get(row.name) ?? -1];
    if (!test) continue;
    const changes = byKey.get(row.key) ?? [];
    const want = expected(test.truth, row.variant);
    const firstFlaky = changes.find((c) => c.status === "flaky");
    const firstBroken = changes.find((c) => c.status === "broken");
    const wrong = (change: (typeof changes)[number]): FalsePositive => ({
      test: row.name,
      variant: row.variant,
      truth: test.truth.kind,
      status: change.status,
      at: new Date(change.at).toISOString(),
      reason: change.reason,
    });

    if (firstFlaky) {
      if (want === "flaky") flakyTp += 1;
      else {
        flakyFp += 1;
        falsePositives.push(wrong(firstFlaky));
        if (test.truth.kind !== "healthy") brokenMarkedFlaky.push(wrong(firstFlaky));
      }
    }
    if (firstBroken) {
      if (want === "broken") brokenTp += 1;
      else {
        brokenFp += 1;
        falsePositives.push(wrong(firstBroken));
      }
    }

    if (test.truth.kind === "flaky") {
      const rate = test.truth.rate;
      const bucket = byRate.get(rate) ?? { tests: 0, found: 0, runs: [] };
      bucket.tests += 1;
      if (firstFlaky) bucket.found += 1;
      byRate.set(rate, bucket);
      const seen = observed.get(`${row.name}\u0000${row.variant}`)?.runs ?? [];
      const firstFailure = seen.find((r) => r.failed);
      if (firstFlaky && firstFailure) {
        const runs = seen.filter((r) => r.at >= firstFailure.at && r.at <= firstFlaky.at).length;
        bucket.runs.push(runs);
        if (rate >= 0.05) {
          runsToDetection.push(runs);
          hoursToDetection.push((firstFlaky.at - firstFailure.at) / HOUR);
        }
      }
    }
    if (want === "broken" && "since" in test.truth) {
      const since = test.truth.since;
      // Recall counts tests broken for at least a day of the history: a regression fixed sooner
      // may rightly never reach the broken monitor's threshold.
      const brokenUntil = test.truth.kind === "regression" ? test.truth.until : totals.endAt;
      if (brokenUntil - since >= 24 * HOUR) {
        brokenTruth += 1;
        if (firstBroken) brokenFound += 1;
      }
      if (firstBroken) brokenHours.push((firstBroken.at - since) / HOUR);
      if (test.truth.kind === "regression") {
        const until = test.truth.until;
        const healed = changes.find((c) => c.at >= until && c.status === "healthy");
        const markedAtFix = [...changes].reverse().find((c) => c.at < until);
        if (markedAtFix && markedAtFix.status !== "healthy") {
          // Still marked when the history ends: counted until then.
          fixedHours.push(((healed?.at ?? totals.endAt) - until) / HOUR);
        }
      }
    }
  }

  const strong = [...byRate.entries()].filter(([rate]) => rate >= 0.05);
  const strongTests = strong.reduce((sum, [, b]) => sum + b.tests, 0);
  const strongFound = strong.reduce((sum, [, b]) => sum + b.found, 0);
  const recallByRate: DetectionReport["flaky"]["recallByRate"] = {};
  for (const [rate, bucket] of [...byRate.entries()].sort((a, b) => a[0] - b[0])) {
    recallByRate[`${String(Math.round(rate * 100))}%`] = {
      tests: bucket.tests,
      found: bucket.found,
      recall: ratio(bucket.found, bucket.tests),
      runsToDetection: distribution(bucket.runs),
    };
  }
  return {
    uploads: totals.uploads,
    runs: totals.runs,
    ciRuns: totals.ciRuns,
    shapes: totals.shapes,
    truths: totals.truths,
    simulatedDays: options.workload.days,
    seconds: totals.seconds,
    flaky: {
      truePositives: flakyTp,
      falsePositives: flakyFp,
      precision: ratio(flakyTp, flakyTp + flakyFp),
      recall: ratio(strongFound, strongTests),
      recallByRate,
      runsToDetection: distribution(runsToDetection),
      hoursToDetection: distribution(hoursToDetection),
    },
    broken: {
      truePositives: brokenTp,
      falsePositives: brokenFp,
      precision: ratio(brokenTp, brokenTp + brokenFp),
      recall: ratio(brokenFound, brokenTruth),
      hoursToDetection: distribution(brokenHours),
    },
    fixedStaysMarkedHours: distribution(fixedHours),
    brokenMarkedFlaky,
    falsePositives,
  };
}
