#!/bin/sh
# Registers the namespace the worker polls, once the frontend serves (up to 5 minutes), and then exits:
# the worker starts after this succeeds. Safe on every start: an existing namespace is left as it is.
# The temporal CLI reads TEMPORAL_ADDRESS and, for TLS, TEMPORAL_TLS_* from the environment.
set -eu
namespace=${TEMPORAL_NAMESPACE:-default}
attempts=0
until temporal operator cluster health 2>/dev/null | grep -q SERVING; do
  attempts=$((attempts + 1))
  if [ "$attempts" -ge 150 ]; then
    echo "Temporal at ${TEMPORAL_ADDRESS:-127.0.0.1:7233} did not serve within 5 minutes" >&2
    exit 1
  fi
  sleep 2
done
if temporal operator namespace describe --namespace "$namespace" > /dev/null 2>&1; then
  echo "namespace $namespace exists"
else
  temporal operator namespace create --namespace "$namespace" --retention "${TEMPORAL_NAMESPACE_RETENTION:-24h}"
fi
