#!/bin/sh
# The pods' entry point (ConfigMap devtime-pgaf-start): creates the monitor or a node on the
# first start (the volume keeps it), then runs it. ROLE is "monitor" or "node"; a node's
# name and hostname are its StatefulSet pod's stable DNS name.
set -eu
export PGDATA=/var/lib/postgresql/data/pgdata XDG_CONFIG_HOME=/var/lib/postgresql/data/config \
  XDG_DATA_HOME=/var/lib/postgresql/data/share
fqdn="$(hostname).${SERVICE}.${NAMESPACE}.svc.cluster.local"
if [ ! -f "$PGDATA/PG_VERSION" ]; then
  if [ "$ROLE" = monitor ]; then
    pg_autoctl create monitor --pgport 5432 --hostname "$fqdn" --auth scram-sha-256 \
      --ssl-self-signed
  else
    pg_autoctl create postgres --pgport 5432 --hostname "$fqdn" --name "$(hostname)" \
      --username devtime --dbname devtime --auth scram-sha-256 --ssl-self-signed \
      --monitor "postgres://autoctl_node@devtime-pgaf-monitor-0.devtime-pgaf-monitor.${NAMESPACE}.svc.cluster.local:5432/pg_auto_failover?sslmode=require"
  fi
fi
exec pg_autoctl run
