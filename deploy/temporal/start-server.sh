#!/bin/sh
# Starts temporal-server with the configuration it embeds (1.30 and later), filled from the environment
# (DB, POSTGRES_*, BIND_ON_IP, ...). Listening on all interfaces needs the address other members reach
# this one at: 1.32 refuses to start without it. Here it is the container's own address, found as
# Temporal's image entrypoints find it (the image's entrypoint differs between its builds, so this
# script replaces it).
set -eu
if [ -z "${TEMPORAL_BROADCAST_ADDRESS:-}" ]; then
  TEMPORAL_BROADCAST_ADDRESS=$(getent hosts "$(hostname)" | awk '{ print $1; exit }')
  export TEMPORAL_BROADCAST_ADDRESS
fi
exec temporal-server start
