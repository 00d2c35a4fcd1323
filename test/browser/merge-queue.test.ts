import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checkAccessibility,
  launchBrowser,
  openPage,
  screenshot,
  signInAt,
  statusNote,
  type Launched,
  type TestPage,
} from "../helpers/browser.js";
import { PROJECT_FILES, mainlineYml, type LocalProject } from "../helpers/local-project.js";
import {
  LOCAL,
  QUEUE,
  allConcluded,
  createRepositoryAndQueue,
  ok,
  stateOf,
  submit,
  type Call,
} from "../helpers/local-queue.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

/**
 * The merge queue's pages in Chromium, on a queue of the local git host with the built-in CI:
 * open the queue, submit pull requests and watch them go through testing to merged on the open
 * page without a reload (the live region, fed by the event stream); open a failed pull request
 * and its check's log; the queue's health; pause and resume with the buttons; a second
 * organization sees none of it. axe checks every page; the screenshots go to docs/screenshots/.
 */

const Q = "repo=acme/shop&host=local&branch=main";
const TITLES = [
  "Add the invoice number",
  "Count the coupons",
  "Break the totals",
  "Round the prices",
  "Add the tax rate",
  "Show the delivery date",
];
/** PR k adds numbers/pk.txt; the third writes a word where a number belongs. */
const changes = (k: number): Record<string, string> => ({
  [`numbers/p${k}.txt`]: k === 3 ? "three\n" : `${k}\n`,
});

let launched: Launched;
let server: TestServer;
let call: Call;
let project: LocalProject;
const numbers: number[] = [];

beforeAll(async () => {
  launched = await launchBrowser();
  server = await startTestServer({ startWorker: false, engine: { pollMs: 100 } });
  call = (operation, body) => server.call(operation, body);
  // Checks that take a moment, so that the page shows runs in flight.
  project = await createRepositoryAndQueue(
    call,
    { testingTimeoutMinutes: 0, concurrency: 3 },
    { ...PROJECT_FILES, ".mainline.yml": mainlineYml("sleep 3 && sh test.sh") },
  );
  const authors = ["ana", "bo", "chen", "dara", "eli", "fay"];
  for (const [i, title] of TITLES.entries()) {
    const head = `change-${i + 1}`;
    await project.branch(head, changes(i + 1), title);
    const opened = await ok<{ number: number }>(call, "local/openPullRequest", {
      repo: LOCAL,
      head,
      base: "main",
      title,
      author: authors[i],
    });
    numbers.push(opened.number);
  }
}, 120_000);

afterAll(async () => {
  await launched.close();
  await server.close();
});

const signIn = (t: TestPage, token: string, next: string) =>
  signInAt(t, `${server.url}${next}`, token);

const live = (t: TestPage) => t.page.locator("#queue-live");
const row = (t: TestPage, table: string, number: number) =>
  live(t).locator(`table.${table} tr[data-pr="${number}"]`);

