/**
 * The merge queue on a realistic project (issue 14), with real git and real `mainline serve`
 * processes: a small shop in several modules, tested by node's test runner writing JUnit (each
 * test file takes a moment to set up, so the suite takes a few seconds), linted by a script; a
 * test that is known flaky (and fails now and then); 25 pull requests by four people, some in
 * several commits, among them stacks (each PR built on the branch of the one before, one editing
 * its parent's lines), PRs that break a test or the lint, and PRs that edit the same line as one
 * submitted earlier. The same workload runs in serial mode and in batching mode (concurrency 2,
 * batches of up to 3, bisection 4, pending failure depth 1, optimistic merging), and in both:
 *
 * - every good PR merges, in submission order;
 * - every breaking PR fails naming its failing check;
 * - each conflicting PR fails naming the earlier PR it conflicts with;
 * - every landed tree is a tree that was tested and passed;
 * - the commits keep their authors (squash: the PR's author, the others as co-authors);
 * - no test is classified flaky because a PR broke it;
 *
 * and batching merges the same PRs with fewer CI runs per merged PR, and in less wall time, than
 * serial. A second workload, one PR in five breaking a test (batching), shows the localization
 * of a failed batch end to end: its prefixes run, each culprit is evicted naming the passing and
 * the failing run, and the localization runs' test check was given the batch run's failed test
 * (`MAINLINE_FAILED_TESTS_FILE`, docs/fail-first.md), ran it first and stopped at its failure.
 *
 * It prints the CI runs per merged PR and the wall time of each mode (docs/benchmarks.md). What
 * it checks does not depend on the database, so CI may run it on one. */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { post } from "../cli/support.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import type { LocalProject } from "../helpers/local-project.js";
import {
  LOCAL,
  QUEUE,
  allConcluded,
  createRepositoryAndQueue,
  ok,
  stateOf,
  submit,
  timeline,
  type Call,
} from "../helpers/local-queue.js";
import { startServer, stopAllProcesses, waitFor } from "../helpers/process.js";
import { bundle } from "../helpers/uploads.js";

const exec = promisify(execFile);

interface Person {
  name: string;
  email: string;
  login: string;
}
const ALICE: Person = { name: "Alice Liddell", email: "alice@example.com", login: "alice" };
const BOB: Person = { name: "Bob Marley", email: "bob@example.com", login: "bob" };
const CAROL: Person = { name: "Carol Danvers", email: "carol@example.com", login: "carol" };
const DAN: Person = { name: "Dan Brown", email: "dan@example.com", login: "dan" };

type Files = Record<string, string>;
interface Commit {
  files: Files | ((dir: string) => Promise<Files>);
  author?: Person;
  message?: string;
}
interface PrSpec {
  k: number;
  title: string;
  author: Person;
  commits: Commit[];
  /** Built on the branch of this earlier PR (a stack). */
  on?: number;
  /** Breaks this check. */
  breaks?: "test" | "lint";
  /** Edits the same line as this earlier PR. */
  conflictsWith?: number;
}

// ---- the project -------------------------------------------------------------------------------

const FLAKY_TEST = "pays through the sandbox";
const BROKEN_BY_PRS = [
  "every item has a name and a price that is not negative",
  "applies a discount",
];

/**
 * What each test file spends setting up before its tests (a fixture, a server started): the suite
 * takes a moment, as suites do, and running only the tests that failed takes much less.
 */
const SETUP_MS = 250;
const SETUP = [
  'const { before } = require("node:test");',
  `before(() => new Promise((resolve) => setTimeout(resolve, ${String(SETUP_MS)})));`,
];

/**
 * The check run by `test` (docs/fail-first.md's recipe for node's test runner): node's test
 * runner, one file at a time, writing JUnit. In a localization run the tests that failed in the
 * batch run go first, and their failure ends the check; the file is also copied to `traces`,
 * where the test reads what the check was given. The shell expands the files' glob (since Node 22
 * a directory argument is no longer searched for tests).
 */
function testScript(traces: string): string {
  const node = "node --test --test-concurrency=1 --test-reporter=junit";
  return String.raw`#!/bin/sh
mkdir -p reports
failed="${"$"}{MAINLINE_FAILED_TESTS_FILE:-}"
if [ -n "$failed" ]; then cp "$failed" "${traces}/$MAINLINE_RUN_ID.tsv"; fi
if [ -s "$failed" ]; then
  # The files that are still here, and the names as one pattern (regex characters escaped).
  files=$(cut -f3 "$failed" | sort -u | while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done)
  names=$(cut -f5 "$failed" | sed 's/[][\.*^$()+?{}|]/\\&/g' | paste -sd '|' -)
  if [ -n "$files" ]; then
    echo "fail first: $(echo "$files" | wc -l) file(s), tests /$names/"
    ${node} --test-reporter-destination=reports/first.xml --test-name-pattern="$names" $files || exit 1
    rm -f reports/first.xml
  fi
fi
echo "the whole suite"
exec ${node} --test-reporter-destination=reports/junit.xml test/*.test.js
`;
}

