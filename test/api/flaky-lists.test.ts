import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_DIALECT } from "../helpers/database.js";
import { REPO, startTestServer, type ApiResponse, type TestServer } from "../helpers/server.js";
import {
  bundle,
  ingest,
  junit,
  putBundle,
  type BundleSpec,
  type CaseSpec,
} from "../helpers/uploads.js";

/**
 * The three list operations (api.md; docs/contract.md §3), over data uploaded through the real upload
 * protocol and processed by the background worker. The server's clock is fixed (and moved by the
 * tests), so that rates, windows and status times are exact.
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (at: number) => new Date(at).toISOString();

interface Page {
  total_rows: number;
  total_pages: number;
  next_page_token: string;
  prev_page_token: string;
  last_page_token: string;
  page_index: number;
}

interface FailingTest {
  id: string;
  name: string;
  variant: string;
  status: { value: string; reason: string; timestamp: string };
  failure_rate_last_7d: number;
  failure_rate_last_24h: number;
  pull_requests_impacted_last_7d: number;
  most_common_failures: { summary: string; occurrence_count: number; last_occurrence: string }[];
  quarantined: boolean;
  [field: string]: unknown;
}

interface QuarantinedTest {
  name: string;
  parent: string | null;
  file: string | null;
  classname: string | null;
  codeowners: string[];
  quarantined_at: string;
  status_last_updated_at: string;
  test_case_id: string;
  variant: string;
  quarantine_setting: string;
  status: string;
}

interface ErrorBody {
  error: { code: string; message: string; details?: { path: string; message: string }[] };
}

type ListBody = { tests: FailingTest[]; page: Page } & ErrorBody;
type QuarantinedBody = { quarantined_tests: QuarantinedTest[]; page: Page } & ErrorBody;

/** The page of a list that fits on one page: no next or previous page, and a last page token. */
function expectSinglePage(page: Page, totalRows: number): void {
  expect(page).toMatchObject({
    total_rows: totalRows,
    total_pages: 1,
    next_page_token: "",
    prev_page_token: "",
    page_index: 0,
  });
  expect(page.last_page_token).not.toBe("");
}

const EMPTY_PAGE: Page = {
  total_rows: 0,
  total_pages: 0,
  next_page_token: "",
  prev_page_token: "",
  last_page_token: "",
  page_index: 0,
};

/** A clock the tests move; the server reads it for upload times, status changes and rates. */
function movableClock(start: number) {
  let now = start;
  return {
    clock: { now: () => now },
    set(at: number) {
      now = at;
    },
  };
}

let commitCounter = 0;
const nextCommit = () => (++commitCounter).toString(16).padStart(40, "0");

async function upload(
  server: TestServer,
  at: number,
  cases: readonly CaseSpec[],
  spec: Omit<BundleSpec, "files" | "uploadedAt"> = {},
): Promise<void> {
  const body = await bundle({
    commit: nextCommit(),
    ...spec,
    uploadedAt: at,
    files: [junit(cases)],
  });
  if (spec.repo) {
    await putBundle(server, body, spec.repo);
    await server.services.worker.idle();
  } else {
    await ingest(server, body);
  }
}

const failAt = (name: string, at: number, extra: Partial<CaseSpec> = {}): CaseSpec => ({
  name,
  status: "failed",
  timestamp: iso(at),
  ...extra,
});
const passAt = (name: string, at: number): CaseSpec => ({ name, timestamp: iso(at) });

/** Names in the order the list must have them: most failures first, then by test id. */
function expectedOrder(counts: Record<string, number>, idOf: (name: string) => string): string[] {
  return Object.keys(counts).sort(
    (a, b) => (counts[b] ?? 0) - (counts[a] ?? 0) || (idOf(a) < idOf(b) ? -1 : 1),
  );
}

function expectInvalid(answer: ApiResponse<ErrorBody>, code: string, path?: string): void {
  expect(answer.status, answer.text).toBe(400);
  expect(answer.body.error.code).toBe(code);
  if (path !== undefined) {
    expect(answer.body.error.details?.map((d) => d.path)).toContain(path);
  }
}

