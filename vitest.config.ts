import { configDefaults, defineConfig } from "vitest/config";

/**
 * Tests whose behaviour does not depend on the database run in the SQLite pass only: packing and
 * installing the npm package (the upload path it exercises is tested on both databases elsewhere),
 * and the fake GitHub's own fidelity tests (it keeps no database).
 */
const SQLITE_ONLY = ["test/e2e/package.test.ts", "test/fake-github/**"];

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [
      ...configDefaults.exclude,
      ...(process.env.MAINLINE_TEST_DB === "postgres" ? SQLITE_ONLY : []),
    ],
    globalSetup: ["test/helpers/global-setup.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