function projectFiles(counterDir: string, traces: string): Files {
  const item = (name: string, price: number) => `${JSON.stringify({ name, price })}\n`;
  return {
    "scripts/test.sh": testScript(traces),
    ".mainline.yml": [
      "ci:",
      "  checks:",
      "    - name: test",
      "      run: sh scripts/test.sh",
      '      junit_paths: ["reports/*.xml"]',
      "      timeout_minutes: 3",
      "    - name: lint",
      "      run: node scripts/lint.js",
      "      timeout_minutes: 1",
      "",
    ].join("\n"),
    ".gitignore": "reports/\n",
    "src/price.js": [
      '"use strict";',
      "exports.TAX_PERCENT = 20;",
      "",
      "exports.total = (items) => items.reduce((sum, item) => sum + item.price * item.qty, 0);",
      "",
      "exports.discount = (cents, percent) => Math.round((cents * (100 - percent)) / 100);",
      "",
    ].join("\n"),
    "src/format.js": [
      '"use strict";',
      'const CURRENCY = "EUR";',
      "exports.money = (cents) => `${(cents / 100).toFixed(2)} ${CURRENCY}`;",
      "",
    ].join("\n"),
    "src/stock.js": [
      '"use strict";',
      "exports.available = (stock, sku) => (stock[sku] ?? 0) > 0;",
      "",
    ].join("\n"),
    "src/cart.js": [
      '"use strict";',
      "exports.add = (cart, sku) => ({ ...cart, [sku]: (cart[sku] ?? 0) + 1 });",
      "",
    ].join("\n"),
    "catalog/apple.json": item("apple", 50),
    "catalog/bread.json": item("bread", 250),
    "scripts/lint.js": [
      'const fs = require("node:fs");',
      "let bad = 0;",
      'for (const file of fs.readdirSync("src")) {',
      '  if (fs.readFileSync(`src/${file}`, "utf8").includes("console.log")) {',
      "    console.error(`src/${file}: console.log left in`);",
      "    bad += 1;",
      "  }",
      "}",
      "process.exit(bad === 0 ? 0 : 1);",
      "",
    ].join("\n"),
    "test/price.test.js": [
      'const { describe, test } = require("node:test");',
      ...SETUP,
      'const assert = require("node:assert");',
      'const price = require("../src/price.js");',
      'describe("price", () => {',
      '  test("totals the items", () => {',
      "    assert.strictEqual(price.total([{ price: 250, qty: 2 }]), 500);",
      "  });",
      `  test(${JSON.stringify(BROKEN_BY_PRS[1])}, () => {`,
      "    assert.strictEqual(price.discount(1000, 10), 900);",
      "  });",
      "});",
      "",
    ].join("\n"),
    "test/catalog.test.js": [
      'const { describe, test } = require("node:test");',
      ...SETUP,
      'const assert = require("node:assert");',
      'const fs = require("node:fs");',
      'const path = require("node:path");',
      'describe("catalog", () => {',
      `  test(${JSON.stringify(BROKEN_BY_PRS[0])}, () => {`,
      '    const dir = path.join(__dirname, "..", "catalog");',
      "    for (const file of fs.readdirSync(dir)) {",
      '      const item = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"));',
      "      assert.ok(item.name, `${file} has no name`);",
      "      assert.ok(item.price >= 0, `${file} has a negative price`);",
      "    }",
      "  });",
      "});",
      "",
    ].join("\n"),
    "test/format.test.js": [
      'const { describe, test } = require("node:test");',
      ...SETUP,
      'const assert = require("node:assert");',
      'const format = require("../src/format.js");',
      'describe("format", () => {',
      '  test("shows cents as money", () => {',
      "    assert.match(format.money(1234), /^12\\.34 [A-Z]{3}$/);",
      "  });",
      "});",
      "",
    ].join("\n"),
    // Flaky: the 5th and the 14th time it runs anywhere, the sandbox "times out".
    "test/checkout.test.js": [
      'const { describe, test } = require("node:test");',
      ...SETUP,
      'const assert = require("node:assert");',
      'const fs = require("node:fs");',
      'const path = require("node:path");',
      `const COUNTER = ${JSON.stringify(counterDir)};`,
      "const FLAKY_AT = [4, 13];",
      'describe("checkout", () => {',
      `  test(${JSON.stringify(FLAKY_TEST)}, () => {`,
      "    const forced = process.env.SHOP_SANDBOX;",
      "    if (forced !== undefined) {",
      '      assert.strictEqual(forced, "up", "the payment sandbox timed out");',
      "      return;",
      "    }",
      "    let n = 0;",
      "    for (;;) {",
      "      try {",
      "        fs.mkdirSync(path.join(COUNTER, String(n)));",
      "        break;",
      "      } catch {",
      "        n += 1;",
      "      }",
      "    }",
      '    assert.ok(!FLAKY_AT.includes(n), "the payment sandbox timed out");',
      "  });",
      "});",
      "",
    ].join("\n"),
  };
}

