#!/usr/bin/env bash
# The whole test suite: vitest.config.ts's projects one after another — the files that need no
# database once, then the rest on SQLite, then those whose behaviour depends on the database on
# PostgreSQL. Last line: "N passed, N failed". Extra arguments go to vitest (e.g. a file filter).
set -u
cd "$(dirname "$0")/.."
mkdir -p .test-results
rm -f .test-results/*.json
rc=0
if ! bash scripts/ensure-postgres.sh; then rc=1; fi
# The browser test needs Chromium; a failure here shows again as that test's clear failure.
bash scripts/ensure-chromium.sh || true
reports=()
suite() {
  local project=$1; shift
  echo "== test project $project =="
  npx vitest run --project "$project" --reporter=default --reporter=json \
    --outputFile.json=".test-results/$project.json" --passWithNoTests "$@" || rc=1
  reports+=("$project:.test-results/$project.json")
}
echo "== tests run on Node.js $(node --version) ($(command -v node)) =="
for project in unit sqlite postgres-alone postgres; do suite "$project" "$@"; done
node scripts/test-summary.mjs "${reports[@]}" || rc=1
exit $rc
