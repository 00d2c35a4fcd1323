#!/usr/bin/env bash
# The whole test suite, on SQLite and then on PostgreSQL. Last line: "N passed, N failed".
# Extra arguments go to vitest (e.g. a file filter).
set -u
cd "$(dirname "$0")/.."
mkdir -p .test-results
rm -f .test-results/sqlite.json .test-results/postgres.json
rc=0
if ! bash scripts/ensure-postgres.sh; then rc=1; fi
# The browser test needs Chromium; a failure here shows again as that test's clear failure.
bash scripts/ensure-chromium.sh || true
for dialect in sqlite postgres; do
  echo "== test suite on $dialect =="
  MAINLINE_TEST_DB=$dialect npx vitest run --reporter=default --reporter=json \
    --outputFile.json=".test-results/$dialect.json" "$@" || rc=1
done
node scripts/test-summary.mjs sqlite:.test-results/sqlite.json postgres:.test-results/postgres.json || rc=1
exit $rc