const item = (k: number, price = k * 10): Files => ({
  [`catalog/item-${String(k)}.json`]: `${JSON.stringify({ name: `item ${String(k)}`, price })}\n`,
});
/** Replaces one line of a file as it is in the clone now. */
const edit =
  (file: string, from: string, to: string) =>
  async (dir: string): Promise<Files> => {
    const text = await readFile(path.join(dir, file), "utf8");
    if (!text.includes(from)) throw new Error(`${file} has no ${from}`);
    return { [file]: text.replace(from, to) };
  };

const RESERVE = [
  "exports.reserve = (stock, sku) => {",
  "  if (!exports.available(stock, sku)) return false;",
  "  stock[sku] -= 1;",
  "  return true;",
  "};",
  "",
].join("\n");

const PRS: PrSpec[] = [
  { k: 1, title: "Sell item 1", author: ALICE, commits: [{ files: item(1) }] },
  {
    k: 2,
    title: "Sell item 2",
    author: BOB,
    commits: [
      { files: item(2), message: "Add item 2" },
      { files: item(2, 25), author: CAROL, message: "Price item 2 right" },
    ],
  },
  { k: 3, title: "Sell item 3", author: CAROL, commits: [{ files: item(3) }] },
  {
    k: 4,
    title: "Sell item 4 at a loss",
    author: DAN,
    breaks: "test",
    commits: [{ files: item(4, -5) }],
  },
  {
    k: 5,
    title: "Show prices in pounds",
    author: ALICE,
    commits: [{ files: edit("src/format.js", '"EUR"', '"GBP"') }],
  },
  {
    k: 6,
    title: "Show prices in dollars",
    author: BOB,
    conflictsWith: 5,
    commits: [{ files: edit("src/format.js", '"EUR"', '"USD"') }],
  },
  { k: 7, title: "Sell item 7", author: DAN, commits: [{ files: item(7) }] },
  {
    k: 8,
    title: "Reserve stock",
    author: ALICE,
    commits: [{ files: edit("src/stock.js", "> 0;\n", `> 0;\n${RESERVE}`) }],
  },
  {
    k: 9,
    title: "Test reserving stock",
    author: ALICE,
    on: 8,
    commits: [
      {
        files: {
          "test/stock.test.js": [
            'const { describe, test } = require("node:test");',
            'const assert = require("node:assert");',
            'const stock = require("../src/stock.js");',
            'describe("stock", () => {',
            '  test("reserves what is there", () => {',
            "    const s = { a: 1 };",
            '    assert.strictEqual(stock.reserve(s, "a"), true);',
            '    assert.strictEqual(stock.reserve(s, "a"), false);',
            "  });",
            "});",
            "",
          ].join("\n"),
        },
      },
    ],
  },
  {
    k: 10,
    title: "Keep stock counts exact",
    author: CAROL,
    on: 9,
    // Edits a line its grandparent #8 added.
    commits: [{ files: edit("src/stock.js", "stock[sku] -= 1;", "stock[sku] = stock[sku] - 1;") }],
  },
  {
    k: 11,
    title: "Debug the cart",
    author: BOB,
    breaks: "lint",
    commits: [{ files: { "src/debug.js": 'console.log("cart");\n' } }],
  },
  { k: 12, title: "Sell item 12", author: CAROL, commits: [{ files: item(12) }] },
  {
    k: 13,
    title: "Sell item 13",
    author: DAN,
    commits: [{ files: item(13, 1) }, { files: item(13), message: "Price item 13" }],
  },
  { k: 14, title: "Sell item 14", author: ALICE, commits: [{ files: item(14) }] },
  {
    k: 15,
    title: "Lower the tax",
    author: BOB,
    commits: [{ files: edit("src/price.js", "TAX_PERCENT = 20", "TAX_PERCENT = 19") }],
  },
  { k: 16, title: "Sell item 16", author: CAROL, commits: [{ files: item(16) }] },
  {
    k: 17,
    title: "Simplify discounts",
    author: DAN,
    breaks: "test",
    commits: [
      { files: edit("src/price.js", "(cents * (100 - percent)) / 100", "(cents * percent) / 100") },
    ],
  },
  { k: 18, title: "Sell item 18", author: ALICE, commits: [{ files: item(18) }] },
  {
    k: 19,
    title: "Raise the tax",
    author: CAROL,
    conflictsWith: 15,
    commits: [{ files: edit("src/price.js", "TAX_PERCENT = 20", "TAX_PERCENT = 21") }],
  },
  {
    k: 20,
    title: "Count the cart",
    author: BOB,
    commits: [
      {
        files: edit(
          "src/cart.js",
          "+ 1 });\n",
          "+ 1 });\nexports.count = (cart) => Object.values(cart).reduce((a, b) => a + b, 0);\n",
        ),
      },
    ],
  },
  {
    k: 21,
    title: "Test counting the cart",
    author: DAN,
    on: 20,
    commits: [
      {
        files: {
          "test/cart.test.js": [
            'const { describe, test } = require("node:test");',
            'const assert = require("node:assert");',
            'const cart = require("../src/cart.js");',
            'describe("cart", () => {',
            '  test("counts every unit", () => {',
            '    assert.strictEqual(cart.count(cart.add(cart.add({}, "a"), "a")), 2);',
            "  });",
            "});",
            "",
          ].join("\n"),
        },
      },
    ],
  },
  { k: 22, title: "Sell item 22", author: ALICE, commits: [{ files: item(22) }] },
  { k: 23, title: "Sell item 23", author: BOB, commits: [{ files: item(23) }] },
  { k: 24, title: "Sell item 24", author: CAROL, commits: [{ files: item(24) }] },
  { k: 25, title: "Sell item 25", author: DAN, commits: [{ files: item(25) }] },
];

