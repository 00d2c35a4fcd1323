/**
 * The GitHub request budget's realistic scenario (issue 34; `bench:github-queue` and
 * `test/github/request-budget.test.ts`): a repository whose required checks come from a ruleset
 * (so every run consults `.mainline.yml`, `.trunk/trunk.yaml`, branch protection and rulesets),
 * an Actions check run `ci` and a third-party CI reporting the commit status `lint` (`pending`,
 * then its conclusion), and pull requests of every kind: good ones, one that breaks `ci`, a
 * conflicting pair (both change the same line), a stacked pair (the second's branch built on the
 * first's), one whose `ci` fails the first time it is tested and passes after (resubmitted with
 * `/trunk merge` when it failed, as its author would). Half are submitted through the API, half
 * with a `/trunk merge` comment. Counted: every request Mainline made to GitHub as the
 * installation from the first submission until 3 s of quiet after the last pull request ended.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import type { CreatedApp, FakeGitHub } from "./fake-github/index.js";

export type BudgetPrKind =
  "good" | "breaking" | "conflict-a" | "conflict-b" | "stack-a" | "stack-b" | "flaky";

export interface BudgetPr {
  kind: BudgetPrKind;
  /** Submitted with a `/trunk merge` comment (else through `submitPullRequest`). */
  byComment: boolean;
}

/** The ten: four good, breaking, a conflicting pair, a stacked pair, flaky. */
export const REALISTIC_PRS: readonly BudgetPr[] = [
  { kind: "good", byComment: false },
  { kind: "breaking", byComment: true },
  { kind: "conflict-a", byComment: false },
  { kind: "good", byComment: true },
  { kind: "stack-a", byComment: false },
  { kind: "stack-b", byComment: true },
  { kind: "conflict-b", byComment: false },
  { kind: "flaky", byComment: true },
  { kind: "good", byComment: false },
  { kind: "good", byComment: true },
];

export interface BudgetRepo {
  owner: string;
  name: string;
}

export interface BudgetOutcome {
  merged: number;
  failed: number;
  /** Each pull request's final state, in submission order. */
  states: { number: number; kind: BudgetPrKind; state: string }[];
  requests: number;
  notModified: number;
  perMergedPr: number | null;
  byOperation: Record<string, number>;
  /** Every request counted (`status method path`), in order. */
  lines: string[];
  /** Submissions made: through the API, by comment, and the flaky one's resubmission. */
  submissions: number;
  /** When the first submission was made (the fake's deliveries since are the scenario's). */
  startedAt: number;
  wallMs: number;
}

/** Mainline's API as the scenario uses it: the answer's JSON, or a throw on a non-200. */
export type CallApi = (operation: string, body: unknown) => Promise<unknown>;

const AUTHOR = "alice";
const STATUS_BOT = "lint-bot";

/**
 * The repository, its CI, its ruleset (required `ci` and `lint`; Mainline's App bypasses it, as
 * a merge queue's App must) and the pull requests, opened (not submitted). Returns their numbers.
 */
export async function prepareBudgetRepository(
  gh: FakeGitHub,
  app: CreatedApp,
  repo: BudgetRepo,
  prs: readonly BudgetPr[],
): Promise<number[]> {
  const full = `${repo.owner}/${repo.name}`;
  gh.createOrganization(repo.owner);
  gh.createUser(AUTHOR);
  gh.addOrgMember(repo.owner, AUTHOR, "admin");
  gh.createUser(STATUS_BOT);
  await gh.createRepository({
    owner: repo.owner,
    name: repo.name,
    files: { "README.md": "widgets\n", "shared.txt": "one\ntwo\nthree\n" },
  });
  gh.addRuleset(full, {
    name: "required checks",
    include: ["~DEFAULT_BRANCH"],
    bypassActors: [{ actorId: app.id, actorType: "Integration", bypassMode: "exempt" }],
    rules: [
      {
        type: "required_status_checks",
        parameters: {
          strict_required_status_checks_policy: false,
          required_status_checks: [{ context: "ci" }, { context: "lint" }],
        },
      },
    ],
  });
  // `flaky.txt`'s first test fails; any tree with `broken.txt` fails.
  let flakyFailed = false;
  gh.configureCi(full, [
    {
      name: "test",
      on: { push: { branches: ["trunk-merge/**"] } },
      checks: [
        {
          name: "ci",
          run: (checkout) => {
            if (existsSync(path.join(checkout.dir, "broken.txt"))) return false;
            if (existsSync(path.join(checkout.dir, "flaky.txt")) && !flakyFailed) {
              flakyFailed = true;
              return false;
            }
            return true;
          },
        },
      ],
    },
    {
      name: "lint",
      on: { push: { branches: ["trunk-merge/**"] } },
      reportAs: { statusesBy: STATUS_BOT },
      checks: [{ name: "lint", outcome: { slow: 300 } }],
    },
  ]);
  const numbers: number[] = [];
  let good = 0;
  for (const pr of prs) {
    const open = async (branch: string, files: Record<string, string>, from = "main") => {
      await gh.commit(full, { branch, from, files, by: AUTHOR });
      return gh.openPullRequest(full, { head: branch, by: AUTHOR });
    };
    switch (pr.kind) {
      case "good":
        good += 1;
        numbers.push(await open(`good-${String(good)}`, { [`good-${String(good)}.txt`]: "ok\n" }));
        break;
      case "breaking":
        numbers.push(await open("breaking", { "broken.txt": "BROKEN\n" }));
        break;
      case "conflict-a":
        numbers.push(await open("conflict-a", { "shared.txt": "one\nTWO\nthree\n" }));
        break;
      case "conflict-b":
        numbers.push(await open("conflict-b", { "shared.txt": "one\n2\nthree\n" }));
        break;
      case "stack-a":
        numbers.push(await open("stack-a", { "stack-a.txt": "a\n" }));
        break;
      case "stack-b":
        numbers.push(await open("stack-b", { "stack-b.txt": "b\n" }, "stack-a"));
        break;
      case "flaky":
        numbers.push(await open("flaky", { "flaky.txt": "flaky\n" }));
        break;
    }
  }
  await gh.settleWebhooks();
  return numbers;
}

