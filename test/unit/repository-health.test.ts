import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../src/lib/time.js";
import type { RepositoryHealthRecords, TableTestRow } from "../../src/testhealth/ports.js";
import {
  RepositoryHealthService,
  TABLE_FRESH_MS,
  TABLE_STALE_MS,
} from "../../src/testhealth/repository-health.js";
import type { RepositoryHealth } from "../../src/testhealth/overview.js";

/**
 * The repository page's service over fake storage: what it computes (rates, owners, filters,
 * sorts, pages) and when it reads (the table kept 20 s, answered from while read again up to
 * 60 s, forgotten after a form's change).
 */

const NOW = Date.UTC(2026, 10, 20, 12);
const REPOSITORY = {
  id: "repo-1",
  organizationId: "org-1",
  host: "github.com",
  owner: "acme",
  name: "app",
  createdAt: 0,
};
const PRINCIPAL = { organizationId: "org-1", organizationSlug: "acme", tokenId: "tok" };

function row(key: number, name: string, extra: Partial<TableTestRow> = {}): TableTestRow {
  return {
    key,
    id: `id-${key}`,
    name,
    classname: "pkg.Class",
    parent: "suite",
    file: key % 2 === 0 ? "src/pay/a.test.ts" : "src/ui/b.test.ts",
    variant: "",
    status: "healthy",
    quarantineOverride: "UNSPECIFIED",
    lastRunAt: NOW - 1000,
    lastFailureAt: null,
    ...extra,
  };
}

function setup(rows: TableTestRow[]) {
  let now = NOW;
  const reads: number[] = [];
  let release: (() => void) | undefined;
  let hold = false;
  const records: RepositoryHealthRecords = {
    async tests() {
      reads.push(now);
      if (hold) await new Promise<void>((resolve) => (release = resolve));
      return rows.map((r) => ({ ...r }));
    },
    recentCounts: () =>
      Promise.resolve(
        new Map([
          [1, { passed: 1, failed: 3 }],
          [2, { passed: 3, failed: 1 }],
        ]),
      ),
    prsImpacted: () => Promise.resolve(new Map([[2, 5]])),
    prsImpactedByFlaky: () => Promise.resolve(4),
    dailyFailures: () => Promise.resolve(new Map([[Math.floor(NOW / DAY_MS) * DAY_MS, 7]])),
    testDaily: () => Promise.resolve([]),
  };
  const health: RepositoryHealth = {
    repository: REPOSITORY,
    quarantine: { quarantiningEnabled: true, autoQuarantine: true },
    tests: rows.length,
    flaky: 1,
    broken: 0,
    quarantined: 1,
    daily: [{ day: Math.floor(NOW / DAY_MS) * DAY_MS, flaky: 1, broken: 0 }],
  };
  const service = new RepositoryHealthService({
    access: { find: () => Promise.resolve(REPOSITORY) },
    settings: {
      get: () =>
        Promise.resolve({ codeowners: "/src/pay/ @acme/payments\n" } as Awaited<
          ReturnType<RepositoryHealthDeps["settings"]["get"]>
        >),
    },
    overview: { organization: () => Promise.resolve({ repositories: [health], daily: [] }) },
    records,
    uploads: { list: () => Promise.resolve({ total: 0, uploads: [] }) },
    clock: { now: () => now },
  });
  return {
    service,
    reads,
    at: (t: number) => (now = t),
    hold: (on: boolean) => (hold = on),
    release: () => release?.(),
  };
}
type RepositoryHealthDeps = ConstructorParameters<typeof RepositoryHealthService>[0];

const names = (page: Awaited<ReturnType<RepositoryHealthService["repository"]>>) =>
  page.table.rows.map((r) => r.row.name);

