import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * The suite runs in passes (scripts/test.sh), chosen by MAINLINE_TEST_DB:
 * - `none`: the files that never touch a database (DATABASE_FREE), once; a test database asked
 *   for there fails the file (test/helpers/database.ts), so the list cannot hide one that does;
 * - `sqlite` (default) and `postgres`: every other file, on each database, except that the
 *   PostgreSQL pass leaves out SQLITE_ONLY.
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

/** A glob of files and folders as a glob of the test files among them. */
function asTestFiles(glob: string): string {
  return glob.endsWith("/**") ? `${glob}/*.test.ts` : glob;
}

const pass = process.env.MAINLINE_TEST_DB;

export default defineConfig({
  test: {
    include: pass === "none" ? DATABASE_FREE.map(asTestFiles) : ["test/**/*.test.ts"],
    exclude: [
      ...configDefaults.exclude,
      ...(pass === "none" ? [] : DATABASE_FREE),
      ...(pass === "postgres" ? SQLITE_ONLY : []),
    ],
    globalSetup: ["test/helpers/global-setup.ts"],
    pool: "forks",
    // Most files wait on processes, git and sockets more than they compute: two at a time keep a
    // 2-core machine busy, where vitest's default (one fewer than the cores) runs them one by one.
    // scripts/test.sh runs the few PostgreSQL files that load a server of their own alone.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
