#!/usr/bin/env bash
# The whole test suite: the files that need no database once, then the rest on SQLite and on
# PostgreSQL (vitest.config.ts says which is which). Last line: "N passed, N failed".
# Extra arguments go to vitest (e.g. a file filter).
set -u
cd "$(dirname "$0")/.."
mkdir -p .test-results
rm -f .test-results/*.json
rc=0
if ! bash scripts/ensure-postgres.sh; then rc=1; fi
# The browser test needs Chromium; a failure here shows again as that test's clear failure.
bash scripts/ensure-chromium.sh || true
# On PostgreSQL the files that start servers under a load of their own (a shared database under
# two servers, connections terminated while serving) run first and one at a time, so that their
# timeouts measure the service and not a neighbour; the rest run two files at a time on both.
POSTGRES_ALONE=(test/cli/two-servers.test.ts test/e2e/database-faults.test.ts)
reports=()
suite() {
  local dialect=$1 report=$2; shift 2
  MAINLINE_TEST_DB=$dialect npx vitest run --reporter=default --reporter=json \
    --outputFile.json=".test-results/$report.json" --passWithNoTests "$@" || rc=1
  reports+=("$report:.test-results/$report.json")
}
echo "== tests run on Node.js $(node --version) ($(command -v node)) =="
echo "== test suite without a database =="
suite none no-database "$@"
echo "== test suite on sqlite =="
suite sqlite sqlite "$@"
if [ $# -eq 0 ]; then
  echo "== test suite on postgres: the files that run alone =="
  suite postgres postgres-alone --maxWorkers=1 "${POSTGRES_ALONE[@]}"
  echo "== test suite on postgres: the rest =="
  suite postgres postgres "${POSTGRES_ALONE[@]/#/--exclude=}"
else
  echo "== test suite on postgres =="
  suite postgres postgres "$@"
fi
node scripts/test-summary.mjs "${reports[@]}" || rc=1
exit $rc
