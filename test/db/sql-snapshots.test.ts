import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { CiRunStore } from "../../src/db/stores/ci-runs.js";
import {
  QUERIES_DIR,
  renderAll,
  renderSnapshot,
  snapshotFile,
  uncoveredMethods,
} from "./sql-snapshots/render.js";
import { SCENARIOS } from "./sql-snapshots/scenarios/index.js";
import type { StoreScenario } from "./sql-snapshots/scenarios/types.js";

/**
 * The SQL of every store, for both dialects, is checked in under `src/db/queries/` so that a
 * change to a query shows in review as a change of SQL. No database is needed: the statements
 * are compiled by each dialect's compiler and recorded instead of run, so both dialects are
 * checked whichever database the suite runs on.
 */
const HOW_TO_UPDATE = "run `npm run sql:snapshots` and review the diff of src/db/queries/";
const SCENARIOS_DIR = "test/db/sql-snapshots/scenarios/";

describe("SQL snapshots (src/db/queries/)", () => {
  it("match what the stores send, on SQLite and PostgreSQL", async () => {
    const rendered = await renderAll();
    const stale: string[] = [];
    for (const [name, content] of rendered) {
      const path = `${QUERIES_DIR}${name}`;
      const stored = existsSync(path) ? readFileSync(path, "utf8") : null;
      if (stored !== content) stale.push(stored === null ? `${name} (missing)` : name);
    }
    const extra = readdirSync(QUERIES_DIR).filter((n) => n.endsWith(".sql") && !rendered.has(n));
    stale.push(...extra.map((n) => `${n} (no store writes it any more)`));
    expect(stale, `SQL snapshots out of date: ${HOW_TO_UPDATE}`).toEqual([]);
  });

  it("cover every store and every public store method", () => {
    const stores = readdirSync(QUERIES_DIR.replace(/queries\/$/, "stores/"))
      .filter((n) => n.endsWith(".ts"))
      .map((n) => n.slice(0, -".ts".length));
    expect(
      SCENARIOS.map((s) => s.file).sort(),
      `give each store a scenario in ${SCENARIOS_DIR}<store>.ts, listed in ${SCENARIOS_DIR}index.ts`,
    ).toEqual(stores.sort());
    const uncovered = SCENARIOS.flatMap((s) =>
      uncoveredMethods(s).map((m) => `${s.name}.${m} (${SCENARIOS_DIR}${s.file}.ts)`),
    );
    expect(
      uncovered,
      "add a call of each of these methods to the scenario file named beside it, then " +
        HOW_TO_UPDATE,
    ).toEqual([]);
  });

  it("show each call's statements, and go stale when a store's SQL changes", async () => {
    const store = SCENARIOS.find((s) => s.file === "ci-runs");
    if (!store) throw new Error("no scenario for ci-runs");
    const stored = readFileSync(`${QUERIES_DIR}${snapshotFile(store, "postgres")}`, "utf8");
    expect(await renderSnapshot(store, "postgres")).toEqual(stored);
    // One block per call, headed by the method and its parameters; PostgreSQL's placeholders.
    expect(stored.match(/^-- CiRunStore\.\w+\(/gm)).toHaveLength(store.calls.length);
    expect(stored).toContain("-- CiRunStore.claim(queueId, runId, owner, now, until)\nupdate");
    expect(stored).toMatch(/\$1/);
    expect(await renderSnapshot(store, "sqlite")).not.toMatch(/\$1/);
    // The same store with one query changed (`get` by a second column) renders differently.
    const changed: StoreScenario = {
      ...store,
      create: (handle) => {
        const original = store.create(handle) as CiRunStore;
        return Object.assign(Object.create(original) as CiRunStore, {
          get: (queueId: string, runId: string) =>
            handle.db
              .selectFrom("ciRuns")
              .selectAll()
              .where("queueId", "=", queueId)
              .where("runId", "=", runId)
              .where("status", "=", "queued")
              .executeTakeFirst(),
        });
      },
    };
    const rendered = await renderSnapshot(changed, "postgres");
    expect(rendered).not.toEqual(stored);
    expect(rendered).toContain('"status" = $3');
  });
});
