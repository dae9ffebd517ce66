#!/usr/bin/env bash
# devtime's local stack on one machine, in one command:
#
#   deploy/quickstart.sh          set up and run: install packages, build, start a private
#                                 PostgreSQL (.devtime/quickstart/pg, any free port), the
#                                 collector and an agent, upload the RMSNorm demo history, and
#                                 run a nightly CPU profiling job once now (Debian's
#                                 python3-torch through the harness)
#   deploy/quickstart.sh status   what is running, and where; exits 0 when the collector, the
#                                 agent and PostgreSQL all run, 3 when any of them is stopped
#   deploy/quickstart.sh env      the exports that point devtimectl and devtime-agent at this
#                                 stack: eval "$(deploy/quickstart.sh env)"
#   deploy/quickstart.sh stop     stop the agent, the collector and PostgreSQL (data is kept)
#   deploy/quickstart.sh destroy  stop and delete everything under .devtime/quickstart
#
# Re-running is safe: running parts are reused and the demo history is stored only once.
# The ports chosen at the first start (50051 and 9464 when free, else free ones) are kept in
# .devtime/quickstart/ports and reused on every restart, so the exports stay true.
#
# Environment: DEVTIME_QUICKSTART_DIR  the stack's folder instead of .devtime/quickstart
#              DEVTIME_BUILD_DIR       use the executables already built in DIR/bin (no
#                                      install, no build: what tests/readme does)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
state=$(mkdir -p "${DEVTIME_QUICKSTART_DIR:-$root/.devtime/quickstart}" &&
  cd "${DEVTIME_QUICKSTART_DIR:-$root/.devtime/quickstart}" && pwd)
# `destroy` deletes the whole folder, so a DEVTIME_QUICKSTART_DIR must be new or empty at its
# first use (or one a quickstart made: it carries this marker), never, say, a home folder.
if [ ! -e "$state/.devtime-quickstart" ]; then
  if [ -n "${DEVTIME_QUICKSTART_DIR:-}" ] && [ -n "$(ls -A "$state")" ]; then
    echo "devtime: $state is neither empty nor a quickstart's folder; choose a new or empty" \
      "DEVTIME_QUICKSTART_DIR" >&2
    exit 2
  fi
  : >"$state/.devtime-quickstart"
fi
pg_dir="$state/pg"
bin="${DEVTIME_BUILD_DIR:-$root/build}/bin"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

