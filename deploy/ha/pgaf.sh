#!/usr/bin/env bash
# A highly available PostgreSQL on one machine's loopback, managed by pg_auto_failover:
# a monitor and three nodes (a primary and two synchronous standbys), under a folder of
# your choice. For tests and trying failover out; deploy/ha/README.md has the production setup.
#
#   deploy/ha/pgaf.sh start DIR        create (first time) and start monitor and nodes
#   deploy/ha/pgaf.sh stop DIR         stop every pg_autoctl and PostgreSQL (data is kept)
#   deploy/ha/pgaf.sh conninfo DIR     the multi-host libpq string for the collectors
#   deploy/ha/pgaf.sh state DIR        the monitor's view (pg_autoctl show state)
#   deploy/ha/pgaf.sh primary DIR      the primary node's number (1, 2 or 3)
#   deploy/ha/pgaf.sh wait-primary DIR N SECONDS   wait until a node other than N is primary
#   deploy/ha/pgaf.sh kill DIR N       kill -9 node N: its pg_autoctl and its PostgreSQL
#   deploy/ha/pgaf.sh destroy DIR      stop and delete everything
#
# PostgreSQL and pg_autoctl refuse to run as root, so as root they run as the 'postgres'
# system user (as deploy/pg.sh does). Failure detection and promotion are tuned for a test
# (7.5-10.3 s from a dead primary to a standby taking writes on a loaded 2-core VM), see
# tune_monitor.
set -euo pipefail

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 2 ] || usage
command=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$pgbin" ] || { echo "pgaf.sh: PostgreSQL server not installed (deploy/install-deps.sh)" >&2; exit 1; }
command -v pg_autoctl >/dev/null 2>&1 || {
  echo "pgaf.sh: pg_autoctl not found: install pg_auto_failover with deploy/install-deps.sh" \
    "(Debian packages postgresql-15-auto-failover, pg-auto-failover-cli)" >&2
  exit 1
}
ls "$(dirname "$pgbin")"/lib/pgautofailover.so >/dev/null 2>&1 || {
  echo "pgaf.sh: the pgautofailover extension is not installed for $(basename "$(dirname "$pgbin")")" \
    "(Debian package postgresql-15-auto-failover, deploy/install-deps.sh)" >&2
  exit 1
}

# pg_autoctl keeps its configuration and state under XDG folders: inside DIR, so that
# several clusters (one per test) never share them.
export XDG_CONFIG_HOME="$dir/xdg/config" XDG_DATA_HOME="$dir/xdg/data" XDG_RUNTIME_DIR="$dir/xdg/run"
export PG_CONFIG="$pgbin/pg_config" PGCONNECT_TIMEOUT=5
# Unix sockets in DIR too: Debian's default, /var/run/postgresql, is the postgres user's only.
export PGHOST="$dir/sock"

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    (cd / && runuser -u postgres -- env XDG_CONFIG_HOME="$XDG_CONFIG_HOME" \
      XDG_DATA_HOME="$XDG_DATA_HOME" XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" PG_CONFIG="$PG_CONFIG" \
      PGCONNECT_TIMEOUT=5 PGHOST="$PGHOST" "$@")
  else
    "$@"
  fi
}

