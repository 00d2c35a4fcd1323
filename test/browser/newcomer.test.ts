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
import { createLocalProject, git, type LocalProject } from "../helpers/local-project.js";
import { ok, type Call } from "../helpers/local-queue.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, junit, putBundle } from "../helpers/uploads.js";

/**
 * What a newcomer met on the pages of a repository of the local git host, in Chromium: who a pull
 * request is by, one line for a pull request submitted twice, why it left the queue in words, one
 * name for the repository on every page, times with their date and full timestamp, and a
 * repository link that leads somewhere. axe checks every page.
 */

const REPO = { host: "local", owner: "acme", name: "calc" };
const QUEUE = { repo: REPO, targetBranch: "main" };
const Q = "repo=acme/calc&host=local&branch=main";
const HOUR_MS = 3_600_000;

let launched: Launched;
let server: TestServer;
let call: Call;
let project: LocalProject;
/** The server's clock runs this far from now (the first submission was yesterday). */
let clockOffset = 0;
const numbers = { again: 0, cancelled: 0 };

async function stateOf(number: number): Promise<string> {
  const pr = await ok<{ state: string }>(call, "getSubmittedPullRequest", {
    ...QUEUE,
    pr: { number },
  });
  return pr.state;
}

async function until(number: number, state: string): Promise<void> {
  await waitFor(async () => (await stateOf(number)) === state, `#${number} to be ${state}`, {
    timeoutMs: 20_000,
    intervalMs: 100,
  });
}

/** Pushes branch `name` with one commit by Ada and opens a pull request on it, naming no author. */
async function openByAda(name: string, title: string): Promise<number> {
  await project.branch(name, { [`numbers/${name}.txt`]: "2\n" }, title);
  await git(project.dir, "checkout", "--quiet", name);
  await git(project.dir, "commit", "--quiet", "--amend", "--no-edit", "--author=Ada <ada@x.org>");
  await git(project.dir, "push", "--quiet", "--force", project.remote, name);
  await git(project.dir, "checkout", "--quiet", "main");
  const opened = await ok<{ number: number }>(call, "local/openPullRequest", {
    repo: REPO,
    head: name,
    base: "main",
    title,
  });
  return opened.number;
}

beforeAll(async () => {
  launched = await launchBrowser();
  server = await startTestServer({
    engine: { pollMs: 100 },
    clock: { now: () => Date.now() + clockOffset },
  });
  call = (operation, body) => server.call(operation, body);
  const { remoteUrl } = await ok<{ remoteUrl: string }>(call, "local/createRepository", {
    repo: REPO,
  });
  project = await createLocalProject(remoteUrl);
  await ok(call, "createQueue", QUEUE);
  // Paused: submitted pull requests wait in `pending`, so that the pages are stable.
  await ok(call, "updateQueue", { ...QUEUE, state: "paused" });
  // The ref watcher notices pushes from its first poll (each second) after the queue exists.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  numbers.again = await openByAda("add-two", "Add two");
  numbers.cancelled = await openByAda("add-three", "Add three");

  // Yesterday: #again is submitted, then a push to its branch takes it out of the queue.
  clockOffset = -26 * HOUR_MS;
  await ok(call, "submitPullRequest", { ...QUEUE, pr: { number: numbers.again } });
  await until(numbers.again, "pending");
  await project.branch("add-two-more", { "numbers/add-two.txt": "22\n" });
  await git(project.dir, "push", "--quiet", "--force", project.remote, "add-two-more:add-two");
  await until(numbers.again, "cancelled");
  // Today: it is submitted again; #cancelled is submitted and taken out by hand.
  clockOffset = 0;
  await ok(call, "submitPullRequest", { ...QUEUE, pr: { number: numbers.again } });
  await ok(call, "submitPullRequest", { ...QUEUE, pr: { number: numbers.cancelled } });
  await until(numbers.cancelled, "pending");
  await ok(call, "cancelPullRequest", { ...QUEUE, pr: { number: numbers.cancelled } });
  await until(numbers.cancelled, "cancelled");
  await until(numbers.again, "pending");

  // Test results of the repository, for its test-health pages.
  await putBundle(
    server,
    await bundle({
      repo: REPO,
      files: [junit([{ name: "adds up", status: "failed" }, { name: "subtracts" }])],
    }),
    REPO,
  );
  await server.services.worker.idle();
}, 120_000);

afterAll(async () => {
  await launched.close();
  await server.close();
});

const signIn = (t: TestPage, next: string) => signInAt(t, `${server.url}${next}`, server.token);

/** Every `<time>` of the page: what it shows, its `datetime` and its title. */
async function times(t: TestPage): Promise<[string, string, string][]> {
  const nodes = await t.page.locator("main time").all();
  return Promise.all(
    nodes.map(async (n): Promise<[string, string, string]> => [
      (await n.textContent()) ?? "",
      (await n.getAttribute("datetime")) ?? "",
      (await n.getAttribute("title")) ?? "",
    ]),
  );
}

