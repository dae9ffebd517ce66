#!/bin/bash
# Speed and memory of devtime::trace vs Python's json module (issue 3 item 7).
#   tests/bench/trace/run.sh [MB] [--no-python]     default 256 MB; e.g. 1000 for 1 GB
# Env: TRACE_BENCH=path/to/trace_bench (default build-trace/bin/trace_bench), BENCH_DIR (default
# a fresh /tmp directory, removed at the end). Each run is pinned to one core (taskset -c 0).
set -euo pipefail
MB=${1:-256}
PY=1
[[ "${2:-}" == "--no-python" ]] && PY=0
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=${TRACE_BENCH:-$ROOT/build-trace/bin/trace_bench}
DIR=${BENCH_DIR:-$(mktemp -d /tmp/devtime_trace_bench.XXXXXX)}
trap '[[ -z "${BENCH_DIR:-}" ]] && rm -rf "$DIR"' EXIT
PIN="taskset -c 0"
command -v taskset >/dev/null || PIN=""

echo "generating ~${MB} MB Kineto traces in $DIR ..."
"$BIN" generate "$DIR/trace.json" $((MB * 1000000))
"$BIN" generate "$DIR/trace.json.gz" $((MB * 1000000))
ls -l "$DIR"

# "wall_s cpu_s rss_mb" from a RESULT line.
result() { grep '^RESULT' | sed 's/.* seconds=\([0-9.]*\) cpu_seconds=\([0-9.]*\) peak_rss_mb=\([0-9.]*\).*/\1 \2 \3/'; }
# Runs a measurement, shows its output, keeps "wall_s cpu_s rss_mb".
measure() { local out; out=$("$@"); echo "$out" | grep -v '^RESULT' >&2; echo "$out" | result; }
C_PLAIN=$(measure $PIN "$BIN" summarize "$DIR/trace.json")
C_GZ=$(measure $PIN "$BIN" summarize "$DIR/trace.json.gz")
if [[ $PY == 1 ]]; then
  P_PLAIN=$(measure $PIN /usr/bin/python3 "$ROOT/tests/bench/trace/baseline.py" "$DIR/trace.json")
  P_GZ=$(measure $PIN /usr/bin/python3 "$ROOT/tests/bench/trace/baseline.py" "$DIR/trace.json.gz")
  /usr/bin/python3 - "$C_PLAIN" "$C_GZ" "$P_PLAIN" "$P_GZ" <<'PYEOF'
import sys
cp, cg, pp, pg = [tuple(map(float, a.split())) for a in sys.argv[1:5]]
for kind, c, p in (("plain", cp, pp), ("gzip ", cg, pg)):
    print("RATIO %s: devtime is %.1fx faster than python json (wall), %.1fx (CPU time); peak RSS %.1fx smaller"
          % (kind, p[0] / c[0], p[1] / c[1], p[2] / c[2]))
PYEOF
fi
