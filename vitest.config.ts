import { globSync } from "node:fs";
import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * The suite as four vitest projects by kind (scripts/test.sh runs them one after another):
 * `unit` — files that never touch a database, run once; `sqlite` — every other file;
 * `postgres-alone` and `postgres` — the files whose behaviour depends on the database, again on
 * PostgreSQL (the first few one at a time). test/helpers/global-setup.ts gives each project its
 * database; `npx vitest run <file>` runs a file in every project that holds it.
 */
const DATABASE_FREE = [
  "test/unit/**",
  "test/fake-github/**",
  "test/fake-gitlab/**",
  "test/githost/git.test.ts",
  "test/githost/history-between.test.ts",
  "test/githost/local-host-conflicts.test.ts",
  "test/githost/local-host.test.ts",
  "test/githost/ref-files.test.ts",
  "test/githost/repositories.test.ts",
  "test/githost/spawner.test.ts",
  "test/githost/watcher.test.ts",
  "test/api/log-redaction.test.ts",
  "test/api/uploader-route.test.ts",
  "test/ci/config.test.ts",
  "test/ci/process.test.ts",
  "test/ingest/bundle-storage.test.ts",
  "test/mergequeue/host-changes.test.ts",
  "test/mergequeue/host-router.test.ts",
  "test/mergequeue/planner-indexes.property.test.ts",
  "test/mergequeue/snapshot.test.ts",
  "test/mergequeue/submission-check.test.ts",
  "test/tickets/github-client.test.ts",
  "test/tickets/linear-client.test.ts",
];

/**
 * End-to-end files: real processes, the fake GitHub, a browser. They run on SQLite; on PostgreSQL
 * only POSTGRES_END_TO_END, whose behaviour depends on the database (processes sharing one,
 * crashes and what survives them, migrations, the webhook inbox's claims, tenancy of installations).
 * The others' storage is the stores' and the engine's, tested on both databases in their own files.
 */
const END_TO_END = [
  "test/e2e/*.test.ts",
  "test/github/*.test.ts",
  "test/browser/*.test.ts",
  "test/cli/*.test.ts",
  "test/ci/runner.test.ts",
];
const POSTGRES_END_TO_END = [
  "test/cli/durability.test.ts",
  "test/cli/migrate.test.ts",
  "test/cli/no-database.test.ts",
  "test/cli/organizations.test.ts",
  "test/cli/sessions.test.ts",
  "test/e2e/read-after-write.test.ts",
  "test/e2e/restart.test.ts",
  "test/e2e/tickets-restart.test.ts",
  "test/e2e/webhooks-restart.test.ts",
  "test/github/ci-judge.test.ts",
  "test/github/linking.test.ts",
  "test/github/processes.test.ts",
  "test/github/queue-processes.test.ts",
  "test/github/unreachable-host.test.ts",
  "test/github/webhooks.test.ts",
];

/**
 * On PostgreSQL, the files that start servers under a load of their own (a shared database under
 * two servers, connections terminated while serving) run first and one at a time, so that their
 * timeouts measure the service and not a neighbour.
 */
const POSTGRES_ALONE = ["test/cli/two-servers.test.ts", "test/e2e/database-faults.test.ts"];

/** Files that only PostgreSQL can run (two servers on one database: SQLite is served by one). */
const POSTGRES_ONLY = [
  "test/cli/two-servers.test.ts",
  // Two servers renewing one OAuth grant under the lease.
  "test/gitlab/oauth-processes.test.ts",
];

/** A glob of files and folders as a glob of the test files among them. */
function asTestFiles(glob: string): string {
  return glob.endsWith("/**") ? `${glob}/*.test.ts` : glob;
}

const ALL = ["test/**/*.test.ts"];
/** Per project, not at the root: each project's run gets the database its name says. */
const GLOBAL_SETUP = ["test/helpers/global-setup.ts"];
const SQLITE_ONLY = globSync(END_TO_END, { cwd: import.meta.dirname }).filter(
  (file) => !POSTGRES_END_TO_END.includes(file),
);

export default defineConfig({
  test: {
    pool: "forks",
    // Most files wait on processes, git and sockets more than they compute: two at a time keep a
    // 2-core machine busy, where vitest's default (one fewer than the cores) runs them one by one.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          globalSetup: GLOBAL_SETUP,
          name: "unit",
          env: { MAINLINE_TEST_PROJECT: "unit" },
          include: DATABASE_FREE.map(asTestFiles),
          // Pure files: a worker's modules are imported once for all the files it runs (a third
          // less CPU for this project). A file that changes process state restores it.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          globalSetup: GLOBAL_SETUP,
          name: "sqlite",
          env: { MAINLINE_TEST_PROJECT: "sqlite" },
          include: ALL,
          exclude: [...configDefaults.exclude, ...DATABASE_FREE, ...POSTGRES_ONLY],
        },
      },
      {
        extends: true,
        test: {
          globalSetup: GLOBAL_SETUP,
          name: "postgres-alone",
          env: { MAINLINE_TEST_PROJECT: "postgres-alone" },
          include: POSTGRES_ALONE,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          globalSetup: GLOBAL_SETUP,
          name: "postgres",
          env: { MAINLINE_TEST_PROJECT: "postgres" },
          include: ALL,
          exclude: [...configDefaults.exclude, ...DATABASE_FREE, ...SQLITE_ONLY, ...POSTGRES_ALONE],
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