const GOOD = PRS.filter((pr) => !pr.breaks && pr.conflictsWith === undefined);

/** The tests the bad PRs of the second workload break, one each. */
const BROKEN = {
  catalog: BROKEN_BY_PRS[0] ?? "",
  discount: BROKEN_BY_PRS[1] ?? "",
  money: "shows cents as money",
  total: "totals the items",
};

/**
 * The second workload: 20 pull requests, one in five bad, each breaking a test of its own. None
 * is first in the batch it is tested in (batches of 3 form again behind an evicted culprit), so
 * that a shorter prefix passes; #8 is in the middle of its batch, so that the prefix ending in it
 * fails (on the test it runs first); the last batch is whole (it does not wait to fill).
 */
const ONE_IN_FIVE: (PrSpec & { failingTest?: string })[] = [
  ...[1, 2].map((k) => sell(k)),
  {
    k: 3,
    title: "Sell item 3 at a loss",
    author: CAROL,
    breaks: "test",
    failingTest: BROKEN.catalog,
    commits: [{ files: item(3, -5) }],
  },
  ...[4, 5, 6, 7].map((k) => sell(k)),
  {
    k: 8,
    title: "Discount by the percentage itself",
    author: DAN,
    breaks: "test",
    failingTest: BROKEN.discount,
    commits: [
      { files: edit("src/price.js", "(cents * (100 - percent)) / 100", "(cents * percent) / 100") },
    ],
  },
  ...[9, 10].map((k) => sell(k)),
  {
    k: 11,
    title: "Show whole euros",
    author: ALICE,
    breaks: "test",
    failingTest: BROKEN.money,
    commits: [{ files: edit("src/format.js", "toFixed(2)", "toFixed(0)") }],
  },
  ...[12, 13].map((k) => sell(k)),
  {
    k: 14,
    title: "Count each item once",
    author: BOB,
    breaks: "test",
    failingTest: BROKEN.total,
    commits: [{ files: edit("src/price.js", "item.price * item.qty", "item.price") }],
  },
  ...[15, 16, 17, 18, 19, 20].map((k) => sell(k)),
];

function sell(k: number): PrSpec {
  const people = [ALICE, BOB, CAROL, DAN];
  return {
    k,
    title: `Sell item ${String(k)}`,
    author: people[k % people.length] ?? ALICE,
    commits: [{ files: item(k) }],
  };
}

// ---- plumbing --------------------------------------------------------------------------------

async function gitIn(dir: string, args: string[], author?: Person): Promise<string> {
  const who = author ?? { name: "Dev", email: "dev@example.com" };
  const { stdout } = await exec("git", args, {
    cwd: dir,
    maxBuffer: 64 * 1024 * 1024,
    env: {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: who.name,
      GIT_AUTHOR_EMAIL: who.email,
      GIT_COMMITTER_NAME: who.name,
      GIT_COMMITTER_EMAIL: who.email,
    },
  });
  return stdout.trim();
}

async function writeFiles(dir: string, files: Files): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
}

/** Pushes the PR's branch (from main, or from its parent's branch) and opens it; its number. */
async function openPr(call: Call, project: LocalProject, spec: PrSpec): Promise<number> {
  const branch = `pr-${String(spec.k)}`;
  const from = spec.on === undefined ? "main" : `pr-${String(spec.on)}`;
  await gitIn(project.dir, ["checkout", "--quiet", "-B", branch, from]);
  for (const commit of spec.commits) {
    const files =
      typeof commit.files === "function" ? await commit.files(project.dir) : commit.files;
    await writeFiles(project.dir, files);
    await gitIn(project.dir, ["add", "-A"]);
    await gitIn(
      project.dir,
      ["commit", "--quiet", "-m", commit.message ?? spec.title],
      commit.author ?? spec.author,
    );
  }
  await gitIn(project.dir, ["push", "--quiet", project.remote, branch]);
  await gitIn(project.dir, ["checkout", "--quiet", "main"]);
  const { number } = await ok<{ number: number }>(call, "local/openPullRequest", {
    repo: LOCAL,
    head: branch,
    base: "main",
    title: spec.title,
    author: spec.author.login,
  });
  return number;
}

