#!/bin/sh
# PostgreSQL init script (mounted into docker-entrypoint-initdb.d, so it runs once, on an empty
# data directory): the SELECT-only role Grafana's PostgreSQL data source logs in as
# (dashboards/provisioning/datasources/devtime.yaml: user grafana_ro).
#
# The collector creates its tables later, as $POSTGRES_USER; the default privileges below give
# the role SELECT on each table as it is created. tests/dashboards runs this script against the
# test cluster and every dashboard query as the role it creates.
#
# env: POSTGRES_USER, POSTGRES_DB (the postgres image sets them), DEVTIME_GRAFANA_PG_PASSWORD,
#      DEVTIME_GRAFANA_PG_USER (default grafana_ro); PGHOST/PGPORT as libpq reads them.
set -eu
: "${DEVTIME_GRAFANA_PG_PASSWORD:?set DEVTIME_GRAFANA_PG_PASSWORD}"
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
     --set=role="${DEVTIME_GRAFANA_PG_USER:-grafana_ro}" \
     --set=password="$DEVTIME_GRAFANA_PG_PASSWORD" --set=database="$POSTGRES_DB" <<'SQL'
CREATE ROLE :"role" LOGIN PASSWORD :'password';
GRANT CONNECT ON DATABASE :"database" TO :"role";
GRANT USAGE ON SCHEMA public TO :"role";
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO :"role";
SQL