describe(`list-failing-tests on ${TEST_DIALECT}`, () => {
  // Fixed times: the window [07:30, 09:30) of DAY0 has a partial first hour [07:30, 08:00), one
  // whole hour [08:00, 09:00) (read from the hourly aggregates) and a partial last hour.
  const DAY0 = Date.parse("2026-11-20T00:00:00.000Z");
  const at = (hhmm: string, ms = 0) =>
    DAY0 + Number(hhmm.slice(0, 2)) * HOUR + Number(hhmm.slice(3, 5)) * 60_000 + ms;
  const START = at("07:30");
  const END = at("09:30");
  const NOW = at("12:00");
  const time = movableClock(NOW);
  let server: TestServer;
  const ids = new Map<string, string>();
  const idOf = (name: string) => {
    const id = ids.get(name);
    if (id === undefined) throw new Error(`no id for ${name}`);
    return id;
  };

  const list = (
    body: Record<string, unknown>,
    page_query: Record<string, unknown> = { page_size: 100 },
  ) =>
    server.call<ListBody>("flaky-tests/list-failing-tests", {
      repo: REPO,
      org_url_slug: "acme",
      start_time: iso(START),
      end_time: iso(END),
      page_query,
      ...body,
    });

  beforeAll(async () => {
    server = await startTestServer({ clock: time.clock });
    // U1, on PR 101.
    await upload(
      server,
      at("11:00"),
      [
        failAt("before_start", at("07:29", 59_999)),
        failAt("at_start", START),
        failAt("edge_first", at("07:59", 59_999)),
        failAt("many", at("07:45")),
        failAt("two_a", at("08:00")),
        failAt("two_b", at("08:30")),
        failAt("last_edge", at("09:29", 59_999)),
        failAt("at_end", END),
        // Passing runs, so that U1 is not an infrastructure failure (9 of 13 runs failed).
        ...["passes", "passes_2", "passes_3", "passes_4"].map((name) => passAt(name, at("08:30"))),
        failAt("rate", at("08:10"), { message: "timeout after 5000 ms" }),
      ],
      { pr: 101, branch: "feature/a" },
    );
    // U2, on PR 102.
    await upload(
      server,
      at("11:10"),
      [
        failAt("many", at("08:15")),
        failAt("two_a", at("09:00")),
        failAt("two_b", at("08:59", 59_999)),
        passAt("rate", at("10:00")),
      ],
      { pr: 102, branch: "feature/b" },
    );
    // U3, on main (no PR).
    await upload(server, at("11:20"), [failAt("many", at("09:15")), passAt("rate", at("10:30"))]);
    // U4: a skipped run counts for nothing; U5: a run two days ago, outside the 24 h rate.
    await upload(server, at("11:25"), [
      { name: "rate", status: "skipped", timestamp: iso(at("11:00")) },
    ]);
    await upload(server, NOW - 2 * DAY, [passAt("rate", NOW - 2 * DAY - HOUR)]);
    // U6: an infrastructure failure (9 of 10 runs failed): listed, but no rates and no PRs.
    await upload(
      server,
      at("11:30"),
      [
        ...Array.from({ length: 5 }, (_, i) => failAt(`infra_${i}`, at("07:40"))),
        ...Array.from({ length: 4 }, (_, i) => failAt(`infra_${i + 5}`, at("08:20"))),
        passAt("infra_9", at("08:20")),
      ],
      { pr: 103, branch: "feature/c" },
    );

    // Every test's id, from a window holding all of their runs.
    const all = await list(
      { start_time: iso(DAY0), end_time: iso(DAY0 + DAY) },
      { page_size: 100 },
    );
    expect(all.status, all.text).toBe(200);
    for (const test of all.body.tests) ids.set(test.name, test.id);
    // Everything but `passes` and `infra_9` failed at least once that day.
    expect(ids.size).toBe(18);
  });
  afterAll(async () => {
    await server.close();
  });

  const WINDOW_COUNTS: Record<string, number> = {
    many: 3,
    two_a: 2,
    two_b: 2,
    at_start: 1,
    edge_first: 1,
    last_edge: 1,
    rate: 1,
    ...Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`infra_${i}`, 1])),
  };

  it("lists the tests that failed in [start_time, end_time), most failures first, ties by id", async () => {
    const answer = await list({});
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.tests.map((t) => t.name)).toEqual(expectedOrder(WINDOW_COUNTS, idOf));
    expectSinglePage(answer.body.page, 16);
  });

  it("counts a failure at start_time, not 1 ms before it; at end_time - 1 ms, not at end_time", async () => {
    const names = (await list({})).body.tests.map((t) => t.name);
    expect(names).toContain("at_start");
    expect(names).toContain("last_edge");
    expect(names).not.toContain("before_start");
    expect(names).not.toContain("at_end");
    expect(names).not.toContain("passes");

    const justBefore = await list({ start_time: iso(START - 1), end_time: iso(START) });
    expect(justBefore.body.tests.map((t) => t.name)).toEqual(["before_start"]);
    const atEnd = await list({ start_time: iso(END), end_time: iso(END + 1) });
    expect(atEnd.body.tests.map((t) => t.name)).toEqual(["at_end"]);
  });

  it("counts whole hours from the aggregates and partial hours from runs, exactly", async () => {
    // Hour-aligned: [08:00, 09:00) comes from the hourly aggregates alone.
    const aligned = await list({ start_time: iso(at("08:00")), end_time: iso(at("09:00")) });
    expect(aligned.body.tests.map((t) => t.name)).toEqual(
      expectedOrder(
        {
          two_b: 2,
          many: 1,
          two_a: 1,
          rate: 1,
          ...Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`infra_${i + 5}`, 1])),
        },
        idOf,
      ),
    );
    // Inside one hour: [07:30, 07:59:59.999) leaves out the failure at 07:59:59.999.
    const inside = await list({ start_time: iso(START), end_time: iso(at("07:59", 59_999)) });
    expect(inside.body.tests.map((t) => t.name)).toEqual(
      expectedOrder(
        {
          at_start: 1,
          many: 1,
          ...Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`infra_${i}`, 1])),
        },
        idOf,
      ),
    );
    // A partial first hour and a whole hour: [07:59:59.999, 09:00) has two_a once (08:00) and
    // two_b twice, many once (08:15), edge_first once (07:59:59.999).
    const mixed = await list({ start_time: iso(at("07:59", 59_999)), end_time: iso(at("09:00")) });
    expect(mixed.body.tests.map((t) => t.name)).toEqual(
      expectedOrder(
        {
          two_b: 2,
          edge_first: 1,
          many: 1,
          two_a: 1,
          rate: 1,
          ...Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`infra_${i + 5}`, 1])),
        },
        idOf,
      ),
    );
    // Digits beyond the millisecond: a run at 07:30:00.000 is before 07:30:00.000500.
    const fraction = await list({
      start_time: "2026-11-20T07:30:00.0005Z",
      end_time: "2026-11-20T07:35:00Z",
    });
    expect(fraction.body.tests).toEqual([]);
  });

  it("answers rates, PRs impacted and common failures of the last 7 days before now", async () => {
    const byName = new Map((await list({})).body.tests.map((t) => [t.name, t]));
    const many = byName.get("many");
    expect(many).toMatchObject({
      failure_rate_last_7d: 1,
      failure_rate_last_24h: 1,
      pull_requests_impacted_last_7d: 2,
      quarantined: false,
      variant: "",
    });
    expect(many?.most_common_failures).toEqual([
      {
        summary: "expected true to be false",
        occurrence_count: 3,
        last_occurrence: iso(at("09:15")),
      },
    ]);
    // rate: failed once (PR 101), passed three times (one two days ago), skipped once.
    expect(byName.get("rate")).toMatchObject({
      failure_rate_last_7d: 1 / 4,
      failure_rate_last_24h: 1 / 3,
      pull_requests_impacted_last_7d: 1,
    });
    expect(byName.get("rate")?.most_common_failures).toEqual([
      { summary: "timeout after 5000 ms", occurrence_count: 1, last_occurrence: iso(at("08:10")) },
    ]);
    // Infrastructure failure: listed as failing, but excluded from rates, PRs and failure groups.
    expect(byName.get("infra_0")).toMatchObject({
      failure_rate_last_7d: 0,
      failure_rate_last_24h: 0,
      pull_requests_impacted_last_7d: 0,
      most_common_failures: [],
      status: { value: "healthy" },
    });
  });

  it("walks every row once with next_page_token, and back with prev_page_token", async () => {
    const expected = expectedOrder(WINDOW_COUNTS, idOf);
    const seen: string[] = [];
    const pages: Page[] = [];
    let token = "";
    for (;;) {
      const answer = await list({}, { page_size: 5, page_token: token });
      expect(answer.status, answer.text).toBe(200);
      seen.push(...answer.body.tests.map((t) => t.name));
      pages.push(answer.body.page);
      token = answer.body.page.next_page_token;
      if (token === "") break;
    }
    expect(seen).toEqual(expected);
    expect(pages.map((p) => p.page_index)).toEqual([0, 1, 2, 3]);
    expect(pages.map((p) => [p.total_rows, p.total_pages])).toEqual(
      Array.from({ length: 4 }, () => [16, 4]),
    );
    expect(pages[0]?.prev_page_token).toBe("");
    expect(pages.every((p) => p.last_page_token !== "")).toBe(true);

    const last = await list({}, { page_size: 5, page_token: pages[0]?.last_page_token });
    expect(last.body.page.page_index).toBe(3);
    expect(last.body.tests.map((t) => t.name)).toEqual(expected.slice(15));
    expect(last.body.page.next_page_token).toBe("");
    const back = await list({}, { page_size: 5, page_token: last.body.page.prev_page_token });
    expect(back.body.page.page_index).toBe(2);
    expect(back.body.tests.map((t) => t.name)).toEqual(expected.slice(10, 15));
  });

  it("answers an empty window with zeros and empty tokens", async () => {
    const answer = await list({ start_time: iso(DAY0 - 3 * DAY), end_time: iso(DAY0 - 2 * DAY) });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ tests: [], page: EMPTY_PAGE });
  });

  it("accepts a window of exactly 7 days; refuses a longer, an empty or a reversed one", async () => {
    const week = await list({ start_time: iso(END - 7 * DAY), end_time: iso(END) });
    expect(week.status, week.text).toBe(200);
    // Every test that failed that day, except at_end.
    expect(week.body.page.total_rows).toBe(17);
    expectInvalid(
      await list({ start_time: iso(END - 7 * DAY - 1), end_time: iso(END) }),
      "invalid_request",
      "end_time",
    );
    expectInvalid(
      await list({ start_time: iso(END), end_time: iso(END) }),
      "invalid_request",
      "start_time",
    );
    expectInvalid(
      await list({ start_time: iso(END + 1), end_time: iso(END) }),
      "invalid_request",
      "start_time",
    );
    expectInvalid(await list({ start_time: "yesterday" }), "invalid_request", "start_time");
    // RFC 3339 allows a leap second; no date library reads it.
    expectInvalid(
      await list({ start_time: "2026-11-20T07:59:60Z" }),
      "invalid_request",
      "start_time",
    );
    // Lowercase separators are RFC 3339 too.
    expect((await list({ start_time: "2026-11-20t07:30:00z" })).body.page.total_rows).toBe(16);
    expectInvalid(await list({ end_time: undefined }), "invalid_request", "end_time");
  });

  it("requires page_size 1..100", async () => {
    for (const page_query of [{ page_size: 0 }, { page_size: 101 }, {}, { page_size: 2.5 }]) {
      expectInvalid(await list({}, page_query), "invalid_request", "page_query.page_size");
    }
    expectInvalid(await list({ page_query: undefined }), "invalid_request", "page_query");
    expect((await list({}, { page_size: 1 })).body.tests).toHaveLength(1);
    expect((await list({}, { page_size: 100, page_token: "" })).body.page.page_index).toBe(0);
  });

  it("refuses a page token minted for another query", async () => {
    const token = (await list({}, { page_size: 5 })).body.page.next_page_token;
    expect(token).not.toBe("");
    // Another window.
    expectInvalid(
      await list({ end_time: iso(END + 1) }, { page_size: 5, page_token: token }),
      "invalid_page_token",
    );
    // Another endpoint.
    const other = await server.call<ErrorBody>("flaky-tests/list-quarantined-tests", {
      repo: REPO,
      org_url_slug: "acme",
      page_query: { page_size: 5, page_token: token },
    });
    expectInvalid(other, "invalid_page_token");
    // Tampered.
    expectInvalid(
      await list({}, { page_size: 5, page_token: `${token.slice(0, -2)}AA` }),
      "invalid_page_token",
    );
    expectInvalid(await list({}, { page_size: 5, page_token: "garbage" }), "invalid_page_token");
    // The same window spelled differently is the same query.
    const same = await list(
      { start_time: "2026-11-20T08:30:00.000+01:00" },
      { page_size: 5, page_token: token },
    );
    expect(same.status, same.text).toBe(200);
    expect(same.body.page.page_index).toBe(1);
  });

  it("counts uploads processed after an earlier answer (whole and partial hours)", async () => {
    expect((await list({})).body.page.total_rows).toBe(16);
    // Into hours already read: 08:00 (whole) and 07:30 (partial); `late` is a new test.
    await upload(server, at("11:50"), [
      failAt("two_b", at("08:40")),
      failAt("late", at("07:50")),
      passAt("passes", at("08:40")),
      passAt("passes_2", at("08:40")),
    ]);
    const answer = await list({});
    const late = (await list({ start_time: iso(at("07:50")), end_time: iso(at("07:51")) })).body
      .tests[0];
    expect(late?.name).toBe("late");
    ids.set("late", late?.id ?? "");
    expect(answer.body.tests.map((t) => t.name)).toEqual(
      expectedOrder({ ...WINDOW_COUNTS, two_b: 3, late: 1 }, idOf),
    );
    expect(answer.body.page.total_rows).toBe(17);
  });

  it("refuses a token of another repository, another organization's slug and unknown repositories", async () => {
    const other = { host: "github.com", owner: "acme", name: "other" };
    await upload(
      server,
      at("11:40"),
      [failAt("elsewhere", at("08:00")), passAt("x", at("08:00"))],
      {
        repo: other,
      },
    );
    const elsewhere = await list({ repo: other }, { page_size: 1 });
    expect(elsewhere.body.tests.map((t) => t.name)).toEqual(["elsewhere"]);
    const token = (await list({}, { page_size: 5 })).body.page.next_page_token;
    expectInvalid(
      await list({ repo: other }, { page_size: 5, page_token: token }),
      "invalid_page_token",
    );

    const forbidden = await list({ org_url_slug: "globex" });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.code).toBe("forbidden");
    const missing = await list({ repo: { ...REPO, name: "nope" } });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("not_found");
    const anonymous = await server.call<ErrorBody>(
      "flaky-tests/list-failing-tests",
      {
        repo: REPO,
        org_url_slug: "acme",
        start_time: iso(START),
        end_time: iso(END),
        page_query: { page_size: 1 },
      },
      { token: null },
    );
    expect(anonymous.status).toBe(401);
  });
});