/** Makes the flaky test known flaky: it failed and passed on one commit (pass-on-retry). */
async function makeFlakyTestKnown(
  url: string,
  token: string,
  project: LocalProject,
  database: TestDatabase,
): Promise<void> {
  const commit = await gitIn(project.dir, ["rev-parse", "HEAD"]);
  const reports = await mkdtemp(path.join(tmpdir(), "mainline-shop-reports-"));
  for (const sandbox of ["down", "up"]) {
    const destination = path.join(reports, `${sandbox}.xml`);
    const args = ["--test", "--test-reporter=junit", `--test-reporter-destination=${destination}`];
    await exec(process.execPath, [...args, "test/*.test.js"], {
      cwd: project.dir,
      env: { ...process.env, SHOP_SANDBOX: sandbox },
    }).catch(() => undefined);
    // As an uploader sends it: where the checkout was (node's reporter writes absolute paths).
    const body = await bundle({
      repo: LOCAL,
      commit,
      branch: "main",
      repoRoot: project.dir,
      files: [await readFile(destination, "utf8")],
    });
    const created = await post(
      url,
      "metrics/createBundleUpload",
      { repo: LOCAL, orgUrlSlug: "acme", clientVersion: "0.7.8", remoteUrls: [] },
      token,
    );
    const target = (created.body as { url: string }).url;
    const put = await fetch(target, { method: "PUT", body: new Uint8Array(body) });
    expect(put.status).toBe(200);
  }
  await waitFor(async () => (await statusOf(database, FLAKY_TEST)) === "flaky", "a known flaky", {
    timeoutMs: 30_000,
    intervalMs: 200,
  });
}

async function statusOf(database: TestDatabase, name: string): Promise<string | undefined> {
  const row = await database.handle.db
    .selectFrom("testCases")
    .select("status")
    .where("name", "=", name)
    .executeTakeFirst();
  return row?.status;
}

// ---- the test ----------------------------------------------------------------------------------

const SERIAL = { concurrency: 1, batch: false };
const BATCHING = {
  concurrency: 2,
  batch: true,
  batchingMinSize: 3,
  batchingMaxWaitTimeMinutes: 1,
  bisectionConcurrency: 4,
  pendingFailureDepth: 1,
  canOptimisticallyMerge: true,
};
const MODES = [
  { mode: "serial", settings: SERIAL },
  { mode: "batching", settings: BATCHING },
];

let database: TestDatabase;
let token: string;
beforeEach(async () => {
  database = await createTestDatabase();
  token = randomBytes(32).toString("hex");
});
afterEach(async () => {
  await stopAllProcesses();
  await database.cleanup();
});
afterAll(stopAllProcesses);

interface CiRunRow {
  runId: string;
  status: string;
  flakyOnly: boolean;
  createdAt: number;
  finishedAt: number | null;
  request: { prNumbers: number[]; sha: string; failFirst?: { fromRunId: string } };
}

interface Queued {
  call: Call;
  project: LocalProject;
  numberOf: (k: number) => number;
  startSha: string;
  /** Where the test check copied the failed-tests file it was given, as `<runId>.tsv`. */
  traces: string;
  wallMs: number;
  ciRuns: CiRunRow[];
  merged: number;
  /** What landed on main, oldest first: the squash commits and their subjects. */
  landed: string[];
  subjects: string[];
}

/**
 * Starts a server, pushes the shop, opens `prs` and submits them all to a paused queue with
 * `settings`, then runs it until every PR concluded; prints what happened.
 */
