#!/usr/bin/env bash
# devtime's local stack on one machine, in one command:
#
#   deploy/quickstart.sh          set up and run: install packages, build, start a private
#                                 PostgreSQL (.devtime/quickstart/pg, any free port) and the
#                                 collector, upload the RMSNorm demo history and a real CPU
#                                 profile made now with Debian's python3-torch
#   deploy/quickstart.sh status   what is running, and where
#   deploy/quickstart.sh stop     stop the collector and PostgreSQL (data is kept)
#   deploy/quickstart.sh destroy  stop and delete everything under .devtime/quickstart
#
# Re-running is safe: running parts are reused and the demo history is stored only once.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
state="$root/.devtime/quickstart"
pg_dir="$state/pg"
bin="$root/build/bin"
mkdir -p "$state"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

collector_pid() {
  local pid
  pid=$(cat "$state/collector.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

ready_value() {  # ready_value KEY: a number from the collector's ready file
  sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$state/collector.ready"
}

start_collector() {
  if [ -n "$(collector_pid)" ]; then
    say "collector already running (pid $(collector_pid))"
    return
  fi
  local grpc=50051 metrics=9464
  port_free "$grpc" || grpc=0
  port_free "$metrics" || metrics=0
  rm -f "$state/collector.ready"
  say "starting devtime-collector"
  setsid nohup "$bin/devtime-collector" --database "$(deploy/pg.sh conninfo "$pg_dir")" \
    --listen "127.0.0.1:$grpc" --metrics-listen "127.0.0.1:$metrics" \
    --ready-file "$state/collector.ready" >>"$state/collector.log" 2>&1 </dev/null &
  echo $! >"$state/collector.pid"
  for _ in $(seq 1 300); do
    [ -f "$state/collector.ready" ] && return
    kill -0 "$(cat "$state/collector.pid")" 2>/dev/null || break
    sleep 0.1
  done
  echo "devtime-collector did not start; its log ($state/collector.log):" >&2
  tail -n 20 "$state/collector.log" >&2
  exit 1
}

upload_demo() {
  local collector=$1
  say "uploading the RMSNorm demo history (TorchNeuron guide numbers, 3 workloads x 14 nights)"
  /usr/bin/python3 deploy/demo/make_history.py --out "$state/demo"
  "$bin/devtime-agent" upload --collector "$collector" "$state"/demo/*.json | tail -n 3
}

profile_on_cpu() {
  local collector=$1 out
  out="$state/profiles/$(date -u +%Y%m%dT%H%M%SZ)"
  say "profiling the naive RMSNorm on this CPU with Debian's python3-torch"
  /usr/bin/python3 agents/harness/devtime_harness.py --workload rmsnorm-naive --steps 5 --out "$out"
  "$bin/devtime-agent" summarize "$out"
  "$bin/devtime-agent" summarize "$out" --format json --model rmsnorm --workload naive-local-cpu \
    --job quickstart >"$out/run_summary.json"
  "$bin/devtime-agent" upload --collector "$collector" "$out/run_summary.json"
  ln -sfn "$out" "$state/profiles/latest"
}

print_next_steps() {
  local collector=$1 metrics=$2
  cat <<NEXT

devtime is running: collector at $collector, data in $state.
Look at it:
  export DEVTIME_COLLECTOR=$collector PATH="$bin:\$PATH"
  devtimectl models list
  devtimectl runs list --model rmsnorm --workload fused
  devtimectl runs show \$(devtimectl runs list --workload fused --limit 1 --format json | sed -n 's/.*"run_id": "\(.*\)".*/\1/p')
  devtime-agent summarize $state/profiles/latest   # the CPU profile made just now
Metrics:  curl -s http://127.0.0.1:$metrics/metrics | grep devtime_
Stop:     deploy/quickstart.sh stop
NEXT
}

up() {
  say "installing Debian packages (deploy/install-deps.sh)"
  deploy/install-deps.sh
  say "building (build/)"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target devtime-collector devtime-agent devtimectl
  say "starting PostgreSQL ($pg_dir)"
  deploy/pg.sh start "$pg_dir"
  start_collector
  local collector="127.0.0.1:$(ready_value grpc_port)" metrics
  metrics=$(ready_value metrics_port)
  upload_demo "$collector"
  profile_on_cpu "$collector"
  say "the fused workload's history (it loses its fusion on 2026-11-25):"
  "$bin/devtimectl" --collector "$collector" runs list --model rmsnorm --workload fused --limit 8
  print_next_steps "$collector" "$metrics"
}

status() {
  if [ -n "$(collector_pid)" ]; then
    echo "collector: running (pid $(collector_pid)), gRPC 127.0.0.1:$(ready_value grpc_port)," \
      "metrics http://127.0.0.1:$(ready_value metrics_port)/metrics"
  else
    echo "collector: stopped"
  fi
  if deploy/pg.sh status "$pg_dir" 2>/dev/null; then
    echo "postgresql: running ($(deploy/pg.sh conninfo "$pg_dir"))"
  else
    echo "postgresql: stopped"
  fi
}

stop() {
  local pid
  pid=$(collector_pid)
  if [ -n "$pid" ]; then
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$state/collector.pid" "$state/collector.ready"
  [ -d "$pg_dir" ] && deploy/pg.sh stop "$pg_dir"
  say "stopped (data kept in $state)"
}

case "${1:-up}" in
  up) up ;;
  status) status ;;
  stop) stop ;;
  destroy) stop; [ -d "$pg_dir" ] && deploy/pg.sh destroy "$pg_dir"; rm -rf "$state"; say "removed $state" ;;
  -h|--help|help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "unknown command '$1' (up, status, stop, destroy)" >&2; exit 2 ;;
esac