describe(`list-unhealthy-tests and list-quarantined-tests on ${TEST_DIALECT}`, () => {
  const T0 = Date.parse("2026-11-20T12:00:00.000Z");
  const time = movableClock(T0);
  let server: TestServer;
  const ids = new Map<string, string>();
  const idOf = (name: string) => {
    const id = ids.get(name);
    if (id === undefined) throw new Error(`no id for ${name}`);
    return id;
  };
  /** When each flaky test became flaky (the server's clock when its upload was processed). */
  const flakySince = new Map<string, number>();

  const unhealthy = (status: string, page_query: Record<string, unknown> = { page_size: 100 }) =>
    server.call<ListBody>("flaky-tests/list-unhealthy-tests", {
      repo: REPO,
      org_url_slug: "acme",
      status,
      page_query,
    });
  const quarantined = (page_query: Record<string, unknown> = { page_size: 100 }) =>
    server.call<QuarantinedBody>("flaky-tests/list-quarantined-tests", {
      repo: REPO,
      org_url_slug: "acme",
      page_query,
    });

  /** Failed, then passed on the same commit: pass-on-retry makes the tests flaky. */
  async function retried(
    names: readonly CaseSpec[],
    spec: Omit<BundleSpec, "files">,
    clockAt: number,
  ) {
    time.set(clockAt);
    const commit = nextCommit();
    await upload(
      server,
      clockAt - 60_000,
      names.map((c) => ({ ...c, status: "failed" as const })),
      {
        ...spec,
        commit,
      },
    );
    await upload(
      server,
      clockAt,
      names.map((c) => ({ ...c, status: "passed" as const })),
      { ...spec, commit },
    );
    for (const c of names) if (!flakySince.has(c.name)) flakySince.set(c.name, clockAt);
  }

  /** set-quarantine-override, with the server's clock at `at` (the override's time). */
  async function setOverride(name: string, override: string, at: number) {
    time.set(at);
    const answer = await server.call("flaky-tests/set-quarantine-override", {
      repo: REPO,
      org_url_slug: "acme",
      test_id: idOf(name),
      override,
    });
    time.set(T0);
    expect(answer.status, answer.text).toBe(200);
  }

  /** update-test-settings with the quarantine switches. */
  async function quarantineSwitches(quarantining_enabled: boolean, auto_quarantine: boolean) {
    const answer = await server.call("flaky-tests/update-test-settings", {
      repo: REPO,
      org_url_slug: "acme",
      quarantining_enabled,
      auto_quarantine,
    });
    expect(answer.status, answer.text).toBe(200);
    await server.services.worker.idle();
  }

  beforeAll(async () => {
    server = await startTestServer({ clock: time.clock });
    const codeowners = "/src/ @acme/core\n";
    await retried(
      [
        { name: "flaky_a", file: "src/a.test.ts" },
        { name: "flaky_b", classname: "" },
      ],
      { pr: 1, branch: "feature/one", codeowners },
      T0 - 5 * HOUR,
    );
    await retried(
      [{ name: "flaky_a", file: "src/a.test.ts" }, { name: "flaky_c" }],
      { pr: 2, branch: "feature/two" },
      T0 - 4 * HOUR,
    );
    await retried(
      [{ name: "flaky_a", file: "src/a.test.ts" }],
      { pr: 3, branch: "feature/three" },
      T0 - 3 * HOUR,
    );
    await retried([{ name: "flaky_d" }], { branch: "main" }, T0 - 2 * HOUR);
    // A failure of flaky_b on PR 9 eight days ago is out of the 7 days.
    time.set(T0 - HOUR);
    await upload(server, T0 - 8 * DAY, [{ name: "flaky_b", classname: "", status: "failed" }], {
      pr: 9,
      branch: "feature/old",
    });
    // Broken: 5 failed runs out of 5 on main within 24 h; broken_y also failed on PR 7.
    for (let i = 0; i < 5; i++) {
      await upload(server, T0 - HOUR + i * 60_000, [
        { name: "broken_x", status: "failed" },
        { name: "broken_y", status: "failed" },
        { name: "healthy" },
      ]);
    }
    await upload(server, T0 - 30 * 60_000, [{ name: "broken_y", status: "failed" }], {
      pr: 7,
      branch: "feature/seven",
    });
    time.set(T0);

    // Test ids by name, read from the database (`healthy` never failed, so no list has it yet).
    const repository = await server.services.database.db
      .selectFrom("repositories")
      .select("id")
      .where("name", "=", REPO.name)
      .executeTakeFirstOrThrow();
    const tests = await server.services.database.db
      .selectFrom("testCases")
      .select(["id", "name"])
      .where("repositoryId", "=", repository.id)
      .execute();
    for (const test of tests) ids.set(test.name, test.id);
  });
  afterAll(async () => {
    await server.close();
  });

  it("lists flaky tests, most PRs impacted in 7 days first, ties by id", async () => {
    const answer = await unhealthy("FLAKY");
    expect(answer.status, answer.text).toBe(200);
    const prs = { flaky_a: 3, flaky_b: 1, flaky_c: 1, flaky_d: 0 };
    expect(answer.body.tests.map((t) => t.name)).toEqual(expectedOrder(prs, idOf));
    for (const test of answer.body.tests) {
      expect(test.pull_requests_impacted_last_7d).toBe(prs[test.name as keyof typeof prs]);
      expect(test.status.value).toBe("flaky");
      expect(test.quarantined).toBe(true);
      // Unhealthy tests carry no rates and no failure groups.
      expect(test).not.toHaveProperty("failure_rate_last_7d");
      expect(test).not.toHaveProperty("most_common_failures");
    }
    expectSinglePage(answer.body.page, 4);
    // Any letter case.
    expect((await unhealthy("flaky")).body.tests.map((t) => t.name)).toEqual(
      answer.body.tests.map((t) => t.name),
    );
  });

  it("lists broken tests", async () => {
    const answer = await unhealthy("broken");
    expect(answer.status, answer.text).toBe(200);
    expect(
      answer.body.tests.map((t) => [t.name, t.pull_requests_impacted_last_7d, t.status.value]),
    ).toEqual([
      ["broken_y", 1, "broken"],
      ["broken_x", 0, "broken"],
    ]);
    expect(answer.body.tests.every((t) => !t.quarantined)).toBe(true);
  });

  it("refuses other statuses and tokens of another status", async () => {
    expectInvalid(await unhealthy("HEALTHY"), "invalid_request", "status");
    const token = (await unhealthy("FLAKY", { page_size: 1 })).body.page.next_page_token;
    expectInvalid(
      await unhealthy("BROKEN", { page_size: 1, page_token: token }),
      "invalid_page_token",
    );
    // The same filter in another letter case is the same query.
    const next = await unhealthy("Flaky", { page_size: 1, page_token: token });
    expect(next.status, next.text).toBe(200);
    expect(next.body.page.page_index).toBe(1);
    const walked: string[] = [];
    let page = "";
    do {
      const answer = await unhealthy("FLAKY", { page_size: 3, page_token: page });
      walked.push(...answer.body.tests.map((t) => t.name));
      page = answer.body.page.next_page_token;
    } while (page !== "");
    expect(walked).toEqual((await unhealthy("FLAKY")).body.tests.map((t) => t.name));
  });

  it("lists quarantined tests, most recently quarantined first, with their setting", async () => {
    await setOverride("healthy", "ALWAYS_QUARANTINE", T0 - 10 * 60_000);
    await setOverride("broken_x", "ALWAYS_QUARANTINE", T0 - 3 * DAY);
    await setOverride("flaky_c", "NEVER_QUARANTINE", T0 - 20 * 60_000);
    const answer = await quarantined();
    expect(answer.status, answer.text).toBe(200);
    const rows = answer.body.quarantined_tests;
    // flaky_a and flaky_b became flaky together: ties by id.
    const [first, second] = [idOf("flaky_a"), idOf("flaky_b")].sort();
    expect(rows.map((r) => r.test_case_id)).toEqual([
      idOf("healthy"),
      idOf("flaky_d"),
      first,
      second,
      idOf("broken_x"),
    ]);
    const byName = new Map(rows.map((r) => [r.name, r]));
    expect(byName.get("healthy")).toMatchObject({
      quarantine_setting: "ALWAYS_QUARANTINE",
      status: "HEALTHY",
      quarantined_at: iso(T0 - 10 * 60_000),
    });
    expect(byName.get("broken_x")).toMatchObject({
      quarantine_setting: "ALWAYS_QUARANTINE",
      status: "BROKEN",
      quarantined_at: iso(T0 - 3 * DAY),
    });
    expect(byName.get("flaky_d")).toMatchObject({
      quarantine_setting: "AUTO_QUARANTINE",
      status: "FLAKY",
      quarantined_at: iso(flakySince.get("flaky_d") ?? 0),
      status_last_updated_at: iso(flakySince.get("flaky_d") ?? 0),
    });
    expect(byName.get("flaky_a")).toEqual({
      name: "flaky_a",
      parent: "suite",
      file: "src/a.test.ts",
      classname: "pkg.Class",
      codeowners: ["@acme/core"],
      quarantined_at: iso(T0 - 5 * HOUR),
      status_last_updated_at: iso(T0 - 5 * HOUR),
      test_case_id: idOf("flaky_a"),
      variant: "",
      quarantine_setting: "AUTO_QUARANTINE",
      status: "FLAKY",
    });
    expect(byName.get("flaky_b")).toMatchObject({ file: null, classname: null, codeowners: [] });
    expectSinglePage(answer.body.page, 5);
  });

  it("follows the repository's quarantine settings; an offset past the end is an empty page", async () => {
    const last = (await quarantined({ page_size: 1 })).body.page.last_page_token;
    try {
      // Auto quarantine off: only the ALWAYS overrides.
      await quarantineSwitches(true, false);
      const overrides = await quarantined();
      expect(overrides.body.quarantined_tests.map((r) => r.name)).toEqual(["healthy", "broken_x"]);
      // A token for the 5th row, now that there are 2: no rows, right totals.
      const beyond = await quarantined({ page_size: 1, page_token: last });
      expect(beyond.status, beyond.text).toBe(200);
      expect(beyond.body.quarantined_tests).toEqual([]);
      expect(beyond.body.page).toMatchObject({
        total_rows: 2,
        total_pages: 2,
        next_page_token: "",
      });
      expect(beyond.body.page.last_page_token).not.toBe("");
      // Quarantining off: nothing.
      await quarantineSwitches(false, true);
      expect((await quarantined()).body).toEqual({ quarantined_tests: [], page: EMPTY_PAGE });
      const empty = await quarantined({ page_size: 1, page_token: last });
      expect(empty.body).toEqual({ quarantined_tests: [], page: EMPTY_PAGE });
    } finally {
      await quarantineSwitches(true, true);
    }
    expect((await quarantined()).body.page.total_rows).toBe(5);
  });

  it("pages the quarantined list and binds its tokens", async () => {
    const all = (await quarantined()).body.quarantined_tests.map((r) => r.test_case_id);
    const walked: string[] = [];
    let token = "";
    do {
      const answer = await quarantined({ page_size: 2, page_token: token });
      expect(answer.status, answer.text).toBe(200);
      walked.push(...answer.body.quarantined_tests.map((r) => r.test_case_id));
      token = answer.body.page.next_page_token;
    } while (token !== "");
    expect(walked).toEqual(all);
    const qToken = (await quarantined({ page_size: 2 })).body.page.next_page_token;
    expectInvalid(
      await unhealthy("FLAKY", { page_size: 2, page_token: qToken }),
      "invalid_page_token",
    );
    for (const page_size of [0, 101]) {
      expectInvalid(await quarantined({ page_size }), "invalid_request", "page_query.page_size");
    }
  });
});