describe("the merge queue in Chromium", () => {
  it("follows pull requests through testing to merged on the open page, without a reload", async () => {
    const t = await openPage(launched, server.url);
    await signIn(t, server.token, `/acme/merge-queue/queue?${Q}`);
    expect(await t.page.locator("h1").textContent()).toBe("acme/shop · main merge queue");
    await t.page.getByText("Live: following the queue.").waitFor();
    expect(await live(t).textContent()).toContain("The queue is empty.");
    await checkAccessibility(t.page);
    // Anything that reloads the page loses this.
    await t.page.evaluate("window.__stillHere = true");

    const [first] = numbers;
    if (first === undefined) throw new Error("no pull request");
    for (const number of numbers) await submit(call, number);
    // Testing: the runs in flight, each on top of the ones ahead.
    await expect
      .poll(() => row(t, "queue", first).locator(".badge").textContent(), { timeout: 30_000 })
      .toBe("testing");
    await live(t).locator("ol.runs > li.run").nth(2).waitFor({ timeout: 30_000 });
    expect(await live(t).locator("ol.runs > li.run").count()).toBe(3);
    const lane = await live(t)
      .locator("ol.runs > li.run")
      .nth(1)
      .locator("li.chip")
      .allTextContents();
    expect(lane.slice(1)).toEqual([`#${numbers[0]}`, `#${numbers[1]}`]);
    await checkAccessibility(t.page);

    // Merged: it leaves the queue and is listed as concluded.
    await expect
      .poll(() => row(t, "concluded", first).locator(".badge").textContent(), { timeout: 60_000 })
      .toBe("merged");
    expect(await row(t, "queue", first).count()).toBe(0);
    // With a finished run to estimate from, and runs still in flight (for the docs' picture).
    await checkAccessibility(t.page);
    await screenshot(t.page, "queue");
    expect(await t.page.getByText(/^Live: updated at \d\d:\d\d:\d\d UTC$/).count()).toBe(1);
    expect(await t.page.evaluate("window.__stillHere")).toBe(true);
    // A keyboard user on the last pull request's link keeps it through the updates.
    const last = numbers.at(-1) ?? 0;
    const lastHref = `/acme/merge-queue/pr/${last}?${Q}`;
    await live(t).locator(`a[href="${lastHref}"]`).first().focus();
    const before = await live(t).getAttribute("data-version");
    // Someone pauses and resumes the queue: a change the page must follow.
    await ok(call, "updateQueue", { ...QUEUE, state: "paused" });
    await ok(call, "updateQueue", { ...QUEUE, state: "running" });
    await expect
      .poll(() => live(t).getAttribute("data-version"), { timeout: 30_000 })
      .not.toBe(before);
    expect(await t.page.evaluate("document.activeElement.getAttribute('href')")).toBe(lastHref);
    await waitFor(() => allConcluded(call, numbers), "every pull request to conclude", {
      timeoutMs: 120_000,
      intervalMs: 250,
    });
    await expect
      .poll(() => live(t).locator("table.concluded tbody tr").count(), { timeout: 30_000 })
      .toBe(numbers.length);
    expect(await t.page.evaluate("window.__stillHere")).toBe(true);
    await t.finish();
  });

  it("shows a failed pull request with its failing check one click away", async () => {
    const failed = numbers[2] ?? 0;
    expect(await stateOf(call, failed)).toBe("failed");
    const t = await openPage(launched, server.url);
    await signIn(t, server.token, `/acme/merge-queue/queue?${Q}`);
    await Promise.all([
      t.page.waitForURL(/\/merge-queue\/pr\//),
      row(t, "concluded", failed)
        .getByRole("link", { name: `#${failed}` })
        .click(),
    ]);
    expect(await t.page.locator("h1").textContent()).toBe(`#${failed} ${TITLES[2]}`);
    expect(await t.page.locator("p.error").textContent()).toContain(
      "A required check failed. failed: test",
    );
    await checkAccessibility(t.page);
    await screenshot(t.page, "pull-request");
    await Promise.all([
      t.page.waitForURL(/\/merge-queue\/log\?/),
      t.page.getByRole("link", { name: "log" }).first().click(),
    ]);
    expect(await t.page.locator("pre.log").textContent()).toContain(
      "not a whole number: numbers/p3.txt",
    );
    await checkAccessibility(t.page);
    await t.finish();
  });

  it("shows the queue's health", async () => {
    const t = await openPage(launched, server.url);
    await signIn(t, server.token, `/acme/merge-queue/queue?${Q}`);
    await Promise.all([
      t.page.waitForURL(/\/merge-queue\/health\?/),
      t.page.getByRole("link", { name: "Health of this queue" }).click(),
    ]);
    const figures = await t.page.locator("ul.figures li").allTextContents();
    expect(figures[0]).toBe(`${numbers.length - 1} merged`);
    expect(figures[1]).toBe("1 failed");
    expect(
      await t.page
        .getByRole("table", { name: "Pull requests that failed, newest first" })
        .textContent(),
    ).toContain(TITLES[2]);
    await checkAccessibility(t.page);
    await screenshot(t.page, "queue-health");
    await Promise.all([
      t.page.waitForURL(/range=7d/),
      t.page.getByRole("navigation", { name: "Range" }).getByRole("link", { name: "7d" }).click(),
    ]);
    expect(await t.page.locator('.ranges a[aria-current="page"]').textContent()).toBe("7d");
    await t.finish();
  });

  it("pauses and resumes the queue with its buttons", async () => {
    const t = await openPage(launched, server.url);
    await signIn(t, server.token, `/acme/merge-queue/queue?${Q}`);
    await Promise.all([
      t.page.waitForURL(/\/merge-queue\/queue\?/),
      t.page.getByRole("button", { name: "Pause" }).click(),
    ]);
    await t.page.getByRole("button", { name: "Resume" }).waitFor();
    expect(await t.page.locator(".queue-state .badge").textContent()).toBe("paused");
    expect((await ok<{ state: string }>(call, "getQueue", QUEUE)).state).toBe("paused");
    await checkAccessibility(t.page);
    await Promise.all([
      t.page.waitForURL(/\/merge-queue\/queue\?/),
      t.page.getByRole("button", { name: "Resume" }).click(),
    ]);
    await t.page.getByRole("button", { name: "Pause" }).waitFor();
    expect(await t.page.locator(".queue-state .badge").textContent()).toBe("running");
    expect((await ok<{ state: string }>(call, "getQueue", QUEUE)).state).toBe("running");
    await t.finish();
  });

  it("says on the queue page when the queue's git host does not answer", async () => {
    // A queue of github.com on a server without the GitHub App: the targets CI uploads are kept,
    // and the queue's first step finds no provider for its host.
    const repo = { host: "github.com", owner: "acme", name: "shop" };
    await ok(call, "createQueue", { repo, targetBranch: "main" });
    await ok(call, "setImpactedTargets", {
      repo,
      pr: { number: "7", sha: "0123456789abcdef0123456789abcdef01234567" },
      targetBranch: "main",
      impactedTargets: ["//shop:all"],
    });
    await waitFor(
      async () =>
        (await ok<{ host: { state: string } }>(call, "getQueue", { repo, targetBranch: "main" }))
          .host.state === "unreachable",
      "the queue finds its host unreachable",
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    const t = await openPage(launched, server.url);
    await signIn(
      t,
      server.token,
      "/acme/merge-queue/queue?repo=acme/shop&host=github.com&branch=main",
    );
    const notice = t.page.locator(".host-trouble");
    expect(await notice.getAttribute("data-host-state")).toBe("unreachable");
    expect(await notice.textContent()).toMatch(/cannot reach its git host.*github\.com/s);
    await checkAccessibility(t.page);
    await screenshot(t.page, "queue-host-unreachable");
    await t.finish();
  });

  it("a second organization's session gets the 404 page for all of it", async () => {
    const globex = await server.services.organizations.createOrganizationWithToken("globex-mq");
    const t = await openPage(launched, server.url);
    await signIn(t, globex.token, "/");
    const paths = [
      `/acme/merge-queue/queue?${Q}`,
      `/acme/merge-queue/pr/${numbers[0] ?? 0}?${Q}`,
      `/acme/merge-queue/health?${Q}`,
      `/globex-mq/merge-queue/queue?${Q}`,
    ];
    for (const path of paths) {
      const answer = await t.page.goto(`${server.url}${path}`);
      expect(answer?.status(), path).toBe(404);
      expect(await t.page.locator("h1").textContent()).toBe("Page not found");
      expect(await t.page.content()).not.toContain("acme/shop");
    }
    await checkAccessibility(t.page);
    await t.finish(paths.map(() => statusNote(404)));
  });
});