async function runQueue(
  label: string,
  settings: Record<string, unknown>,
  prs: PrSpec[],
  options: { flaky: boolean },
): Promise<Queued> {
  const server = await startServer(
    {
      ...database.env,
      MAINLINE_BOOTSTRAP_ORG: "acme",
      MAINLINE_BOOTSTRAP_TOKEN: token,
      MAINLINE_CI_PARALLELISM: "4",
      // A batch that cannot fill (the last PR, alone) starts after seconds, not the queue's
      // minute: what is measured is the runs, not that wait.
      MAINLINE_BATCH_WAIT_LIMIT_SECONDS: "5",
      // Without the flaky test: the payment sandbox always answers.
      ...(options.flaky ? {} : { SHOP_SANDBOX: "up" }),
    },
    { timeoutMs: 60_000 },
  );
  const call: Call = (operation, body) => post(server.url, operation, body, token);
  const counter = await mkdtemp(path.join(tmpdir(), "mainline-shop-flaky-"));
  const traces = await mkdtemp(path.join(tmpdir(), "mainline-shop-traces-"));
  const project = await createRepositoryAndQueue(
    call,
    { testingTimeoutMinutes: 0, ...settings },
    projectFiles(counter, traces),
  );
  const startSha = await gitIn(project.dir, ["rev-parse", "HEAD"]);
  if (options.flaky) await makeFlakyTestKnown(server.url, token, project, database);

  const numbers = new Map<number, number>();
  for (const spec of prs) numbers.set(spec.k, await openPr(call, project, spec));
  const numberOf = (k: number) => numbers.get(k) ?? -1;
  await ok(call, "updateQueue", { ...QUEUE, state: "paused" });
  for (const spec of prs) await submit(call, numberOf(spec.k));
  const started = Date.now();
  await ok(call, "updateQueue", { ...QUEUE, state: "running" });
  await waitFor(() => allConcluded(call, numbers.values()), "every pull request to conclude", {
    timeoutMs: 540_000,
    intervalMs: 500,
  });
  const wallMs = Date.now() - started;

  // What happened, first, so that a failure below can be read against it.
  const outcome: string[] = [];
  for (const spec of prs) {
    const last = (await timeline(call, numberOf(spec.k))).at(-1);
    outcome.push(
      `#${String(numberOf(spec.k))} ${spec.title}: ${last?.toState ?? "?"} ${last?.reason ?? ""} ${last?.detail ?? ""}`,
    );
  }
  const ciRuns = (
    await database.handle.db
      .selectFrom("ciRuns")
      .select(["runId", "status", "request", "flakyOnly", "createdAt", "finishedAt"])
      .orderBy("createdAt")
      .execute()
  ).map((r) => ({
    ...r,
    flakyOnly: Boolean(r.flakyOnly),
    request: JSON.parse(r.request) as CiRunRow["request"],
  }));
  let merged = 0;
  for (const number of numbers.values()) {
    if ((await stateOf(call, number)) === "merged") merged += 1;
  }
  const seconds = (ms: number) => (ms / 1000).toFixed(1);
  console.log(
    `[${label}] ${String(ciRuns.length)} CI runs for ${String(merged)} merged PRs ` +
      `(${(ciRuns.length / merged).toFixed(2)} per merged PR), wall time ${seconds(wallMs)} s\n` +
      outcome.join("\n") +
      "\n" +
      ciRuns
        .map((r) => {
          const took = r.finishedAt === null ? "?" : seconds(r.finishedAt - r.createdAt);
          const first = r.request.failFirst
            ? ` (fail first: run ${r.request.failFirst.fromRunId})`
            : "";
          return `${seconds(r.createdAt - started)} s +${took} s run ${r.runId} [${r.request.prNumbers.join(",")}] ${r.status}${r.flakyOnly ? " (flaky only)" : ""}${first}`;
        })
        .join("\n"),
  );
  const landed = (
    await gitIn(project.remote, ["rev-list", "--first-parent", "--reverse", `${startSha}..main`])
  )
    .split("\n")
    .filter(Boolean);
  const subjects = await Promise.all(
    landed.map((sha) => gitIn(project.remote, ["show", "-s", "--format=%s", sha])),
  );
  return {
    call,
    project,
    numberOf,
    startSha,
    traces,
    wallMs,
    ciRuns,
    merged,
    landed,
    subjects,
  };
}

/** Every landed tree is the tree of a test branch that passed, up to that PR. */
async function expectOnlyTestedTreesLanded(queued: Queued): Promise<void> {
  const bare = queued.project.remote;
  const tested = new Set<string>();
  for (const run of queued.ciRuns.filter((r) => r.status === "passed")) {
    const trees = await gitIn(bare, [
      "log",
      "--first-parent",
      "--format=%T",
      run.request.sha,
      `^${queued.startSha}`,
    ]);
    for (const tree of trees.split("\n")) tested.add(tree);
  }
  for (const [index, sha] of queued.landed.entries()) {
    const tree = await gitIn(bare, ["rev-parse", `${sha}^{tree}`]);
    const what = queued.subjects[index] ?? sha;
    expect.soft(tested.has(tree), `the tree of ${what} was tested`).toBe(true);
  }
}

