#!/usr/bin/env bash
# A private PostgreSQL cluster that devtime owns, under a folder of your choice.
#
#   deploy/pg.sh start DIR      create (first time) and start it on a free loopback port
#   deploy/pg.sh stop DIR       stop it (data is kept)
#   deploy/pg.sh restart DIR    fast restart (used by tests: the collector must reconnect)
#   deploy/pg.sh status DIR     exit 0 if running
#   deploy/pg.sh conninfo DIR   print the libpq connection string (database "devtime")
#   deploy/pg.sh destroy DIR    stop it and delete its data
#
# PostgreSQL refuses to run as root, so as root the cluster runs as the 'postgres' system
# user (created by Debian's postgresql package). If that user cannot reach DIR (e.g. it is
# under /root), the data goes to /var/tmp/devtime-pg-<hash> and DIR/data links to it.
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -eq 2 ] || usage
command=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$pgbin" ] || { echo "pg.sh: PostgreSQL server not installed (deploy/install-deps.sh)" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

free_port() {
  local port
  for _ in $(seq 1 100); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "pg.sh: no free port found" >&2
  return 1
}

data_dir() {
  if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$dir" 2>/dev/null; then
    local fallback
    fallback="/var/tmp/devtime-pg-$(echo "$dir" | md5sum | cut -c1-12)"
    mkdir -p "$fallback"
    chown postgres: "$fallback"
    ln -sfn "$fallback" "$dir/data-link"
    echo "$fallback/data"
  else
    echo "$dir/data"
  fi
}

data=$(data_dir)
port_file="$dir/port"
log="$dir/postgres.log"

running() { [ -f "$data/postmaster.pid" ] && as_owner "$pgbin/pg_ctl" -D "$data" status >/dev/null 2>&1; }

init_cluster() {
  [ -f "$data/PG_VERSION" ] && return 0
  mkdir -p "$data"
  if [ "$(id -u)" -eq 0 ]; then chown -R postgres: "$(dirname "$data")"; fi
  chmod 700 "$data"
  as_owner "$pgbin/initdb" -D "$data" -U devtime --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { echo "pg.sh: initdb failed, see $dir/initdb.log" >&2; exit 1; }
}

start_cluster() {
  local port
  port=$(cat "$port_file" 2>/dev/null || true)
  if [ -z "$port" ] || (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    port=$(free_port)
    echo "$port" >"$port_file"
  fi
  touch "$log"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$log" "$dir"; fi
  # Sockets live in the data directory: no dependence on /var/run/postgresql.
  as_owner "$pgbin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
    -o "-p $port -c listen_addresses=127.0.0.1 -k $data -c fsync=on" start >/dev/null ||
    { echo "pg.sh: PostgreSQL did not start, see $log" >&2; tail -n 20 "$log" >&2; exit 1; }
  as_owner "$pgbin/psql" -h 127.0.0.1 -p "$port" -U devtime -d postgres -qtAc \
    "SELECT 1 FROM pg_database WHERE datname = 'devtime'" | grep -q 1 ||
    as_owner "$pgbin/createdb" -h 127.0.0.1 -p "$port" -U devtime devtime
}

case "$command" in
  start)
    init_cluster
    running || start_cluster
    ;;
  stop)
    if running; then as_owner "$pgbin/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi
    ;;
  restart)
    as_owner "$pgbin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
    start_cluster
    ;;
  status)
    running
    ;;
  conninfo)
    echo "host=127.0.0.1 port=$(cat "$port_file") user=devtime dbname=devtime"
    ;;
  destroy)
    if running; then as_owner "$pgbin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null; fi
    rm -rf "$data" "$port_file"
    ;;
  *) usage ;;
esac
