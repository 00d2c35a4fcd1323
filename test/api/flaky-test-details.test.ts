import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, testIdOf } from "../helpers/uploads.js";

/**
 * A test's details, run history, quarantine override, ticket, and the repository's settings,
 * over real HTTP with data uploaded through the uploader's protocol.
 */

interface ErrorBody {
  error: { code: string; message: string; details?: { path: string; message: string }[] };
}
interface Page {
  total_rows: number;
  total_pages: number;
  next_page_token: string;
  prev_page_token: string;
  last_page_token: string;
  page_index: number;
}
interface Run {
  at: string;
  status: string;
  attempt: string;
  commit_sha: string;
  branch: string;
  pr_number: number | null;
  duration_ms: number | null;
  upload_id: string;
  failure_summary: string | null;
  failure_text: string | null;
  infrastructure_failure: boolean;
}
interface Quarantine {
  setting: string | null;
  override: string;
  override_actor: string | null;
  override_reason: string | null;
  override_at: string | null;
}
interface Details {
  test: {
    id: string;
    name: string;
    status: { value: string; reason: string; timestamp: string };
    quarantined: boolean;
    failure_rate_last_7d: number;
    failure_rate_last_24h: number;
    pull_requests_impacted_last_7d: number;
    most_common_failures: { summary: string; occurrence_count: number }[];
    ticket?: { html_url: string };
    html_url: string;
    quarantine: Quarantine;
  };
  status_history: {
    status: string;
    reason: string;
    at: string;
    kind: string;
    actor: string | null;
  }[];
  monitors: {
    id: string;
    classification: string | null;
    active: boolean;
    reason: string;
    changed_at: string;
  }[];
}

const ORG = { repo: REPO, org_url_slug: "acme" };
const COMMIT_A = "aa".repeat(20);

let server: TestServer;
let tokenId: string;
const ids = { flip: "", steady: "", paged: "" };

