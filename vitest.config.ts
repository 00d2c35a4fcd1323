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
];

/**
 * Files whose behaviour does not depend on the database, run on SQLite only: building dist/,
 * packing and installing the npm package (the upload path it exercises is tested on both
 * databases elsewhere), and the heaviest end-to-end scenarios, whose storage is the stores' and
 * the engine's, tested on both databases in their own files: the queue on a realistic project,
 * the GitHub git host against the fake, the queue on GitHub with real processes (two servers
 * sharing a PostgreSQL database: test/cli/two-servers).
 */
const SQLITE_ONLY = [
  "test/e2e/package.test.ts",
  "test/e2e/build.test.ts",
  "test/e2e/realistic-queue.test.ts",
  "test/github/host.test.ts",
  "test/github/queue-processes.test.ts",
];

/**
 * On PostgreSQL, the files that start servers under a load of their own (a shared database under
 * two servers, connections terminated while serving) run first and one at a time, so that their
 * timeouts measure the service and not a neighbour.
 */
const POSTGRES_ALONE = ["test/cli/two-servers.test.ts", "test/e2e/database-faults.test.ts"];

/** A glob of files and folders as a glob of the test files among them. */
function asTestFiles(glob: string): string {
  return glob.endsWith("/**") ? `${glob}/*.test.ts` : glob;
}

const ALL = ["test/**/*.test.ts"];

export default defineConfig({
  test: {
    globalSetup: ["test/helpers/global-setup.ts"],
    pool: "forks",
    // Most files wait on processes, git and sockets more than they compute: two at a time keep a
    // 2-core machine busy, where vitest's default (one fewer than the cores) runs them one by one.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: { name: "unit", include: DATABASE_FREE.map(asTestFiles) },
      },
      {
        extends: true,
        test: {
          name: "sqlite",
          include: ALL,
          exclude: [...configDefaults.exclude, ...DATABASE_FREE],
        },
      },
      {
        extends: true,
        test: {
          name: "postgres-alone",
          include: POSTGRES_ALONE,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: "postgres",
          include: ALL,
          exclude: [...configDefaults.exclude, ...DATABASE_FREE, ...SQLITE_ONLY, ...POSTGRES_ALONE],
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