describe("the repository page's service", () => {
  const rows = [
    row(1, "b fails often", { lastFailureAt: NOW - 5000 }),
    row(2, "a fails sometimes", { lastFailureAt: NOW - 1000, status: "flaky" }),
    row(3, "c never fails"),
    row(4, "d never ran", { lastRunAt: null }),
    ...Array.from({ length: 60 }, (_, i) => row(10 + i, `z filler ${String(i).padStart(2, "0")}`)),
  ];
  const ref = { host: "github.com", owner: "acme", name: "app" };

  it("computes rates, owners and quarantine, filters, sorts and pages", async () => {
    const { service } = setup(rows);
    const first = await service.repository(PRINCIPAL, ref, {});
    expect(names(first).slice(0, 4)).toEqual([
      "b fails often",
      "a fails sometimes",
      "c never fails",
      "d never ran",
    ]);
    expect(first.table.rows[0]?.failureRate7d).toBe(0.75);
    expect(first.table.rows[2]).toMatchObject({ ranIn7d: true, failureRate7d: 0 });
    expect(first.table).toMatchObject({ total: 64, pages: 2 });
    expect(first.owners).toEqual(["@acme/payments"]);
    expect(first.prsImpactedByFlaky7d).toBe(4);
    expect(first.daily.at(-1)).toMatchObject({ failures: 7, flaky: 1, quarantined: 1 });

    const byPrs = await service.repository(PRINCIPAL, ref, { sort: "prs_impacted" });
    expect(names(byPrs).slice(0, 2)).toEqual(["a fails sometimes", "b fails often"]);
    const byLast = await service.repository(PRINCIPAL, ref, { sort: "last_failure" });
    expect(names(byLast).slice(0, 3)).toEqual([
      "a fails sometimes",
      "b fails often",
      "c never fails",
    ]);
    const quarantined = await service.repository(PRINCIPAL, ref, { status: "quarantined" });
    expect(names(quarantined)).toEqual(["a fails sometimes"]);
    expect(quarantined.table.rows[0]?.quarantined).toBe(true);
    const owned = await service.repository(PRINCIPAL, ref, { owner: "@ACME/payments", q: "FAILS" });
    expect(names(owned)).toEqual(["a fails sometimes"]);
    const last = await service.repository(PRINCIPAL, ref, { page: 99 });
    expect(last.table.query.page).toBe(2);
    expect(last.table.rows).toHaveLength(14);
    const never = (await service.repository(PRINCIPAL, ref, { q: "never ran" })).table.rows[0];
    expect(never).toMatchObject({ ranIn7d: false });
  });

  it("reads the table once in 20 s, answers from it while reading again up to 60 s", async () => {
    const fake = setup(rows);
    await fake.service.repository(PRINCIPAL, ref, {});
    await fake.service.repository(PRINCIPAL, ref, { sort: "last_failure", page: 2 });
    fake.at(NOW + TABLE_FRESH_MS - 1);
    await fake.service.repository(PRINCIPAL, ref, { status: "flaky" });
    expect(fake.reads).toEqual([NOW]);

    // Stale: the answer does not wait for the read it starts.
    fake.hold(true);
    fake.at(NOW + TABLE_FRESH_MS + 1);
    const stale = await fake.service.repository(PRINCIPAL, ref, {});
    expect(stale.table.total).toBe(64);
    await fake.service.repository(PRINCIPAL, ref, {});
    // The read again starts after the answers, once.
    await new Promise((resolve) => setImmediate(resolve));
    await fake.service.repository(PRINCIPAL, ref, {});
    expect(fake.reads).toEqual([NOW, NOW + TABLE_FRESH_MS + 1]);
    fake.release();
    fake.hold(false);
    await new Promise((resolve) => setImmediate(resolve));
    // The new table replaced the old one: fresh again, no read.
    fake.at(NOW + TABLE_FRESH_MS + 2);
    await fake.service.repository(PRINCIPAL, ref, {});
    expect(fake.reads).toHaveLength(2);

    // Too old: read before answering.
    fake.at(NOW + TABLE_FRESH_MS + 1 + TABLE_STALE_MS);
    await fake.service.repository(PRINCIPAL, ref, {});
    expect(fake.reads).toHaveLength(3);

    // A form's change forgets it.
    fake.service.invalidate(REPOSITORY.id);
    await fake.service.repository(PRINCIPAL, ref, {});
    expect(fake.reads).toHaveLength(4);
  });
});