stop_process() {
  local pid=$1
  [ -n "$pid" ] || return 0
  kill "$pid"
  for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

token="$state/admin.token"   # created by the collector at its first start
ports_file="$state/ports"    # grpc=PORT / metrics=PORT: chosen once, kept across restarts
env_file="$state/env"        # the exports for this stack (deploy/quickstart.sh env)
ctl() { "$bin/devtimectl" --collector "$collector" --token-file "$token" "$@"; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

collector_pid() {
  local pid
  pid=$(cat "$state/collector.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

ready_value() {  # ready_value KEY: a number from the collector's ready file
  sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$state/collector.ready"
}

kept_port() { sed -n "s/^$1=//p" "$ports_file" 2>/dev/null; }

# choose_port NAME PREFERRED: the port kept from an earlier start, else PREFERRED, else 0 (the
# collector then binds a free one, which is kept from then on). A kept port that another
# program took meanwhile is given up loudly: the exports change once, then stay.
choose_port() {
  local kept
  kept=$(kept_port "$1")
  if [ -n "$kept" ]; then
    if port_free "$kept"; then echo "$kept"; return; fi
    echo "devtime: the $1 port $kept kept in $ports_file is taken by another program now;" \
      "choosing a new one (run: eval \"\$(deploy/quickstart.sh env)\")" >&2
  fi
  if port_free "$2"; then echo "$2"; else echo 0; fi
}

write_env() {  # write_env COLLECTOR
  cat >"$env_file" <<ENV
export DEVTIME_COLLECTOR=$1
export DEVTIME_TOKEN_FILE=$token
export PATH="$bin:\$PATH"
# Tab completion for devtimectl, devtime-agent and devtime-collector.
if [ -n "\${ZSH_VERSION:-}" ]; then source "$root/deploy/completions/devtime.zsh";
elif [ -n "\${BASH_VERSION:-}" ]; then source "$root/deploy/completions/devtime.bash"; fi
ENV
}

# A part started from an older build is restarted, so re-running after a rebuild is safe.
build_stamp() { stat -c %Y "$bin/$1" 2>/dev/null || echo 0; }
restart_if_rebuilt() {  # restart_if_rebuilt NAME PID_FUNCTION
  local pid
  pid=$($2)
  if [ -n "$pid" ] && [ "$(cat "$state/$1.build" 2>/dev/null)" != "$(build_stamp "devtime-$1")" ]; then
    say "$1 was rebuilt: restarting it"
    stop_process "$pid"
  fi
}

launch_collector() {  # launch_collector GRPC_PORT METRICS_PORT: 0 once ready, 1 if it ended
  rm -f "$state/collector.ready"
  setsid nohup "$bin/devtime-collector" --database "$(deploy/pg.sh conninfo "$pg_dir")" \
    --listen "127.0.0.1:$1" --metrics-listen "127.0.0.1:$2" \
    --admin-token-file "$token" --ready-file "$state/collector.ready" \
    >>"$state/collector.log" 2>&1 </dev/null &
  echo $! >"$state/collector.pid"
  for _ in $(seq 1 300); do
    if [ -f "$state/collector.ready" ]; then
      printf 'grpc=%s\nmetrics=%s\n' "$(ready_value grpc_port)" "$(ready_value metrics_port)" \
        >"$ports_file"
      return 0
    fi
    kill -0 "$(cat "$state/collector.pid")" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

start_collector() {
  restart_if_rebuilt collector collector_pid
  if [ -n "$(collector_pid)" ]; then
    say "collector already running (pid $(collector_pid))"
    return
  fi
  build_stamp devtime-collector >"$state/collector.build"
  local grpc metrics
  grpc=$(choose_port grpc 50051)
  metrics=$(choose_port metrics 9464)
  say "starting devtime-collector"
  launch_collector "$grpc" "$metrics" && return
  # A port free when probed can be taken before the collector binds it (another stack
  # starting at the same moment): once more, on ports the collector chooses.
  if [ "$grpc$metrics" != 00 ] && [ -z "$(collector_pid)" ]; then
    say "a chosen port was taken meanwhile: starting devtime-collector on free ports"
    launch_collector 0 0 && return
  fi
  echo "devtime-collector did not start; its log ($state/collector.log):" >&2
  tail -n 20 "$state/collector.log" >&2
  exit 1
}

upload_demo() {
  local collector=$1
  say "uploading the RMSNorm demo history (TorchNeuron guide numbers, 3 workloads x 14 nights)"
  /usr/bin/python3 deploy/demo/make_history.py --out "$state/demo"
  "$bin/devtime-agent" upload --collector "$collector" --token-file "$token" "$state"/demo/*.json |
    tail -n 3
}

agent_pid() {
  local pid
  pid=$(cat "$state/agent.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

start_agent() {
  local collector=$1
  restart_if_rebuilt agent agent_pid
  if [ -n "$(agent_pid)" ] && ! grep -qx "collector: $collector" "$state/agent.yaml"; then
    say "the collector moved to $collector: restarting the agent"
    stop_process "$(agent_pid)"
  fi
  if [ -n "$(agent_pid)" ]; then
    say "agent already running (pid $(agent_pid))"
    return
  fi
  local host
  host=$(hostname 2>/dev/null || echo localhost)
  ctl agents add quickstart-agent --host "$host" >"$state/agent.token" 2>/dev/null
  chmod 600 "$state/agent.token"
  cat >"$state/agent.yaml" <<AGENT
name: quickstart-agent
host: $host
token_file: $state/agent.token
labels: {pool: quickstart}
collector: $collector
work_dir: $state/agent/runs
spool_dir: $state/agent/spool
state_dir: $state/agent/state
harness_python: /usr/bin/python3
harness: $root/agents/harness/devtime_harness.py
AGENT
  say "starting devtime-agent (the daemon that runs scheduled jobs)"
  build_stamp devtime-agent >"$state/agent.build"
  setsid nohup "$bin/devtime-agent" run --config "$state/agent.yaml" >>"$state/agent.log" 2>&1 </dev/null &
  echo $! >"$state/agent.pid"
}

# A nightly job on this machine's CPU, run once right now through the whole job path:
# schedule -> agent -> harness (Debian's python3-torch) -> trace summary -> spool -> upload.
profile_on_cpu() {
  local collector=$1
  cat >"$state/jobs.yaml" <<JOBS
jobs:
  - name: rmsnorm-naive-local-cpu
    model: rmsnorm
    workload: naive-local-cpu
    command: "{python} {harness} --workload rmsnorm-naive --steps {steps} --out {output_dir}"
    schedule: {cron: "0 2 * * *", time_zone: UTC, jitter_seconds: 0}
    selector: {labels: {pool: quickstart}}
    timeout_seconds: 600
    capture_steps: 5
JOBS
  ctl jobs apply -f "$state/jobs.yaml"
  for _ in $(seq 1 100); do
    ctl agents list 2>/dev/null | grep -q "quickstart-agent .* yes" && break
    sleep 0.2
  done
  say "profiling the naive RMSNorm on this CPU now (job rmsnorm-naive-local-cpu, run-now)"
  local before
  before=$(ctl jobs history rmsnorm-naive-local-cpu | grep -c succeeded || true)
  ctl jobs run-now rmsnorm-naive-local-cpu >/dev/null
  for _ in $(seq 1 300); do
    local now
    now=$(ctl jobs history rmsnorm-naive-local-cpu | grep -c succeeded || true)
    [ "$now" -gt "$before" ] && break
    sleep 1
  done
  ctl jobs history rmsnorm-naive-local-cpu --limit 3
  local run_dir
  run_dir=$(ls -td "$state"/agent/runs/rmsnorm-naive-local-cpu/*/ 2>/dev/null | head -n 1)
  [ -n "$run_dir" ] && ln -sfn "$run_dir/output" "$state/latest-profile"
  [ -e "$state/latest-profile" ] && "$bin/devtime-agent" summarize "$state/latest-profile" | head -n 12
}

# The demo's fused workload on 2026-11-24 (fused) and 2026-11-25 (fusion lost): fixed ids,
# derived by deploy/demo/make_history.py from workload and night.
fused_before=08f66244-c1be-511b-a153-caf06a56c0de
fused_after=b87ae65c-1586-5981-9b67-2f63345e092d

print_next_steps() {
  local collector=$1 metrics=$2
  cat <<NEXT

devtime is running: collector at $collector, data in $state.
Look at it (the exports are in $env_file; the ports stay the same across restarts):
  eval "\$(deploy/quickstart.sh env)"
  devtimectl models list
  devtimectl runs list --model rmsnorm --workload fused
  devtimectl runs show latest --workload fused    # or a run id's first 8 hex digits
  devtimectl compare $fused_before $fused_after   # the night the fusion was lost
  devtimectl check --run $fused_after --against $fused_before; echo "exit \$?"   # a CI gate
  devtimectl regressions list                      # what the detector opened (the lost fusion)
  devtimectl regressions show \$(devtimectl regressions list --format ids | head -n 1)
  devtimectl report --model rmsnorm --html $state/report-rmsnorm.html   # the page below, again
  devtimectl jobs list                             # the local nightly job, run once just now
  devtime-agent summarize $state/latest-profile   # the CPU profile it made
Report:   $state/report-rmsnorm.html (open it in a browser: self-contained, no network)
Metrics:  curl -s http://127.0.0.1:$metrics/metrics | grep devtime_
Stop:     deploy/quickstart.sh stop
NEXT
}

up() {
  if [ -n "${DEVTIME_BUILD_DIR:-}" ]; then
    say "using the executables in $bin (DEVTIME_BUILD_DIR)"
  else
    say "installing Debian packages (deploy/install-deps.sh)"
    deploy/install-deps.sh
    say "building (build/)"
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target devtime-collector devtime-agent devtimectl
  fi
  say "starting PostgreSQL ($pg_dir)"
  deploy/pg.sh start "$pg_dir"
  start_collector
  local collector="127.0.0.1:$(ready_value grpc_port)" metrics
  metrics=$(ready_value metrics_port)
  write_env "$collector"
  upload_demo "$collector"
  start_agent "$collector"
  profile_on_cpu "$collector"
  say "the fused workload's history (it loses its fusion on 2026-11-25):"
  ctl runs list --model rmsnorm --workload fused --limit 8
  say "what changed that night (devtimectl compare):"
  ctl compare "$fused_before" "$fused_after" | head -n 16
  say "the regression devtime detected, attributed and opened (devtimectl regressions list):"
  ctl regressions list
  say "writing the HTML report (devtimectl report)"
  ctl report --model rmsnorm --html "$state/report-rmsnorm.html"
  print_next_steps "$collector" "$metrics"
}

# Exits 3 (the exit code of "could not reach the collector", README "Exit codes") when a part
# of the stack is stopped, so that a script can wait on `until deploy/quickstart.sh status`.
status() {
  local stopped=0
  if [ -n "$(collector_pid)" ]; then
    echo "collector: running (pid $(collector_pid)), gRPC 127.0.0.1:$(ready_value grpc_port)," \
      "metrics http://127.0.0.1:$(ready_value metrics_port)/metrics"
    echo "  use it:  eval \"\$(deploy/quickstart.sh env)\"   # $(sed -n 's/^export DEVTIME_COLLECTOR=//p' "$env_file")"
  else
    echo "collector: stopped"
    stopped=1
  fi
  if [ -n "$(agent_pid)" ]; then
    echo "agent: running (pid $(agent_pid)), log $state/agent.log"
  else
    echo "agent: stopped"
    stopped=1
  fi
  if deploy/pg.sh status "$pg_dir" 2>/dev/null; then
    echo "postgresql: running ($(deploy/pg.sh conninfo "$pg_dir"))"
  else
    echo "postgresql: stopped"
    stopped=1
  fi
  [ "$stopped" -eq 0 ] || exit 3
}

stop() {
  stop_process "$(agent_pid)"
  stop_process "$(collector_pid)"
  rm -f "$state/agent.pid" "$state/collector.pid" "$state/collector.ready"
  [ -d "$pg_dir" ] && deploy/pg.sh stop "$pg_dir"
  say "stopped (data kept in $state)"
}

case "${1:-up}" in
  up) up ;;
  status) status ;;
  env)
    if [ ! -f "$env_file" ]; then
      echo "no quickstart stack yet: run deploy/quickstart.sh first" >&2
      exit 1
    fi
    cat "$env_file" ;;
  stop) stop ;;
  destroy) stop; [ -d "$pg_dir" ] && deploy/pg.sh destroy "$pg_dir"; rm -rf "$state"; say "removed $state" ;;
  -h|--help|help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "unknown command '$1' (up, status, env, stop, destroy)" >&2; exit 2 ;;
esac