# Below the kernel's ephemeral range (ip_local_port_range), which every 127.0.0.1:0 listener
# and outgoing connection on the machine draws from: a port chosen inside it can be taken
# between the choice here and PostgreSQL's bind, and another server then answers on it.
free_port() {
  local port low=32768 rest
  read -r low rest </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  [ "$low" -gt 12000 ] || low=32768
  for _ in $(seq 1 100); do
    port=$((10000 + RANDOM % (low - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && ! grep -qx "$port" "$dir"/*.port 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "pgaf.sh: no free port found" >&2
  return 1
}

# A port per PostgreSQL (monitor, node1..3), chosen once and kept in DIR/NAME.port.
port_of() {
  local file="$dir/$1.port"
  [ -s "$file" ] || free_port >"$file"
  cat "$file"
}

monitor_uri() { echo "postgres://autoctl_node@127.0.0.1:$(port_of monitor)/pg_auto_failover?sslmode=disable"; }

# Runs `pg_autoctl run` for NAME in its own session (setsid), so that `kill` can take the
# node's whole process group: pg_autoctl and the PostgreSQL it supervises.
run_service() {
  local name=$1
  [ -s "$dir/$name.pid" ] && kill -0 -- "-$(cat "$dir/$name.pid")" 2>/dev/null && return 0
  rm -f "$dir/$name.pid"
  touch "$dir/$name.log"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir/$name.log"; fi
  # $$ of the shell that setsid starts is the session's (and the process group's) id.
  as_owner setsid bash -c 'echo $$ >"$1.pid"; exec pg_autoctl run --pgdata "$1"' _ "$dir/$name" \
    >>"$dir/$name.log" 2>&1 </dev/null &
  wait_for 10 "$name's service starting" test -s "$dir/$name.pid"
}

wait_for() {  # SECONDS DESCRIPTION COMMAND...
  local seconds=$1 what=$2
  shift 2
  local deadline=$((SECONDS + seconds)) last
  until last=$("$@" 2>&1); do
    if [ $SECONDS -ge $deadline ]; then
      # The last try's own words (psql's error, say) say more than the timeout.
      echo "pgaf.sh: $what not within ${seconds}s (last try: ${last:-no output}); logs in $dir" >&2
      return 1
    fi
    sleep 0.2
  done
}

monitor_sql() {
  as_owner "$pgbin/psql" -h 127.0.0.1 -p "$(port_of monitor)" -U autoctl_node -d pg_auto_failover \
    -qtAXc "$1"
}

# A failover's steps and what each waits for (the monitor's event log, pgautofailover.event;
# the failover test prints it), from the kill, over 6 runs on a loaded 2-core VM:
#   1.1-1.7 s  the primary marked unhealthy: a health check failed (health_check_*) and its
#              keeper's last report is older than node_considered_unhealthy_timeout
#   3.6-5.3 s  both standbys reported their LSN (report_lsn: each restarts its PostgreSQL to
#              stop streaming from the dead primary); the most advanced is the candidate
#   +0.3-1.9 s the candidate in prepare_promotion (its keeper's next loop, about 1 s): the
#              demote wait starts
#   6.0-9.1 s  it promoted its PostgreSQL (stop_replication), still read-only
#              (default_transaction_read_only): the old primary may not have stepped down yet
#   7.5-10.3 s wait_primary, taking writes, at its first report after primary_demote_timeout
#              (asynchronous until a standby follows it: pg_auto_failover's wait_primary)
#   +1.2-3.5 s the other standby follows it: primary, synchronous again
# Only the first and the demote wait are settings. The defaults (20 s unhealthy, 30 s
# demote) are for real networks; a loopback test notices in about 2 s.
#
# primary_demote_timeout gives a primary cut off from the monitor the time to demote
# itself (its keeper does after timeout.network_partition_timeout without the monitor
# and without a standby; tune_node) before a standby is let take writes, so it stays above
# that timeout. Acknowledged runs are safe either way: from report_lsn on no standby
# streams from the old primary, so with synchronous_commit its commits cannot complete.
tune_monitor() {
  as_owner "$pgbin/psql" -h 127.0.0.1 -p "$(port_of monitor)" -U "$(owner_name)" -d pg_auto_failover -qtAX \
    -c "ALTER SYSTEM SET pgautofailover.health_check_period = 1000" \
    -c "ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000" \
    -c "ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1" \
    -c "ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500" \
    -c "ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 2000" \
    -c "ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 2500" \
    -c "SELECT pg_reload_conf()" >/dev/null
}

owner_name() { if [ "$(id -u)" -eq 0 ]; then echo postgres; else id -un; fi; }

tune_node() {
  local name=$1
  as_owner pg_autoctl config set --pgdata "$dir/$name" timeout.prepare_promotion_catchup 10 >/dev/null
  as_owner pg_autoctl config set --pgdata "$dir/$name" timeout.prepare_promotion_walreceiver 1 >/dev/null
  # Below primary_demote_timeout (tune_monitor): the old primary steps down first.
  as_owner pg_autoctl config set --pgdata "$dir/$name" timeout.network_partition_timeout 2 >/dev/null
}

# initdb before pg_autoctl (which then takes the cluster as it is), so that PostgreSQL
# listens on loopback only (the monitor has no --listen) and keeps its sockets in DIR.
# The standbys copy node1's configuration with its data (pg_basebackup).
init_cluster() {
  local name=$1
  as_owner "$pgbin/initdb" -D "$dir/$name" --auth=trust -E UTF8 --locale=C.UTF-8 \
    >"$dir/initdb-$name.log" 2>&1 ||
    { echo "pgaf.sh: initdb of $name failed, see $dir/initdb-$name.log" >&2; exit 1; }
  printf "listen_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\n" "$PGHOST" \
    >>"$dir/$name/postgresql.conf"
}

create_monitor() {
  [ -f "$dir/monitor/PG_VERSION" ] && return 0
  init_cluster monitor
  as_owner pg_autoctl create monitor --pgdata "$dir/monitor" --pgport "$(port_of monitor)" \
    --pgctl "$pgbin/pg_ctl" --hostname 127.0.0.1 --auth trust --no-ssl >"$dir/create-monitor.log" 2>&1 ||
    { echo "pgaf.sh: creating the monitor failed, see $dir/create-monitor.log" >&2; tail -n 20 "$dir/create-monitor.log" >&2; exit 1; }
}

create_node() {
  local name=$1
  [ -f "$dir/$name/PG_VERSION" ] && return 0
  if [ "$name" = node1 ]; then init_cluster node1; fi
  as_owner pg_autoctl create postgres --pgdata "$dir/$name" --pgport "$(port_of "$name")" \
    --pgctl "$pgbin/pg_ctl" --hostname 127.0.0.1 --listen 127.0.0.1 --name "$name" \
    --username devtime --dbname devtime --auth trust --no-ssl \
    --monitor "$(monitor_uri)" >"$dir/create-$name.log" 2>&1 ||
    { echo "pgaf.sh: creating $name failed, see $dir/create-$name.log" >&2; tail -n 20 "$dir/create-$name.log" >&2; exit 1; }
  tune_node "$name"
}

# True when the monitor sees NAME in STATE (its reported and assigned state).
node_in_state() {
  [ "$(monitor_sql "SELECT reportedstate || '/' || goalstate FROM pgautofailover.node WHERE nodename = '$1'")" = "$2/$2" ]
}

all_ready() {
  [ "$(monitor_sql "SELECT count(*) FROM pgautofailover.node WHERE reportedstate = goalstate
      AND goalstate IN ('primary', 'secondary')")" = 3 ] &&
    [ "$(monitor_sql "SELECT count(*) FROM pgautofailover.node WHERE goalstate = 'primary'")" = 1 ]
}

start() {
  if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$(dirname "$dir")"; then
    echo "pgaf.sh: the postgres user cannot reach $dir (as root the cluster runs as postgres);" \
      "choose a folder it can reach, e.g. under /tmp" >&2
    exit 1
  fi
  mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$PGHOST"
  chmod 700 "$XDG_RUNTIME_DIR"
  if [ "$(id -u)" -eq 0 ]; then chown -R postgres: "$dir"; fi
  for name in monitor node1 node2 node3; do port_of "$name" >/dev/null; done
  create_monitor
  run_service monitor
  wait_for 60 "the monitor accepting connections" monitor_sql "SELECT 1"
  tune_monitor
  create_node node1
  run_service node1
  wait_for 60 "node1 primary" node_in_state node1 single
  # The standbys copy node1 (pg_basebackup) one after the other: the monitor lets one
  # node join a group at a time.
  for name in node2 node3; do
    create_node "$name"
    run_service "$name"
    wait_for 90 "$name a secondary" node_in_state "$name" secondary
  done
  wait_for 60 "a primary and two secondaries" all_ready
}

stop() {
  local name pid
  for name in node1 node2 node3 monitor; do
    if [ -f "$dir/$name.pid" ]; then
      pid=$(cat "$dir/$name.pid")
      kill -TERM -- "-$pid" 2>/dev/null || true
    fi
  done
  for name in node1 node2 node3 monitor; do
    if [ -f "$dir/$name.pid" ]; then
      pid=$(cat "$dir/$name.pid")
      wait_for 30 "$name stopped" bash -c "! kill -0 -- -$pid" || kill -KILL -- "-$pid" 2>/dev/null || true
      rm -f "$dir/$name.pid"
    fi
    if [ -f "$dir/$name/postmaster.pid" ]; then
      as_owner "$pgbin/pg_ctl" -D "$dir/$name" -m immediate -w stop >/dev/null 2>&1 || true
    fi
  done
}

kill_node() {
  local name="node$1" pid
  pid=$(cat "$dir/$name.pid")
  kill -KILL -- "-$pid" 2>/dev/null || true
  # The postmaster, should it have left the group: a dead machine leaves nothing running.
  if [ -f "$dir/$name/postmaster.pid" ]; then
    kill -KILL "$(head -n 1 "$dir/$name/postmaster.pid")" 2>/dev/null || true
  fi
  rm -f "$dir/$name.pid"
}

primary() {
  monitor_sql "SELECT nodename FROM pgautofailover.node WHERE reportedstate IN ('primary', 'wait_primary', 'single')
      AND goalstate IN ('primary', 'wait_primary', 'single') ORDER BY nodeid LIMIT 1" | sed 's/^node//'
}

case "$command" in
  start) start ;;
  stop) stop ;;
  conninfo)
    echo "host=127.0.0.1,127.0.0.1,127.0.0.1 port=$(port_of node1),$(port_of node2),$(port_of node3)" \
      "user=devtime dbname=devtime target_session_attrs=read-write"
    ;;
  state) as_owner pg_autoctl show state --pgdata "$dir/monitor" ;;
  primary) primary ;;
  wait-primary)
    [ $# -eq 4 ] || usage
    wait_for "$4" "a primary other than node$3" bash -c "p=\$('$0' primary '$dir'); [ -n \"\$p\" ] && [ \"\$p\" != '$3' ]"
    primary
    ;;
  kill) [ $# -eq 3 ] || usage; kill_node "$3" ;;
  destroy)
    stop
    rm -rf "$dir"
    ;;
  *) usage ;;
esac
