#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what it needs, then typecheck, format check, lint and every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npx tsc -p tsconfig.json --noEmit
npx prettier --check . > /dev/null || { npx prettier --check . ; exit 1; }
npx eslint .
mkdir -p .test-results
npx vitest run --project unit --reporter=default --reporter=json --outputFile.json=.test-results/unit.json
npx vitest run --project e2e --reporter=default --reporter=json --outputFile.json=.test-results/e2e.json
node scripts/test-summary.mjs
