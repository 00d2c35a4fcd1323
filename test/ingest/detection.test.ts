import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, putBundle, uploadState } from "../helpers/uploads.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** A clock the test moves; the worker classifies with it. */
const clock = { at: Date.UTC(2026, 10, 20, 12), now: () => clock.at };

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ clock });
});
afterAll(async () => {
  await server.close();
});

let commits = 0;
const nextCommit = () => (++commits).toString(16).padStart(40, "0");

async function testRow(name: string) {
  return server.services.database.db
    .selectFrom("testCases")
    .selectAll()
    .where("name", "=", name)
    .executeTakeFirstOrThrow();
}

async function quarantinedIds(): Promise<string[]> {
  const answer = await server.call<{ testIds: string[] }>("metrics/getQuarantineConfig", {
    repo: REPO,
    orgUrlSlug: "acme",
  });
  return answer.body.testIds;
}

async function history(name: string) {
  const row = await testRow(name);
  return server.services.database.db
    .selectFrom("testStatusHistory")
    .selectAll()
    .where("testKey", "=", row.key)
    .orderBy("at")
    .execute();
}

describe("detection through the upload protocol", () => {
  it("a failure and a pass on the same commit make a test flaky, and auto-quarantine it", async () => {
    const commit = nextCommit();
    clock.at += HOUR;
    await ingest(
      server,
      await bundle({
        commit,
        uploadedAt: clock.at,
        branch: "feature/login",
        pr: 7,
        files: [junit([{ name: "retry_me", status: "failed" }, { name: "steady" }])],
      }),
    );
    expect((await testRow("retry_me")).status).toBe("healthy");
    clock.at += 10 * 60_000;
    await ingest(
      server,
      await bundle({
        commit,
        uploadedAt: clock.at,
        branch: "feature/login",
        pr: 7,
        files: [junit([{ name: "retry_me" }, { name: "steady" }])],
      }),
    );
    const row = await testRow("retry_me");
    expect(row.status).toBe("flaky");
    expect(row.statusReason).toBe(
      `Failed and passed on the same commit ${commit.slice(0, 7)} (branch feature/login, PR #7)`,
    );
    expect(row.statusChangedAt).toBe(clock.at);
    expect((await testRow("steady")).status).toBe("healthy");
    expect(await quarantinedIds()).toEqual([row.id]);
    expect((await history("retry_me")).map((h) => h.status)).toEqual(["flaky"]);
  });

  it("flakyFailure elements are attempts: one upload can show pass-on-retry", async () => {
    clock.at += HOUR;
    await ingest(
      server,
      await bundle({
        commit: nextCommit(),
        uploadedAt: clock.at,
        files: [junit([{ name: "surefire_flake", flakyFailures: 2 }])],
      }),
    );
    expect((await testRow("surefire_flake")).status).toBe("flaky");
  });

  it("failing on every run of main makes a test broken, never auto-quarantined", async () => {
    for (let i = 0; i < 5; i++) {
      clock.at += HOUR;
      await ingest(
        server,
        await bundle({
          commit: nextCommit(),
          uploadedAt: clock.at,
          branch: "main",
          files: [
            junit([
              { name: "always_red", status: "failed", message: `expected ${i} to be 0` },
              { name: "green_one" },
              { name: "green_two" },
            ]),
          ],
        }),
      );
    }
    const row = await testRow("always_red");
    expect(row.status).toBe("broken");
    expect(row.statusReason).toBe("Failure rate 100% (5 of 5 runs) over the last 24 h on main");
    expect(await quarantinedIds()).not.toContain(row.id);
  });

  it("broken resolves below its resolution threshold (hysteresis); a fixed test is not flaky", async () => {
    for (let i = 0; i < 6; i++) {
      clock.at += HOUR;
      await ingest(
        server,
        await bundle({
          commit: nextCommit(),
          uploadedAt: clock.at,
          branch: "main",
          files: [junit([{ name: "always_red" }])],
        }),
      );
      const status = (await testRow("always_red")).status;
      // 5 failures of 6+i runs: 83%, 71% … broken while >= 50% (resolution). Below that the
      // 45% would reach flaky-on-stable's 20% over >= 10 runs, but the failures are one
      // unbroken streak: broken by a commit and fixed by a later one, not flaky (ADR 0020).
      expect(status).toBe(5 / (6 + i) >= 0.5 ? "broken" : "healthy");
    }
    expect((await history("always_red")).map((h) => h.status)).toEqual(["broken", "healthy"]);
  });

  it("failures in the queue's own runs never make a test flaky by rate (the queue judges them)", async () => {
    // A test broken by pull requests: it fails in their queue runs, passes in the others.
    for (const client of ["mainline-ci 1.0.0", "some-ci"]) {
      const name = `broken_by_a_pr_${client.split(" ")[0] ?? ""}`;
      for (let i = 0; i < 10; i++) {
        clock.at += 60_000;
        const body = await bundle({
          commit: nextCommit(),
          uploadedAt: clock.at,
          branch: `mainline-merge/main/run-${String(i)}`,
          files: [junit([{ name, status: i % 4 === 0 ? "failed" : "passed" }])],
        });
        await putBundle(server, body, REPO, client);
        await server.services.worker.idle();
      }
      const expected = client.startsWith("mainline-ci") ? "healthy" : "flaky";
      expect((await testRow(name)).status, client).toBe(expected);
    }
  });

  it("excludes an infrastructure failure (80% of at least 10 runs failed) from detection", async () => {
    clock.at += HOUR;
    const cases = Array.from({ length: 10 }, (_, i) => ({
      name: `infra_${i}`,
      status: i < 9 ? ("failed" as const) : ("passed" as const),
    }));
    const commit = nextCommit();
    const id = await ingest(
      server,
      await bundle({ commit, uploadedAt: clock.at, branch: "main", files: [junit(cases)] }),
    );
    expect(await uploadState(server, id)).toMatchObject({
      state: "processed",
      infrastructure_failure: true,
      tests_failed: 9,
    });
    // A pass on the same commit would be a pass-on-retry if the outage counted.
    await ingest(
      server,
      await bundle({
        commit,
        uploadedAt: clock.at + 1000,
        branch: "main",
        files: [junit(cases.map((c) => ({ name: c.name })))],
      }),
    );
    expect((await testRow("infra_0")).status).toBe("healthy");
  });

  it("a change of monitor settings re-classifies the repository's tests at once", async () => {
    for (let i = 0; i < 12; i++) {
      clock.at += 10 * 60_000;
      const status = i === 0 || i === 11 ? ("failed" as const) : ("passed" as const);
      await ingest(
        server,
        await bundle({
          commit: nextCommit(),
          uploadedAt: clock.at,
          branch: "main",
          files: [junit([{ name: "sometimes_red", status }])],
        }),
      );
    }
    // 2 of 12 runs failed (17%): below the default 20% activation.
    expect((await testRow("sometimes_red")).status).toBe("healthy");
    const updated = await server.call("flaky-tests/update-test-settings", {
      repo: REPO,
      org_url_slug: "acme",
      failure_rate_monitors: [
        {
          id: "flaky-on-stable",
          enabled: true,
          classification: "flaky",
          scope: "stable",
          window_hours: 24,
          activation: 0.15,
          resolution: 0.1,
          min_runs: 10,
        },
      ],
    });
    expect(updated.status, updated.text).toBe(200);
    await server.services.worker.idle();
    const row = await testRow("sometimes_red");
    expect(row.status).toBe("flaky");
    expect(row.statusReason).toBe("Failure rate 17% (2 of 12 runs) over the last 24 h on main");
    // Back to the defaults for the tests that follow.
    await server.call("flaky-tests/update-test-settings", {
      repo: REPO,
      org_url_slug: "acme",
      failure_rate_monitors: (
        await server.call<{ failure_rate_monitors: unknown[] }>("flaky-tests/get-test-settings", {
          repo: REPO,
          org_url_slug: "acme",
        })
      ).body.failure_rate_monitors,
    });
  });

  it("a flaky test recovers once pass-on-retry is 7 days old (the sweep)", async () => {
    clock.at += 8 * DAY;
    await server.services.worker.sweep();
    expect((await testRow("retry_me")).status).toBe("healthy");
    expect(await quarantinedIds()).not.toContain((await testRow("retry_me")).id);
  });
});

describe("durability", () => {
  it("a bundle stored while no worker runs is processed when one starts, once", async () => {
    const stopped = await startTestServer({ clock, startWorker: false });
    try {
      const id = await putBundle(
        stopped,
        await bundle({
          uploadedAt: clock.at,
          files: [junit([{ name: "later", status: "failed" }])],
        }),
      );
      expect((await uploadState(stopped, id)).state).toBe("pending");
      // A worker claimed it and died: its lease runs out, another worker takes it over.
      const claimed = await stopped.services.stores.uploads.claimNext(clock.at, clock.at + 1000);
      expect(claimed?.id).toBe(id);
      stopped.services.worker.start();
      clock.at += 2000;
      stopped.services.worker.wake();
      await stopped.services.worker.idle();
      await expect.poll(async () => (await uploadState(stopped, id)).state).toBe("processed");
      const { rows } = await sql<{ n: number }>`select count(*) as n from test_runs`.execute(
        stopped.services.database.db,
      );
      expect(Number(rows[0]?.n)).toBe(1);
    } finally {
      await stopped.close();
    }
  });
});
