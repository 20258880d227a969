#!/usr/bin/env bash
# Installs the peers of bench:peers, each in its own folder: npm ci from its lockfile (Node peers), a
# .venv from its pinned requirements (Python peers). Re-running skips what is installed.
set -euo pipefail
cd "$(dirname "$0")/../bench/peers"
for peer in */; do
  peer="${peer%/}"
  if [ -f "$peer/package-lock.json" ] && [ ! -d "$peer/node_modules" ]; then
    npm ci --prefix "$peer" --no-audit --no-fund
  fi
  if [ -f "$peer/requirements.txt" ] && [ ! -x "$peer/.venv/bin/python" ]; then
    python3 -m venv "$peer/.venv"
    "$peer/.venv/bin/pip" install --quiet -r "$peer/requirements.txt"
  fi
done