const TERMINAL = new Set(["merged", "failed", "cancelled"]);

/**
 * Submits the pull requests in order (a comment's submission is waited for before the next, so
 * the order holds), resubmits the flaky one once when it failed, waits until every one ended and
 * GitHub heard nothing more for 3 s, and counts the requests made since the first submission.
 */
export async function runBudgetScenario(options: {
  gh: FakeGitHub;
  repo: BudgetRepo;
  prs: readonly BudgetPr[];
  numbers: readonly number[];
  call: CallApi;
  timeoutMs: number;
  /**
   * When the counting ends: once `shown` holds and GitHub heard nothing for `quietMs`
   * (`countRequests`; by default 5 s, longer than the client's spacing of notifying writes).
   */
  settled?: { shown: () => boolean; quietMs: number };
}): Promise<BudgetOutcome> {
  const { gh, repo, prs, numbers, call } = options;
  const full = `${repo.owner}/${repo.name}`;
  const queue = { repo: { host: "github.com", ...repo }, targetBranch: "main" };
  const read = async (): Promise<Map<number, string>> => {
    const answer = (await call("getSubmittedPullRequests", {
      ...queue,
      prs: numbers.map((number) => ({ number })),
    })) as { pullRequests: { prNumber: number; state: string }[] };
    return new Map(answer.pullRequests.map((p) => [p.prNumber, p.state]));
  };
  const mark = gh.requests.mark();
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  for (const [index, pr] of prs.entries()) {
    const number = numbers[index] as number;
    if (!pr.byComment) {
      await call("submitPullRequest", { ...queue, pr: { number } });
      continue;
    }
    gh.comment(full, number, "/trunk merge", { by: AUTHOR });
    while (!(await read()).has(number)) {
      if (Date.now() > deadline) throw new Error(`#${String(number)}: the comment never submitted`);
      await delay(100);
    }
  }
  const flaky = prs.findIndex((pr) => pr.kind === "flaky");
  let resubmitted = false;
  let states = new Map<number, string>();
  for (;;) {
    states = await read();
    const flakyNumber = numbers[flaky];
    if (flakyNumber !== undefined && !resubmitted && states.get(flakyNumber) === "failed") {
      resubmitted = true;
      gh.comment(full, flakyNumber, "/trunk merge", { by: AUTHOR });
      // Until the queue took it again (its latest submission is no longer the failed one).
      while ((await read()).get(flakyNumber) === "failed") {
        if (Date.now() > deadline) throw new Error("the flaky pull request was not resubmitted");
        await delay(100);
      }
      continue;
    }
    if (numbers.every((n) => TERMINAL.has(states.get(n) ?? ""))) break;
    if (Date.now() > deadline) {
      throw new Error(`the scenario did not end: ${JSON.stringify([...states])}`);
    }
    await delay(250);
  }
  const wallMs = Date.now() - started;
  const counted = await countRequests(gh, mark, options.settled?.shown, options.settled?.quietMs);
  const finalStates = prs.map((pr, index) => {
    const number = numbers[index] as number;
    return { number, kind: pr.kind, state: states.get(number) ?? "unknown" };
  });
  const merged = finalStates.filter((s) => s.state === "merged").length;
  return {
    merged,
    failed: finalStates.length - merged,
    states: finalStates,
    ...counted,
    perMergedPr: merged > 0 ? Math.round((counted.requests / merged) * 10) / 10 : null,
    submissions: prs.length + (resubmitted ? 1 : 0),
    startedAt: started,
    wallMs,
  };
}

/**
 * Every request Mainline made to GitHub since `mark`, counted once GitHub has heard nothing more
 * for `quietMs` and `shown` holds (the last comment and check updates follow the last merge, and
 * may wait for GitHub's budget of writes a minute; two minutes at most): `304`s
 * (free of rate limit) apart, by operation, and one line each.
 */
export async function countRequests(
  gh: FakeGitHub,
  mark: number,
  /** What must have been sent too (a pause of GitHub's write budget is no end either). */
  shown: () => boolean = () => true,
  /** Longer than the client's spacing of notifying writes (3 s): a pause between two is no end. */
  quietMs = 5000,
): Promise<Pick<BudgetOutcome, "requests" | "notModified" | "byOperation" | "lines">> {
  const quietSince = Date.now();
  let heard = -1;
  while ((gh.requests.entries.length !== heard || !shown()) && Date.now() - quietSince < 120_000) {
    heard = gh.requests.entries.length;
    await gh.settleWebhooks();
    await delay(quietMs);
  }
  const made = gh.requests.entries.filter(
    (entry) => entry.seq >= mark && entry.installationId !== null,
  );
  const notModified = made.filter((entry) => entry.status === 304).length;
  const byOperation: Record<string, number> = {};
  for (const entry of made) {
    if (entry.status === 304) continue;
    byOperation[entry.operationId] = (byOperation[entry.operationId] ?? 0) + 1;
  }
  return {
    requests: made.length - notModified,
    notModified,
    byOperation,
    lines: made.map((e) => `${String(e.status)} ${e.method} ${e.path}`),
  };
}