/** The page names the repository as typed at `repo create`, never with the local host. */
async function expectOneName(t: TestPage): Promise<void> {
  const text = (await t.page.locator("body").textContent()) ?? "";
  expect(text).not.toContain("local/acme/calc");
  expect(await t.page.title()).not.toContain("local/");
}

describe("a local repository's queue pages", () => {
  it("show who a pull request is by, once, with its times dated and reasons in words", async () => {
    const t = await openPage(launched, server.url);
    await signIn(t, "/acme");
    // The home page names the queue as every page does.
    expect(await t.page.getByRole("link", { name: "acme/calc · main", exact: true }).count()).toBe(
      1,
    );
    await expectOneName(t);
    await checkAccessibility(t.page);

    await t.page.goto(`${server.url}/acme/merge-queue/queue?${Q}`);
    expect(await t.page.locator("h1").textContent()).toBe("acme/calc · main merge queue");
    const live = t.page.locator("#queue-live");
    // #again: one line, in the queue, by Ada; #cancelled: in words why it left.
    expect(await live.locator(`tr[data-pr="${numbers.again}"]`).count()).toBe(1);
    const queued = live.locator(`table.queue tr[data-pr="${numbers.again}"]`);
    expect(await queued.locator("td").nth(2).textContent()).toBe("Ada");
    expect(
      await live.locator(`table.concluded tr[data-pr="${numbers.cancelled}"]`).textContent(),
    ).toContain("cancelled Taken out of the queue by hand.");
    await expectOneName(t);
    await checkAccessibility(t.page);
    await screenshot(t.page, "newcomer-queue");

    await t.page.goto(`${server.url}/acme/merge-queue/pr/${numbers.again}?${Q}`);
    expect(await t.page.locator("main p").first().textContent()).toContain("by Ada ·");
    const reasons = await t.page
      .getByRole("table", { name: `Every state change of #${numbers.again}, newest first` })
      .locator("tbody tr td:nth-child(3)")
      .allTextContents();
    expect(reasons).toContain(
      `New commits were pushed to the pull request, so it left the queue.${(await git(project.remote, "rev-parse", "add-two")).trim()}`,
    );
    expect(reasons).toContain("Submitted to the queue.");
    expect((await t.page.locator("main").textContent()) ?? "").not.toMatch(/pr.pushed.to/);
    // Yesterday's times with their date, today's without; each with its instant and full time.
    const shown = await times(t);
    expect(shown.length).toBeGreaterThan(3);
    const today = new Date().toISOString().slice(0, 10);
    for (const [text, datetime, title] of shown) {
      expect(datetime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const day = datetime.slice(0, 10);
      expect(title).toBe(`${day} ${datetime.slice(11, 19)} UTC`);
      expect(text).toBe(`${day === today ? "" : `${day} `}${datetime.slice(11, 16)} UTC`);
    }
    expect(shown.some(([, datetime]) => !datetime.startsWith(today))).toBe(true);
    await expectOneName(t);
    await checkAccessibility(t.page);
    await screenshot(t.page, "newcomer-pull-request");

    await t.page.goto(`${server.url}/acme/merge-queue/health?${Q}`);
    expect(await t.page.locator("h1").textContent()).toBe("Health acme/calc · main");
    expect(await t.page.locator("main").textContent()).toContain(
      "New commits were pushed to the pull request, so it left the queue.",
    );
    await expectOneName(t);
    await checkAccessibility(t.page);
    await t.finish();
  });
});

describe("a local repository's test pages", () => {
  it("name it acme/calc, and its test page links to its page on this server", async () => {
    const t = await openPage(launched, server.url);
    await signIn(t, "/acme/flaky-tests");
    await Promise.all([
      t.page.waitForURL(/\/flaky-tests\/repo\?/),
      t.page.getByRole("link", { name: "acme/calc", exact: true }).click(),
    ]);
    const repositoryPage = t.page.url();
    expect(await t.page.locator("h1").textContent()).toBe("acme/calc");
    await expectOneName(t);
    await Promise.all([
      t.page.waitForURL(/\/flaky-tests\/test\//),
      t.page.getByRole("link", { name: "adds up" }).click(),
    ]);
    await expectOneName(t);
    await checkAccessibility(t.page);
    await screenshot(t.page, "newcomer-test");
    const link = t.page
      .locator("main p")
      .first()
      .getByRole("link", { name: "acme/calc", exact: true });
    expect(await link.getAttribute("href")).toBe(repositoryPage);
    // The API's repository.html_url is that page too.
    const details = await ok<{ test: { repository: { html_url: string } } }>(
      call,
      "flaky-tests/get-test-details",
      {
        repo: REPO,
        org_url_slug: "acme",
        test_id: new URL(t.page.url()).pathname.split("/").pop(),
      },
    );
    expect(details.test.repository.html_url).toBe(repositoryPage);
    await Promise.all([t.page.waitForURL(repositoryPage), link.click()]);
    expect(await t.page.locator("h1").textContent()).toBe("acme/calc");
    await t.finish();
  });
});