async function details(testId: string) {
  const answer = await server.call<Details>("flaky-tests/get-test-details", {
    ...ORG,
    test_id: testId,
  });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

async function quarantineConfig() {
  const answer = await server.call<{ isDisabled: boolean; testIds: string[] }>(
    "metrics/getQuarantineConfig",
    { repo: REPO, orgUrlSlug: "acme" },
  );
  expect(answer.status).toBe(200);
  return answer.body;
}

async function updateSettings(patch: Record<string, unknown>) {
  return server.call<Record<string, unknown> & ErrorBody>("flaky-tests/update-test-settings", {
    ...ORG,
    ...patch,
  });
}

function expectError(
  answer: { status: number; body: unknown },
  status: number,
  code: string,
  path?: string,
) {
  expect(answer.status).toBe(status);
  const body = answer.body as ErrorBody;
  expect(body.error.code).toBe(code);
  if (path !== undefined) {
    expect(body.error.details?.map((d) => d.path)).toContain(path);
  }
  return body.error;
}

beforeAll(async () => {
  server = await startTestServer();
  tokenId = (await server.call<{ tokenId: string }>("whoami", {})).body.tokenId;
  // flip fails and passes on the same commit (pass-on-retry: flaky); steady always passes.
  await ingest(
    server,
    await bundle({
      commit: COMMIT_A,
      branch: "feature/login",
      pr: 7,
      files: [
        junit([
          { name: "flip", status: "failed", message: "timeout after 5000 ms" },
          { name: "steady" },
          { name: "paged" },
        ]),
      ],
    }),
  );
  await ingest(
    server,
    await bundle({
      commit: COMMIT_A,
      branch: "feature/login",
      pr: 7,
      files: [junit([{ name: "flip" }, { name: "steady" }])],
    }),
  );
  // paged: many runs, several per upload (retries) and sharing upload times.
  for (let i = 0; i < 4; i += 1) {
    await ingest(
      server,
      await bundle({
        commit: `${i}b`.repeat(20),
        branch: "main",
        files: [
          junit([
            { name: "paged", status: i % 2 === 0 ? "failed" : "passed", flakyFailures: i },
            { name: "steady", status: "skipped" },
          ]),
        ],
      }),
    );
  }
  ids.flip = testIdOf({ name: "flip" });
  ids.steady = testIdOf({ name: "steady" });
  ids.paged = testIdOf({ name: "paged" });
});

afterAll(async () => {
  await server.close();
});

describe("get-test-details", () => {
  it("shows the test with its figures, quarantine, history and monitors", async () => {
    const body = await details(ids.flip);
    expect(body.test).toMatchObject({
      id: ids.flip,
      name: "flip",
      status: { value: "flaky" },
      quarantined: true,
      failure_rate_last_7d: 0.5,
      pull_requests_impacted_last_7d: 1,
    });
    expect(Object.keys(body.test).sort()).toEqual([
      "classname",
      "codeowners",
      "failure_rate_last_24h",
      "failure_rate_last_7d",
      "file_path",
      "html_url",
      "id",
      "most_common_failures",
      "name",
      "parent",
      "pull_requests_impacted_last_7d",
      "quarantine",
      "quarantined",
      "repository",
      "status",
      "variant",
    ]);
    expect(body.test.status.reason).toMatch(/same commit aaaaaaa/);
    expect(body.test.most_common_failures).toHaveLength(1);
    expect(body.test.most_common_failures[0]?.summary).toMatch(/timeout/);
    expect(body.test.html_url).toContain(`/acme/flaky-tests/test/${ids.flip}?repo=acme/app`);
    expect(body.test.quarantine).toEqual({
      setting: "AUTO_QUARANTINE",
      override: "UNSPECIFIED",
      override_actor: null,
      override_reason: null,
      override_at: null,
    });
    expect(body.status_history[0]).toMatchObject({ kind: "status", status: "flaky", actor: null });
    expect(body.status_history[0]?.reason).toBe(body.test.status.reason);
    const retry = body.monitors.find((m) => m.id === "pass-on-retry");
    expect(retry).toMatchObject({ active: true, classification: "flaky" });
    expect(body.monitors[0]?.id).toBe("pass-on-retry");
    expect(body.monitors.map((m) => m.id)).toContain("flaky-on-stable");
  });

  it("accepts the id in upper case", async () => {
    const body = await details(ids.steady.toUpperCase());
    expect(body.test).toMatchObject({ id: ids.steady, status: { value: "healthy" } });
    expect(body.test.quarantine.setting).toBeNull();
  });

  it("answers 404 for an unknown test, 400 for a malformed id", async () => {
    expectError(
      await server.call("flaky-tests/get-test-details", { ...ORG, test_id: randomUUID() }),
      404,
      "not_found",
    );
    expectError(
      await server.call("flaky-tests/get-test-details", { ...ORG, test_id: "nope" }),
      400,
      "invalid_request",
      "test_id",
    );
    expectError(
      await server.call("flaky-tests/get-test-details", { ...ORG }),
      400,
      "invalid_request",
      "test_id",
    );
  });

  it("answers 403 for another organization, 404 for an unknown repository, 401 without token", async () => {
    const body = { ...ORG, test_id: ids.flip };
    expectError(
      await server.call("flaky-tests/get-test-details", { ...body, org_url_slug: "other" }),
      403,
      "forbidden",
    );
    expectError(
      await server.call("flaky-tests/get-test-details", {
        ...body,
        repo: { ...REPO, name: "missing" },
      }),
      404,
      "not_found",
    );
    expectError(
      await server.call("flaky-tests/get-test-details", body, { token: null }),
      401,
      "unauthorized",
    );
  });
});

describe("list-test-runs", () => {
  async function runs(testId: string, page_size: number, page_token?: string) {
    return server.call<{ runs: Run[]; page: Page } & ErrorBody>("flaky-tests/list-test-runs", {
      ...ORG,
      test_id: testId,
      page_query: { page_size, ...(page_token !== undefined ? { page_token } : {}) },
    });
  }

  it("pages through every run exactly once, newest first", async () => {
    const all = await runs(ids.paged, 100);
    expect(all.status).toBe(200);
    // 1 + (1+0) + (1+1) + (1+2) + (1+3) attempts.
    expect(all.body.page.total_rows).toBe(11);
    expect(all.body.runs).toHaveLength(11);
    const times = all.body.runs.map((r) => Date.parse(r.at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(new Set(all.body.runs.map((r) => r.upload_id)).size).toBe(5);
    expect(all.body.runs.filter((r) => r.attempt === "flaky")).toHaveLength(6);
    const failed = all.body.runs.find((r) => r.status === "failed");
    expect(failed?.failure_summary).toBeTruthy();
    expect(failed?.failure_text).toContain("expected true to be false");
    expect(all.body.runs.at(-1)).toMatchObject({
      branch: "feature/login",
      pr_number: 7,
      commit_sha: COMMIT_A,
      status: "passed",
      infrastructure_failure: false,
    });

    const walked: Run[] = [];
    let token: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await runs(ids.paged, 3, token);
      expect(page.status).toBe(200);
      expect(page.body.page).toMatchObject({ total_rows: 11, total_pages: 4, page_index: pages });
      walked.push(...page.body.runs);
      pages += 1;
      if (page.body.page.next_page_token === "") break;
      token = page.body.page.next_page_token;
    }
    expect(pages).toBe(4);
    expect(walked).toEqual(all.body.runs);
  });

  it("counts skipped runs too", async () => {
    const answer = await runs(ids.steady, 100);
    expect(answer.status).toBe(200);
    expect(answer.body.page.total_rows).toBe(6);
    expect(answer.body.runs.filter((r) => r.status === "skipped")).toHaveLength(4);
  });

  it("leaves out runs of uploads not yet processed", async () => {
    const { db } = server.services.database;
    const repository = await db
      .selectFrom("repositories")
      .select(["id", "organizationId"])
      .where("lookupKey", "=", "github.com/acme/app")
      .executeTakeFirstOrThrow();
    const test = await server.services.stores.testViews.findById(repository.id, ids.paged);
    if (!test) throw new Error("no test");
    const now = Date.now();
    const upload = await db
      .insertInto("uploads")
      .values({
        id: randomUUID(),
        organizationId: repository.organizationId,
        repositoryId: repository.id,
        state: "processing",
        commitSha: "f".repeat(40),
        createdAt: now,
        urlExpiresAt: now,
      })
      .returning("key")
      .executeTakeFirstOrThrow();
    await db
      .insertInto("testRuns")
      .values({
        testKey: test.key,
        uploadKey: upload.key,
        fileIndex: 0,
        at: now + 60_000,
        status: "failed",
        attempt: "final",
      })
      .execute();
    try {
      const answer = await runs(ids.paged, 100);
      expect(answer.body.page.total_rows).toBe(11);
      expect(answer.body.runs.some((r) => r.commit_sha === "f".repeat(40))).toBe(false);
    } finally {
      await db.deleteFrom("testRuns").where("uploadKey", "=", upload.key).execute();
      await db.deleteFrom("uploads").where("key", "=", upload.key).execute();
    }
  });

  it("refuses a tampered token or one minted for another test", async () => {
    const first = await runs(ids.paged, 2);
    const next = first.body.page.next_page_token;
    expectError(await runs(ids.steady, 2, next), 400, "invalid_page_token");
    expectError(await runs(ids.paged, 2, `${next}x`), 400, "invalid_page_token");
    expectError(await runs(ids.paged, 2, "garbage"), 400, "invalid_page_token");
  });

  it("validates the page size and answers 404 for an unknown test", async () => {
    expectError(await runs(ids.paged, 0), 400, "invalid_request", "page_query.page_size");
    expectError(await runs(ids.paged, 101), 400, "invalid_request", "page_query.page_size");
    expectError(await runs(randomUUID(), 10), 404, "not_found");
    expectError(
      await server.call("flaky-tests/list-test-runs", {
        ...ORG,
        org_url_slug: "other",
        test_id: ids.paged,
        page_query: { page_size: 10 },
      }),
      403,
      "forbidden",
    );
  });
});

describe("set-quarantine-override", () => {
  async function override(testId: string, body: Record<string, unknown>) {
    return server.call<Quarantine & { test_id: string; quarantined: boolean } & ErrorBody>(
      "flaky-tests/set-quarantine-override",
      { ...ORG, test_id: testId, ...body },
    );
  }

  it("always-quarantines a healthy test, keeps who, why and when, and reaches the uploader", async () => {
    expect((await quarantineConfig()).testIds).not.toContain(ids.steady);
    const answer = await override(ids.steady, {
      override: "always_quarantine",
      reason: "  hides a race in CI  ",
      actor: "alice@example.com",
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({
      test_id: ids.steady,
      quarantined: true,
      setting: "ALWAYS_QUARANTINE",
      override: "ALWAYS_QUARANTINE",
      override_actor: "alice@example.com",
      override_reason: "hides a race in CI",
    });
    expect(Date.parse(answer.body.override_at ?? "")).toBeGreaterThan(Date.now() - 60_000);
    expect((await quarantineConfig()).testIds).toContain(ids.steady);

    const body = await details(ids.steady);
    expect(body.test.quarantined).toBe(true);
    expect(body.test.quarantine.override_actor).toBe("alice@example.com");
    expect(body.status_history[0]).toMatchObject({
      kind: "override",
      status: "healthy",
      actor: "alice@example.com",
    });
    expect(body.status_history[0]?.reason).toMatch(/ALWAYS_QUARANTINE: hides a race in CI/);
  });

  it("never-quarantines a flaky test, by default in the token's name", async () => {
    expect((await quarantineConfig()).testIds).toContain(ids.flip);
    const answer = await override(ids.flip, { override: "Never_Quarantine" });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      quarantined: false,
      setting: null,
      override: "NEVER_QUARANTINE",
      override_actor: `token:${tokenId}`,
      override_reason: null,
    });
    expect((await quarantineConfig()).testIds).not.toContain(ids.flip);

    const back = await override(ids.flip, { override: "UNSPECIFIED", reason: "" });
    expect(back.body).toMatchObject({
      quarantined: true,
      setting: "AUTO_QUARANTINE",
      override: "UNSPECIFIED",
    });
    expect((await quarantineConfig()).testIds).toContain(ids.flip);
    const history = (await details(ids.flip)).status_history;
    expect(history.slice(0, 2).map((h) => h.kind)).toEqual(["override", "override"]);
    expect(history.some((h) => h.kind === "status")).toBe(true);
  });

  it("validates the override, the reason and the actor", async () => {
    expectError(
      await override(ids.flip, { override: "sometimes" }),
      400,
      "invalid_request",
      "override",
    );
    expectError(await override(ids.flip, {}), 400, "invalid_request", "override");
    expectError(
      await override(ids.flip, { override: "UNSPECIFIED", reason: "x".repeat(501) }),
      400,
      "invalid_request",
      "reason",
    );
    expectError(
      await override(ids.flip, { override: "UNSPECIFIED", actor: "" }),
      400,
      "invalid_request",
      "actor",
    );
    expectError(await override(randomUUID(), { override: "UNSPECIFIED" }), 404, "not_found");
    expectError(
      await server.call("flaky-tests/set-quarantine-override", {
        ...ORG,
        org_url_slug: "other",
        test_id: ids.flip,
        override: "UNSPECIFIED",
      }),
      403,
      "forbidden",
    );
  });
});

describe("link-ticket-to-test-case", () => {
  async function link(external_ticket_id: unknown, extra: Record<string, unknown> = {}) {
    return server.call<{ test_case_id: string; ticket: { html_url: string } | null } & ErrorBody>(
      "flaky-tests/link-ticket-to-test-case",
      { ...ORG, test_case_id: ids.paged, external_ticket_id, ...extra },
    );
  }

  it("refuses a bare id until the repository has a ticket base URL", async () => {
    const error = expectError(await link("KAN-123"), 400, "invalid_request", "external_ticket_id");
    expect(error.message).toMatch(/ticket_base_url/);
    expect(error.message).toMatch(/update-test-settings/);
    expect((await details(ids.paged)).test.ticket).toBeUndefined();
  });

  it("links a URL as is, and records who linked it", async () => {
    const url = "https://jira.example.com/browse/KAN-7";
    const answer = await link(url);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ test_case_id: ids.paged, ticket: { html_url: url } });
    const body = await details(ids.paged);
    expect(body.test.ticket).toEqual({ html_url: url });
    expect(body.status_history[0]).toMatchObject({ kind: "ticket", actor: `token:${tokenId}` });
    expect(body.status_history[0]?.reason).toContain("KAN-7");
  });

  it("links a bare id under the base URL, without org_url_slug as Trunk's clients send it", async () => {
    const set = await updateSettings({ ticket_base_url: "https://linear.app/acme/issue/" });
    expect(set.status, set.text).toBe(200);
    const answer = await server.call<{ ticket: { html_url: string } }>(
      "flaky-tests/link-ticket-to-test-case",
      { repo: REPO, test_case_id: ids.paged, external_ticket_id: " ENG-42 " },
    );
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.ticket).toEqual({ html_url: "https://linear.app/acme/issue/ENG-42" });
    const body = await details(ids.paged);
    expect(body.test.ticket).toEqual({ html_url: "https://linear.app/acme/issue/ENG-42" });
    expect(body.status_history[0]?.reason).toMatch(/ENG-42.*replacing.*KAN-7/);

    // Linking the same ticket again changes and records nothing.
    const before = body.status_history.length;
    expect((await link("ENG-42")).status).toBe(200);
    expect((await details(ids.paged)).status_history).toHaveLength(before);
  });

  it("unlinks with null", async () => {
    const answer = await link(null);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ test_case_id: ids.paged, ticket: null });
    const body = await details(ids.paged);
    expect(body.test.ticket).toBeUndefined();
    expect(body.status_history[0]).toMatchObject({ kind: "ticket" });
    expect(body.status_history[0]?.reason).toMatch(/Unlinked ticket ENG-42/);
    expect((await updateSettings({ ticket_base_url: null })).status).toBe(200);
  });

  it("refuses empty, blank and malformed ids, other organizations and unknown tests", async () => {
    expectError(await link(""), 400, "invalid_request", "external_ticket_id");
    expectError(await link("   "), 400, "invalid_request", "external_ticket_id");
    expectError(await link("https://"), 400, "invalid_request", "external_ticket_id");
    expectError(await link(42), 400, "invalid_request", "external_ticket_id");
    expectError(await link("KAN-1", { org_url_slug: "other" }), 403, "forbidden");
    expectError(await link("KAN-1", { test_case_id: randomUUID() }), 404, "not_found");
    expectError(await link("KAN-1", { repo: { ...REPO, owner: "nobody" } }), 404, "not_found");
  });
});

