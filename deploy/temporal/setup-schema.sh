#!/bin/sh
# Temporal's two PostgreSQL databases, created when missing and brought to the schema this admin-tools
# image ships. temporal-sql-tool reads its connection from the environment: SQL_PLUGIN, SQL_HOST,
# SQL_PORT, SQL_USER, SQL_PASSWORD, and SQL_TLS, SQL_TLS_CA_FILE, SQL_TLS_SERVER_NAME for TLS.
# Safe on every start: `create` passes over an existing database, `setup-schema` over an existing
# version table, and `update-schema` applies only the versions not applied yet. Upgrade Temporal one
# minor version at a time (its upgrade guide): run this with the new image before the new server.
# TEMPORAL_SCHEMA_DIR: where the schema files are (the admin-tools image keeps them in /etc/temporal/schema).
set -eu
schemas=${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema}/postgresql/v12
prepare() {
  temporal-sql-tool --db "$1" create
  temporal-sql-tool --db "$1" setup-schema -v 0.0
  temporal-sql-tool --db "$1" update-schema -d "$schemas/$2/versioned"
}
prepare "${SQL_DATABASE:-temporal}" temporal
prepare "${SQL_VISIBILITY_DATABASE:-temporal_visibility}" visibility
echo "Temporal schema ready"
