#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what it needs, then typecheck, format check and lint
# beside the unit tests, then the end-to-end tests (files in parallel, then the latency-bound ones
# alone, then the cluster subset on temporal-server and PostgreSQL), and a summary with every file's time.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
mkdir -p .test-results
rm -f .test-results/*.json .test-results/phases.tsv .test-results/cpu.tsv
phase() { echo -e "$1\t$2" >> .test-results/phases.tsv; }
started=$SECONDS

# Static checks (typecheck, format, lint, knip: no file, export or dependency nobody uses) and unit
# tests at once: two processes for two cores.
(
  npx tsc -p tsconfig.json --noEmit &&
    { npx prettier --check . > /dev/null || { npx prettier --check .; exit 1; }; } &&
    npx eslint . &&
    npx knip --no-progress
) > .test-results/static.log 2>&1 &
static=$!
npx vitest run --project unit --reporter=default --reporter=json --outputFile.json=.test-results/unit.json
unit=$?
wait $static
checks=$?
phase 'static checks and unit tests' $((SECONDS - started))
if [ $checks -ne 0 ]; then
  cat .test-results/static.log
  echo 'npm test: typecheck, format, lint or knip FAILED (above)'
  exit 1
fi
[ $unit -eq 0 ] || { node scripts/test-summary.mjs unit; exit 1; }

# Each e2e file's CPU time (test/support/cpu-time.ts), for the summary.
export PATCHLOOP_TEST_CPU_FILE="$PWD/.test-results/cpu.tsv"
mark=$SECONDS
npx vitest run --project e2e --reporter=default --reporter=json --outputFile.json=.test-results/e2e.json
phase 'e2e, files in parallel' $((SECONDS - mark))
mark=$SECONDS
npx vitest run --project e2e-alone --reporter=default --reporter=json --outputFile.json=.test-results/e2e-alone.json
phase 'e2e, latency-bound files one at a time' $((SECONDS - mark))
mark=$SECONDS
npx vitest run --project cluster --reporter=default --reporter=json --outputFile.json=.test-results/cluster.json
npx vitest run --project cluster-alone --reporter=default --reporter=json --outputFile.json=.test-results/cluster-alone.json
phase 'cluster subset on temporal-server and PostgreSQL' $((SECONDS - mark))
node scripts/test-summary.mjs
