import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checkAccessibility,
  launchBrowser,
  openPage,
  screenshot,
  signInAt,
  type Launched,
  type TestPage,
} from "../helpers/browser.js";
import { PROJECT_FILES, mainlineYml } from "../helpers/local-project.js";
import {
  LOCAL,
  createRepositoryAndQueue,
  ok,
  stateOf,
  submit,
  type Call,
} from "../helpers/local-queue.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

/**
 * A failed batch localized, in Chromium, on a batching queue of the local git host with the
 * built-in CI: four pull requests are tested as one batch, which fails on the third; the queue
 * page, live, shows the batch size in use and why, then the localization (its suspects, the
 * prefixes tested at once, who waits for it); the culprit's page names the passing and the
 * failing run. axe checks each page; the screenshots go to docs/screenshots/ with
 * `npm run screenshots`.
 */

const Q = "repo=acme/shop&host=local&branch=main";
const TITLES = [
  "Add the invoice number",
  "Count the coupons",
  "Break the totals",
  "Round the prices",
];
/** PR k adds numbers/pk.txt; the third writes a word where a number belongs. */
const changes = (k: number): Record<string, string> => ({
  [`numbers/p${k}.txt`]: k === 3 ? "three\n" : `${k}\n`,
});

let launched: Launched;
let server: TestServer;
let call: Call;
const numbers: number[] = [];

beforeAll(async () => {
  launched = await launchBrowser();
  // Three checks at once: the three prefixes of the failed batch are tested side by side.
  server = await startTestServer({ startWorker: false, engine: { pollMs: 100 }, ciParallelism: 3 });
  call = (operation, body) => server.call(operation, body);
  // Checks that take a moment, so that the page shows the localization in progress.
  const project = await createRepositoryAndQueue(
    call,
    {
      testingTimeoutMinutes: 0,
      batch: true,
      batchingMinSize: 4,
      batchingMaxWaitTimeMinutes: 1,
      bisectionConcurrency: 3,
    },
    { ...PROJECT_FILES, ".mainline.yml": mainlineYml("sleep 4 && sh test.sh") },
  );
  for (const [i, title] of TITLES.entries()) {
    const head = `change-${i + 1}`;
    await project.branch(head, changes(i + 1), title);
    const opened = await ok<{ number: number }>(call, "local/openPullRequest", {
      repo: LOCAL,
      head,
      base: "main",
      title,
      author: ["ana", "bo", "chen", "dara"][i],
    });
    numbers.push(opened.number);
  }
}, 120_000);

afterAll(async () => {
  await launched.close();
  await server.close();
});

const signIn = (t: TestPage, next: string) => signInAt(t, `${server.url}${next}`, server.token);

const live = (t: TestPage) => t.page.locator("#queue-live");

describe("a failed batch localized, in Chromium", () => {
  it("the queue page shows the batch size in use, then the localization while it runs", async () => {
    const [a, b, c, d] = numbers as [number, number, number, number];
    const t = await openPage(launched, server.url);
    await signIn(t, `/acme/merge-queue/queue?${Q}`);
    await t.page.getByText("Live: following the queue.").waitFor();
    // Batching on, nothing failed yet: the most batchingMinSize allows.
    expect(await live(t).locator("p.batch-size").textContent()).toBe(
      "Batch size in use: 4 of at most 4 · no failure has stood in the queue's recent runs: batches of 4, the most batchingMinSize allows",
    );
    await checkAccessibility(t.page);

    for (const number of numbers) await submit(call, number);
    // The batch fails on #c: its prefixes are tested at once, on the open page.
    const card = live(t).locator("ul.localizations > li.localization");
    await expect
      .poll(() => card.locator("p").first().textContent(), { timeout: 60_000 })
      .toMatch(/^Testing 3 prefixes of batch run \d+ to find the failing pull request/);
    const summary = (await card.locator("p").first().textContent()) ?? "";
    const batchRun = /batch run (\d+)/.exec(summary)?.[1] ?? "";
    expect(summary).toContain(`(one of #${a}, #${b}, #${c}, #${d})`);
    const [terms, details] = await Promise.all([
      card.locator("dt").allTextContents(),
      card.locator("dd").allTextContents(),
    ]);
    const rows = Object.fromEntries(terms.map((term, i) => [term, details[i]]));
    expect(rows).toMatchObject({
      Cleared: "none yet",
      Suspects: `#${a}, #${b}, #${c}, #${d}`,
    });
    const prefixes = await card.locator("ul.prefixes > li").allTextContents();
    expect(prefixes.map((p) => p.replace(/ in run \d+$/, ""))).toEqual([
      `#${a}`,
      `#${a}, #${b}`,
      `#${a}, #${b}, #${c}`,
    ]);
    // Each prefix links to its run among those being tested.
    const target = await card.locator(`ul.prefixes a[href^="#run-"]`).first().getAttribute("href");
    expect(
      await live(t)
        .locator(`li.run${target ?? ""}`)
        .count(),
    ).toBe(1);
    // The failure stood: the size in use now rests on a failure rate above 0.
    expect(await live(t).locator("p.batch-size").textContent()).toMatch(
      /^Batch size in use: \d of at most 4 · .* \d+(\.\d)? % failure rate/,
    );
    // Each suspect's row says so.
    for (const n of [a, b, c, d]) {
      expect(await live(t).locator(`table.queue tr[data-pr="${n}"]`).textContent()).toContain(
        `a suspect in the localization of batch run ${batchRun}`,
      );
    }
    await checkAccessibility(t.page);
    await screenshot(t.page, "queue-localization");
    await t.finish();
  });

  it("the culprit's page says which run passed and which failed", async () => {
    const [a, b, c] = numbers as [number, number, number, number];
    await waitFor(async () => (await stateOf(call, c)) === "failed", `#${c} to fail`, {
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    const t = await openPage(launched, server.url);
    await signIn(t, `/acme/merge-queue/pr/${c}?${Q}`);
    expect(await t.page.locator("h1").textContent()).toBe(`#${c} ${TITLES[2]}`);
    const error = (await t.page.locator("p.error").textContent()) ?? "";
    expect(error).toMatch(
      new RegExp(
        `^A required check failed\\. localization: run \\d+ \\(#${a}, #${b}\\) passed; run \\d+ \\(#${a}, #${b}, #${c}\\) failed test \\(run \\d+\\)$`,
      ),
    );
    // The timeline has the localization's start, in words.
    const timeline = await t.page
      .getByRole("table", { name: `Every state change of #${c}, newest first` })
      .textContent();
    expect(timeline).toMatch(
      /Its batch failed: the queue tests parts of the batch to find the pull request that broke it\.testing 3 prefixes of batch run \d+ at once to find the failing pull request/,
    );
    // Its runs: the failed batch, and the prefix that failed with it first.
    expect(await t.page.locator("section.run p.muted").allTextContents()).toContainEqual(
      expect.stringMatching(/^Localization run \(a prefix of a failed batch\) on /),
    );
    await checkAccessibility(t.page);
    await screenshot(t.page, "pull-request-localized");
    await t.finish();
  });
});