describe("test settings", () => {
  it("reads the defaults of docs/contract.md §3 for a repository never written", async () => {
    const fresh = { ...REPO, name: "fresh" };
    expect((await server.call("createQueue", { repo: fresh, targetBranch: "main" })).status).toBe(
      200,
    );
    const answer = await server.call("flaky-tests/get-test-settings", {
      ...ORG,
      repo: fresh,
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      stable_branches: ["main", "master"],
      merge_queue_branches: ["mainline-merge/*", "trunk-merge/*", "gh-readonly-queue/*", "gtmq_*"],
      pass_on_retry: { enabled: true, recovery_days: 7 },
      failure_rate_monitors: [
        {
          id: "broken-on-stable",
          enabled: true,
          classification: "broken",
          scope: "stable",
          window_hours: 24,
          activation: 0.9,
          resolution: 0.5,
          min_runs: 5,
        },
        {
          id: "flaky-on-stable",
          enabled: true,
          classification: "flaky",
          scope: "stable",
          window_hours: 24,
          activation: 0.2,
          resolution: 0.1,
          min_runs: 10,
        },
        {
          id: "flaky-in-merge-queue",
          enabled: true,
          classification: "flaky",
          scope: "merge_queue",
          window_hours: 12,
          activation: 0.15,
          resolution: 0.05,
          min_runs: 5,
        },
      ],
      failure_count_monitors: [],
      quarantining_enabled: true,
      auto_quarantine: true,
      ticket_base_url: null,
      pull_request_comments: false,
      ticket_connection_id: null,
      auto_ticket: { flaky: false, broken: false, after_hours: 24, require_owner: true },
      updated_at: null,
    });
  });

  it("changes only the fields given, case-insensitively, and reads them back", async () => {
    const answer = await updateSettings({
      stable_branches: ["main", "release/*"],
      pass_on_retry: { recovery_days: 3 },
      failure_count_monitors: [
        {
          id: "broken-streak",
          enabled: true,
          classification: "BROKEN",
          scope: { globs: ["release/*"] },
          failures: 3,
          window_hours: 6,
          resolution_hours: 12,
        },
      ],
      unknown_field: "ignored",
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({
      stable_branches: ["main", "release/*"],
      pass_on_retry: { enabled: true, recovery_days: 3 },
      failure_count_monitors: [
        {
          id: "broken-streak",
          enabled: true,
          classification: "broken",
          scope: { globs: ["release/*"] },
          failures: 3,
          window_hours: 6,
          resolution_hours: 12,
        },
      ],
      quarantining_enabled: true,
    });
    expect(answer.body).not.toHaveProperty("unknown_field");
    expect((answer.body.failure_rate_monitors as unknown[]).length).toBe(3);
    const read = await server.call("flaky-tests/get-test-settings", ORG);
    expect(read.body).toEqual(answer.body);

    const scoped = await updateSettings({
      failure_rate_monitors: [
        {
          id: "flaky-anywhere",
          enabled: false,
          classification: "Flaky",
          scope: "ANY",
          window_hours: 48,
          activation: 0.5,
          resolution: 0.5,
          min_runs: 20,
        },
      ],
    });
    expect(scoped.status, scoped.text).toBe(200);
    expect(scoped.body.failure_rate_monitors).toEqual([
      {
        id: "flaky-anywhere",
        enabled: false,
        classification: "flaky",
        scope: "any",
        window_hours: 48,
        activation: 0.5,
        resolution: 0.5,
        min_runs: 20,
      },
    ]);
    expect(scoped.body.stable_branches).toEqual(["main", "release/*"]);
  });

  it("names every problem of an invalid update and changes nothing", async () => {
    const before = await server.call("flaky-tests/get-test-settings", ORG);
    const monitor = {
      id: "m",
      enabled: true,
      classification: "flaky",
      scope: "stable",
      window_hours: 24,
      activation: 0.5,
      resolution: 0.2,
      min_runs: 5,
    };
    expectError(
      await updateSettings({ failure_rate_monitors: [{ ...monitor, activation: 1.5 }] }),
      400,
      "invalid_request",
      "failure_rate_monitors[0].activation",
    );
    expectError(
      await updateSettings({ failure_rate_monitors: [{ ...monitor, window_hours: 0 }] }),
      400,
      "invalid_request",
      "failure_rate_monitors[0].window_hours",
    );
    expectError(
      await updateSettings({ failure_rate_monitors: [{ ...monitor, window_hours: 721 }] }),
      400,
      "invalid_request",
      "failure_rate_monitors[0].window_hours",
    );
    expectError(
      await updateSettings({ failure_rate_monitors: [{ ...monitor, scope: "nightly" }] }),
      400,
      "invalid_request",
    );
    const cross = expectError(
      await updateSettings({
        failure_rate_monitors: [{ ...monitor, resolution: 0.6 }, monitor],
        failure_count_monitors: [
          {
            id: "pass-on-retry",
            enabled: true,
            classification: "flaky",
            scope: "any",
            failures: 2,
            window_hours: 24,
            resolution_hours: 12,
          },
        ],
      }),
      400,
      "invalid_request",
    );
    expect(cross.details?.map((d) => d.path).sort()).toEqual([
      "failure_count_monitors[0].id",
      "failure_count_monitors[0].resolution_hours",
      "failure_rate_monitors[0].resolution",
      "failure_rate_monitors[1].id",
    ]);
    expect(cross.message).toMatch(/and 3 more problems/);
    expectError(
      await updateSettings({ ticket_base_url: "ftp://tickets.example.com/" }),
      400,
      "invalid_request",
      "ticket_base_url",
    );
    expectError(
      await updateSettings({ ticket_base_url: "https://" }),
      400,
      "invalid_request",
      "ticket_base_url",
    );
    expectError(
      await updateSettings({ stable_branches: "main" }),
      400,
      "invalid_request",
      "stable_branches",
    );
    expectError(
      await updateSettings({ pass_on_retry: { recovery_days: 0 } }),
      400,
      "invalid_request",
      "pass_on_retry.recovery_days",
    );
    expectError(
      await updateSettings({ quarantining_enabled: "no" }),
      400,
      "invalid_request",
      "quarantining_enabled",
    );
    expect((await server.call("flaky-tests/get-test-settings", ORG)).body).toEqual(before.body);
  });

  it("quarantining_enabled false disables quarantine for the uploader", async () => {
    expect(await quarantineConfig()).toMatchObject({ isDisabled: false });
    const off = await updateSettings({ quarantining_enabled: false });
    expect(off.status).toBe(200);
    expect(await quarantineConfig()).toEqual({ isDisabled: true, testIds: [] });
    expect((await details(ids.flip)).test.quarantined).toBe(false);
    expect((await updateSettings({ quarantining_enabled: true })).status).toBe(200);
    expect((await quarantineConfig()).testIds).toContain(ids.flip);
  });

  it("auto_quarantine false leaves flaky tests out, overrides still count", async () => {
    expect((await updateSettings({ auto_quarantine: false })).status).toBe(200);
    const config = await quarantineConfig();
    expect(config.isDisabled).toBe(false);
    expect(config.testIds).not.toContain(ids.flip);
    expect(config.testIds).toContain(ids.steady); // ALWAYS_QUARANTINE, set above
    const flip = await details(ids.flip);
    expect(flip.test.quarantine.setting).toBeNull();
    expect(flip.test.quarantined).toBe(false);
    expect((await updateSettings({ auto_quarantine: true })).status).toBe(200);
    expect((await quarantineConfig()).testIds).toContain(ids.flip);
  });

  it("answers 403 for another organization and 404 for an unknown repository", async () => {
    expectError(
      await server.call("flaky-tests/get-test-settings", { ...ORG, org_url_slug: "other" }),
      403,
      "forbidden",
    );
    expectError(
      await updateSettings({ repo: { ...REPO, name: "missing" }, auto_quarantine: false }),
      404,
      "not_found",
    );
    expectError(
      await server.call("flaky-tests/get-test-settings", ORG, { token: "wrong" }),
      401,
      "unauthorized",
    );
  });
});