/** Waits until test health has processed every upload. */
async function uploadsProcessed(): Promise<void> {
  await waitFor(
    async () => {
      const pending = await database.handle.db
        .selectFrom("uploads")
        .select("id")
        .where("state", "!=", "processed")
        .execute();
      return pending.length === 0;
    },
    "every upload to be processed",
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

/** Serial against batching on the same workload, for the comparison at the end. */
const measured = new Map<
  string,
  { runs: number; merged: number; wallMs: number; subjects: string[] }
>();

describe.each(MODES)("the merge queue on a realistic project ($mode)", ({ mode, settings }) => {
  it("merges every good PR in order and fails exactly the breaking and the conflicting ones, saying why", async () => {
    const queued = await runQueue(mode, settings, PRS, { flaky: true });
    const { call, numberOf, ciRuns, landed, subjects } = queued;
    measured.set(mode, {
      runs: ciRuns.length,
      merged: queued.merged,
      wallMs: queued.wallMs,
      subjects,
    });

    // Every good PR merged; every breaking and conflicting one failed, saying why.
    for (const spec of PRS) {
      const state = await stateOf(call, numberOf(spec.k));
      const expected = spec.breaks || spec.conflictsWith !== undefined ? "failed" : "merged";
      expect.soft(state, `#${String(spec.k)} ${spec.title}`).toBe(expected);
      const last = (await timeline(call, numberOf(spec.k))).at(-1);
      if (spec.breaks) {
        expect.soft(last?.reason, spec.title).toBe("failing_required_check");
        expect.soft(last?.detail ?? "", spec.title).toMatch(new RegExp(`\\b${spec.breaks}\\b`));
      }
      if (spec.conflictsWith !== undefined) {
        expect.soft(last?.reason, spec.title).toBe("merge_conflict");
        expect
          .soft(last?.detail ?? "", spec.title)
          .toContain(`#${String(numberOf(spec.conflictsWith))}`);
      }
    }

    // In submission order, one squash commit each.
    expect.soft(subjects).toEqual(GOOD.map((s) => `${s.title} (#${String(numberOf(s.k))})`));
    await expectOnlyTestedTreesLanded(queued);

    // Authors kept: the PR's author, the other authors of its commits as co-authors.
    const bare = queued.project.remote;
    for (const [index, sha] of landed.entries()) {
      const spec = GOOD.find((s) => subjects[index] === `${s.title} (#${String(numberOf(s.k))})`);
      if (!spec) continue;
      const [author, committer] = (
        await gitIn(bare, ["show", "-s", "--format=%ae%n%ce", sha])
      ).split("\n");
      expect.soft(author, spec.title).toBe(spec.author.email);
      expect.soft(committer, spec.title).toBe("mainline@localhost");
      const others = spec.commits
        .map((c) => c.author ?? spec.author)
        .filter((a) => a !== spec.author);
      const body = await gitIn(bare, ["show", "-s", "--format=%B", sha]);
      for (const other of others) {
        expect.soft(body, spec.title).toContain(`Co-authored-by: ${other.name} <${other.email}>`);
      }
    }

    // Every run a timeline names can be looked up: the queue's details, the CI's list and logs
    // (a run that ended on a conflict says that it ran no checks; one cancelled before its check
    // started, as when the queue restarts it, says so).
    const listed = await ok<{ runs: { runId: string; status: string; error: unknown }[] }>(
      call,
      "local/listCiRuns",
      { ...QUEUE, take: 100 },
    );
    const listedIds = new Set(listed.runs.map((r) => r.runId));
    for (const spec of PRS) {
      const history = await ok<{ timeline: { testRunId: string | null; reason: string }[] }>(
        call,
        "getSubmittedPullRequest",
        { ...QUEUE, pr: { number: numberOf(spec.k) }, includeTimeline: true },
      );
      for (const item of history.timeline) {
        if (item.testRunId === null) continue;
        const id = item.testRunId;
        if (listed.runs.length < 100) {
          expect.soft(listedIds.has(id), `run ${id} of #${String(spec.k)} is listed`).toBe(true);
        }
        const details = await call("getMergeQueueTestingDetails", { ...QUEUE, testRunId: id });
        expect.soft(details.status, `details of run ${id}`).toBe(200);
        const log = await call("local/getCiLog", { ...QUEUE, runId: id, check: "test" });
        if (log.status !== 200) {
          expect
            .soft(JSON.stringify(log.body), `the log of run ${id}`)
            .toMatch(/ran no checks|never started \(the run ended: cancelled\)/);
        }
      }
    }

    // Test health: every upload processed; the tests PRs broke were never flaky nor quarantined.
    await uploadsProcessed();
    for (const name of BROKEN_BY_PRS) {
      const test = await database.handle.db
        .selectFrom("testCases")
        .select(["key", "status", "id"])
        .where("name", "=", name)
        .executeTakeFirstOrThrow();
      expect.soft(test.status, name).toBe("healthy");
      const history = await database.handle.db
        .selectFrom("testStatusHistory")
        .selectAll()
        .where("testKey", "=", test.key)
        .execute();
      expect
        .soft(
          history.map((h) => h.status),
          name,
        )
        .not.toContain("flaky");
    }
    expect.soft(await statusOf(database, FLAKY_TEST)).toBe("flaky");
  }, 600_000);
});

describe("batching against serial on the realistic project", () => {
  it("merges the same PRs with fewer CI runs per merged PR and in less wall time", () => {
    const serial = measured.get("serial");
    const batching = measured.get("batching");
    if (serial === undefined || batching === undefined) {
      throw new Error("both modes must have run (run the whole file)");
    }
    expect(batching.subjects).toEqual(serial.subjects);
    expect(batching.runs / batching.merged).toBeLessThan(serial.runs / serial.merged);
    expect(batching.wallMs).toBeLessThan(serial.wallMs);
  });
});

describe("the merge queue on a realistic project, one pull request in five bad (batching)", () => {
  it("localizes each failed batch, runs its failed tests first and evicts only the culprits, saying which runs showed it", async () => {
    const queued = await runQueue("one in five bad", BATCHING, ONE_IN_FIVE, { flaky: false });
    const { call, numberOf, ciRuns, traces } = queued;
    const byId = new Map(ciRuns.map((run) => [run.runId, run]));
    const good = ONE_IN_FIVE.filter((spec) => !spec.breaks);
    expect.soft(queued.subjects).toEqual(good.map((s) => `${s.title} (#${String(numberOf(s.k))})`));
    await expectOnlyTestedTreesLanded(queued);
    await uploadsProcessed();

    const failedFirst: number[] = [];
    /** The batch run that first failed with `number` in it. */
    const batchRunOf = (number: number) =>
      ciRuns.find(
        (run) =>
          run.status === "failed" &&
          run.request.failFirst === undefined &&
          run.request.prNumbers.includes(number),
      )?.runId;
    for (const spec of ONE_IN_FIVE.filter((s) => s.breaks)) {
      const number = numberOf(spec.k);
      const what = `#${String(number)} ${spec.title}`;
      const last = (await timeline(call, number)).at(-1);
      expect.soft(last?.toState, what).toBe("failed");
      expect.soft(last?.reason, what).toBe("failing_required_check");
      // "localization: run 12 (#1, #2) passed; run 13 (#1, #2, #3) failed test"
      const detail = last?.detail ?? "";
      const named =
        /^localization: run (\S+) \(([^)]*)\) passed; run (\S+) \(([^)]*)\) failed test$/.exec(
          detail,
        );
      expect.soft(named, `${what}: ${detail}`).not.toBeNull();
      if (named === null) continue;
      const [, passedId = "", passedPrs = "", failedId = "", failedPrs = ""] = named;
      expect.soft(byId.get(passedId)?.status, `${what}: run ${passedId}`).toBe("passed");
      expect.soft(byId.get(failedId)?.status, `${what}: run ${failedId}`).toBe("failed");
      // The shortest failing prefix ends in the culprit, the passing one just before it (what
      // had merged ahead of it since is not on either's list). A culprit whose only failure
      // was the batch run's was tested once more, on what passed: then it is alone on its run.
      const failedList = failedPrs.split(", ");
      expect.soft(failedList.at(-1), what).toBe(`#${String(number)}`);
      expect.soft(failedId, what).not.toBe(batchRunOf(number));
      const passedLast = passedPrs.split(", ").at(-1);
      if (failedList.length > 1) expect.soft(passedLast, what).toBe(failedList.at(-2));
      else expect.soft(Number(passedLast?.slice(1)), what).toBeLessThan(number);

      // The runs that localized it were given the failed test of the batch run, from its JUnit.
      const test = await database.handle.db
        .selectFrom("testCases")
        .select(["id", "file", "classname"])
        .where("name", "=", spec.failingTest ?? "")
        .executeTakeFirstOrThrow();
      const localizing = ciRuns.filter((run) => {
        const from = run.request.failFirst ? byId.get(run.request.failFirst.fromRunId) : undefined;
        return from?.request.prNumbers.includes(number) === true;
      });
      expect.soft(localizing.length, `${what}: localization runs`).toBeGreaterThan(0);
      const given = await Promise.all(
        localizing.map((run) =>
          readFile(path.join(traces, `${run.runId}.tsv`), "utf8").catch(() => undefined),
        ),
      );
      const line = [
        test.id,
        `${test.classname ?? ""}.${spec.failingTest ?? ""}`,
        test.file ?? "",
        test.classname ?? "",
        spec.failingTest ?? "",
      ].join("\t");
      expect
        .soft(
          given.some((text) => text?.split("\n").some((l) => l.startsWith(`${line}\t`))),
          `${what}: a check of ${localizing.map((r) => r.runId).join(", ")} got ${line}`,
        )
        .toBe(true);
      // The failing prefix ran that test first and stopped there: not the whole suite.
      if (byId.get(failedId)?.request.failFirst) {
        failedFirst.push(spec.k);
        const log = await ok<{ log: string }>(call, "local/getCiLog", {
          ...QUEUE,
          runId: failedId,
          check: "test",
        });
        expect.soft(log.log, `${what}: the test log of run ${failedId}`).toMatch(/^fail first: /m);
        expect
          .soft(log.log, `${what}: the test log of run ${failedId}`)
          .not.toContain("the whole suite");
      }
    }
    // #8, in the middle of its batch: the prefix ending in it failed on the test it ran first.
    expect.soft(failedFirst).toContain(8);
  }, 600_000);
});
