#!/usr/bin/env bash
# A production-shaped Temporal for the cluster tests and bench:scale, once per machine, outside the
# clone: temporal-server and temporal-sql-tool built from go.temporal.io/server (the Go module proxy)
# at the version docker-compose.yml's images carry, with the module's PostgreSQL schema files beside
# them, in $PATCHLOOP_CACHE/temporal-server-VERSION (default ~/.cache/patchloop); and Debian's
# PostgreSQL. Go 1.21 or newer is needed (it fetches the toolchain the module asks for, 1.26 for 1.32.0).
# The first build takes about 8 minutes on two cores; later runs find it and return.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n "s/^export const TEMPORAL_SERVER_VERSION = '\(.*\)';$/\1/p" support/temporal-cluster.ts)
target="${PATCHLOOP_CACHE:-$HOME/.cache/patchloop}/temporal-server-${version:?TEMPORAL_SERVER_VERSION not found in support/temporal-cluster.ts}"

if ! ls /usr/lib/postgresql/*/bin/initdb > /dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  (apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql) > /dev/null
fi

if [ -x "$target/temporal-server" ] && [ -x "$target/temporal-sql-tool" ] && [ -d "$target/schema/postgresql" ]; then
  exit 0
fi
command -v go > /dev/null || { echo "setup-temporal-server.sh: Go is needed to build temporal-server" >&2; exit 1; }
mkdir -p "$(dirname "$target")"
building=$(mktemp -d "${target}.building.XXXXXX")
chmod 755 "$building"
trap 'rm -rf "$building"' EXIT
GOBIN="$building/bin" go install "go.temporal.io/server/cmd/server@v$version" "go.temporal.io/server/cmd/tools/sql@v$version"
mv "$building/bin/server" "$building/temporal-server"
mv "$building/bin/sql" "$building/temporal-sql-tool"
source_dir=$(go mod download -json "go.temporal.io/server@v$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
cp -r "$source_dir/schema" "$building/schema"
chmod -R u+w "$building/schema"
rm -rf "$building/bin" "$target"
mv "$building" "$target"
trap - EXIT
