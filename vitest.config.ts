import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * Tests whose behaviour does not depend on the database run in the SQLite pass only: building
 * dist/, packing and installing the npm package (the upload path it exercises is tested on both databases elsewhere),
 * the fake GitHub's own fidelity tests (it keeps no database), and the heaviest end-to-end
 * scenarios, whose storage is the stores' and the engine's, tested on both databases in their own
 * files: the queue on a realistic project, the GitHub git host against the fake, the queue on
 * GitHub with real processes (two servers sharing a PostgreSQL database: test/cli/two-servers).
 */
const SQLITE_ONLY = [
  "test/e2e/package.test.ts",
  "test/e2e/build.test.ts",
  "test/fake-github/**",
  "test/e2e/realistic-queue.test.ts",
  "test/github/host.test.ts",
  "test/github/queue-processes.test.ts",
];

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [
      ...configDefaults.exclude,
      ...(process.env.MAINLINE_TEST_DB === "postgres" ? SQLITE_ONLY : []),
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
