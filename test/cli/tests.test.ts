import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliInProcess, stopAllProcesses, type CliResult } from "../helpers/process.js";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, testIdOf } from "../helpers/uploads.js";
import { failed, succeeded } from "./support.js";

/**
 * `mainline tests …` end to end: the real CLI process against a real HTTP server (in this
 * process, so that the test can upload results and read the API's own answers to compare).
 */

const COMMIT = "ab".repeat(20);
let server: TestServer;
let flakyId: string;
let otherFlakyId: string;

/** `mainline tests …` with the server's address and acme's token in the environment. */
const cli = (...args: string[]): Promise<CliResult> =>
  runCliInProcess(["tests", ...args], { MAINLINE_URL: server.url, MAINLINE_TOKEN: server.token });

const at = ["--repo", "github.com/acme/app"];

async function api<T = Record<string, unknown>>(operation: string, body: object): Promise<T> {
  const answer = await server.call<T>(`flaky-tests/${operation}`, {
    repo: REPO,
    org_url_slug: "acme",
    ...body,
  });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

const json = (result: CliResult): unknown => JSON.parse(succeeded(result).stdout);

beforeAll(async () => {
  server = await startTestServer();
  // Failed and passed on the same commit: flaky (pass-on-retry), and quarantined automatically.
  for (const status of ["failed", "passed"] as const) {
    await ingest(
      server,
      await bundle({
        commit: COMMIT,
        branch: "main",
        files: [
          junit([
            { name: "checkout works", status, message: "Expected 200, got 502" },
            { name: "login works", status },
          ]),
        ],
      }),
    );
  }
  await server.services.worker.idle();
  flakyId = testIdOf({ name: "checkout works" });
  otherFlakyId = testIdOf({ name: "login works" });
});

afterAll(async () => {
  await stopAllProcesses();
  await server.close();
});

describe("mainline tests: the lists", () => {
  it("flaky, failing and quarantined as tables, broken as 'none'", async () => {
    const [flaky, failing, quarantined, broken] = await Promise.all([
      cli("flaky", ...at),
      cli("failing", ...at, "--since", "1d"),
      cli("quarantined", ...at),
      cli("broken", ...at),
    ]);
    const flakyOut = succeeded(flaky).stdout;
    expect(flakyOut).toMatch(/^ID +STATUS +QUARANTINED +PRS 7D +NAME$/m);
    expect(flakyOut).toMatch(new RegExp(`^${flakyId} +flaky +yes +0 +checkout works$`, "m"));
    expect(flakyOut).toMatch(new RegExp(`^${otherFlakyId} +flaky +yes +0 +login works$`, "m"));

    const failingOut = succeeded(failing).stdout;
    expect(failingOut).toMatch(/^ID +STATUS +QUARANTINED +PRS 7D +FAILED 24H +FAILED 7D +NAME$/m);
    expect(failingOut).toMatch(
      new RegExp(`^${flakyId} +flaky +yes +0 +50% +50% +checkout works$`, "m"),
    );

    expect(succeeded(quarantined).stdout).toMatch(
      new RegExp(`^${flakyId} +flaky +AUTO_QUARANTINE +\\S+Z +checkout works$`, "m"),
    );
    expect(succeeded(broken).stdout).toBe("No broken tests.\n");
  });

  it("--json prints exactly what the API answers", async () => {
    const [flaky, quarantined] = await Promise.all([
      cli("flaky", ...at, "--json"),
      cli("quarantined", ...at, "--json"),
    ]);
    const page_query = { page_size: 25 };
    expect(json(flaky)).toEqual(await api("list-unhealthy-tests", { status: "FLAKY", page_query }));
    expect(json(quarantined)).toEqual(await api("list-quarantined-tests", { page_query }));
  });

  it("pages: --page-size, then the printed --page-token", async () => {
    const first = succeeded(await cli("flaky", ...at, "--page-size", "1"));
    expect(first.stdout.trim().split("\n")).toHaveLength(2);
    const next = /next page: --page-token (\S+)/.exec(first.stderr)?.[1];
    expect(first.stderr).toContain("Page 1 of 2 (2 tests)");
    expect(next).toBeDefined();
    const second = succeeded(
      await cli("flaky", ...at, "--page-size", "1", "--page-token", next ?? ""),
    );
    expect(second.stderr).toContain("Page 2 of 2 (2 tests); last page");
    const ids = [first.stdout, second.stdout].map((out) => out.split("\n")[1]?.split(" ")[0]);
    expect(ids.sort()).toEqual([flakyId, otherFlakyId].sort());
  });

  it("answers with the API's errors, and its own for what it can tell", async () => {
    const [bigPage, badToken, window, since, both, otherRepo, otherOrg] = await Promise.all([
      cli("flaky", ...at, "--page-size", "500"),
      cli("flaky", ...at, "--page-token", "forged"),
      cli("failing", ...at, "--since", "30d"),
      cli("failing", ...at, "--since", "yesterday"),
      cli("failing", ...at, "--start", "2026-01-01T00:00:00Z"),
      cli("flaky", "--repo", "acme/elsewhere"),
      cli("flaky", ...at, "--org", "globex"),
    ]);
    expect(failed(bigPage)).toMatch(/^mainline: .+\n {2}- page_query\.page_size: .+/m);
    expect(failed(badToken)).toContain("- page_query.page_token: is not a token issued");
    expect(failed(window)).toContain("end_time: must be at most 7 days after start_time");
    expect(failed(since)).toContain("expected a duration such as 90m, 24h or 7d");
    expect(failed(both)).toContain("Give --start and --end together, or --since alone.");
    expect(failed(otherRepo)).toMatch(/^mainline: .*acme\/elsewhere/m);
    expect(failed(otherOrg)).toMatch(/^mainline: .*globex/m);
  });

  it("without a token it says how to get one", async () => {
    const result = await runCliInProcess(["tests", "flaky", ...at], {
      MAINLINE_URL: server.url,
      MAINLINE_TOKEN: "",
    });
    expect(failed(result)).toContain("No API token");
  });
});

describe("mainline tests: one test", () => {
  it("show: status, reason, quarantine, rates, monitors and history; --json is the API's", async () => {
    const [text, asJson] = await Promise.all([
      cli("show", flakyId, ...at),
      cli("show", flakyId, ...at, "--json"),
    ]);
    const out = succeeded(text).stdout;
    expect(out).toMatch(/^name +checkout works$/m);
    expect(out).toMatch(/^status +flaky since \S+Z$/m);
    expect(out).toMatch(/^reason +.*Failed and passed on the same commit abababa/m);
    expect(out).toMatch(/^quarantined +yes \(AUTO_QUARANTINE\)$/m);
    expect(out).toMatch(/^failed 7d +50%$/m);
    expect(out).toMatch(/^MONITOR +FLAGS +STATE/m);
    expect(out).toMatch(/^pass-on-retry +flaky +active/m);
    expect(out).toContain("Expected 200, got 502");
    expect(json(asJson)).toEqual(await api("get-test-details", { test_id: flakyId }));

    const unknown = await cli("show", "0".repeat(8) + "-0000-5000-8000-" + "0".repeat(12), ...at);
    expect(failed(unknown)).toMatch(/^mainline: No test .* in this repository\.$/m);
  });

  it("quarantine: sets the override the API then reports, and refuses unknown values", async () => {
    const never = succeeded(
      await cli("quarantine", otherFlakyId, "never", ...at, "--reason", "fixed in #42"),
    );
    expect(never.stdout).toBe("Override NEVER_QUARANTINE: the test is not quarantined.\n");
    const details = await api<{ test: { quarantined: boolean; quarantine: object } }>(
      "get-test-details",
      { test_id: otherFlakyId },
    );
    expect(details.test.quarantined).toBe(false);
    expect(details.test.quarantine).toMatchObject({
      override: "NEVER_QUARANTINE",
      override_reason: "fixed in #42",
    });
    const back = json(await cli("quarantine", otherFlakyId, "unspecified", ...at, "--json"));
    expect(back).toMatchObject({ override: "UNSPECIFIED", quarantined: true });

    expect(failed(await cli("quarantine", otherFlakyId, "sometimes", ...at))).toContain(
      "expected always, never or unspecified",
    );
  });

  it("ticket: links a URL, an id after the base URL, and unlinks", async () => {
    const noBase = await cli("ticket", flakyId, "ABC-1", ...at);
    expect(failed(noBase)).toMatch(
      /^mainline: .*no ticket_base_url.*\n {2}- external_ticket_id: /m,
    );

    const url = succeeded(await cli("ticket", flakyId, "https://tracker.example/T-9", ...at));
    expect(url.stdout).toBe("Linked https://tracker.example/T-9\n");
    const details = await api<{ test: { ticket?: { html_url: string } } }>("get-test-details", {
      test_id: flakyId,
    });
    expect(details.test.ticket).toEqual({ html_url: "https://tracker.example/T-9" });

    expect(succeeded(await cli("ticket", flakyId, "--unlink", ...at)).stdout).toBe(
      "Unlinked the ticket.\n",
    );
    expect(failed(await cli("ticket", flakyId, ...at))).toContain("or --unlink");
  });
});

describe("mainline tests settings", () => {
  it("get and update, as the API answers them", async () => {
    const [text, asJson] = await Promise.all([
      cli("settings", "get", ...at),
      cli("settings", "get", ...at, "--json"),
    ]);
    expect(succeeded(text).stdout).toMatch(/^auto_quarantine +true$/m);
    expect(succeeded(text).stdout).toMatch(/^updated_at +null$/m);
    expect(json(asJson)).toEqual(await api("get-test-settings", {}));

    const updated = json(
      await cli(
        "settings",
        "update",
        ...at,
        "--auto-quarantine",
        "false",
        "--ticket-base-url",
        "https://linear.app/acme/issue/",
        "--stable-branches",
        "main, release/*",
        "--pull-request-comments",
        "true",
        "--json",
      ),
    );
    const stored = await api("get-test-settings", {});
    expect(updated).toEqual(stored);
    expect(stored).toMatchObject({
      auto_quarantine: false,
      ticket_base_url: "https://linear.app/acme/issue/",
      stable_branches: ["main", "release/*"],
      pull_request_comments: true,
    });
    const linked = succeeded(await cli("ticket", flakyId, "ABC-1", ...at));
    expect(linked.stdout).toBe("Linked https://linear.app/acme/issue/ABC-1\n");

    const cleared = json(await cli("settings", "update", ...at, "--no-ticket-base-url", "--json"));
    expect(cleared).toMatchObject({ ticket_base_url: null, auto_quarantine: false });

    const refused = await cli("settings", "update", ...at, "--recovery-days", "0");
    expect(failed(refused)).toMatch(/^mainline: .+\n {2}- pass_on_retry\.recovery_days: /m);
    expect(failed(await cli("settings", "update", ...at))).toContain("Name at least one setting");
    expect(failed(await cli("settings", "update", ...at, "--auto-quarantine", "yes"))).toContain(
      "expected true or false",
    );
  });
});
