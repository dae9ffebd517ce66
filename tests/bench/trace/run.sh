#!/bin/bash
# Speed and memory of devtime::trace vs the baselines in the same run (issues 3, 23):
# simdjson On-Demand walking the same events (plain), Python's json module, `wc -l`; and the
# reader alone (`trace_bench read`: ReadTraceFile without the summarizer).
#   tests/bench/trace/run.sh [MB] [--no-python] [--shape realistic|classic]
#     default 256 MB, realistic shape (flows, small ops, ≥ 4.5 M events per GB); 1000 for 1 GB
# Env: TRACE_BENCH=path/to/trace_bench (default build-trace/bin/trace_bench), BENCH_DIR (default
# a fresh /tmp directory, removed at the end), RUNS (measurements per file, default 3: the
# minimum CPU time is kept). Each run is pinned to one core (taskset -c 0), a gzip one to two
# (its inflater runs on a thread of its own).
set -euo pipefail
MB=${1:-256}
shift || true
PY=1
SHAPE=realistic
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-python) PY=0 ;;
    --shape) SHAPE=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
RUNS=${RUNS:-3}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=${TRACE_BENCH:-$ROOT/build-trace/bin/trace_bench}
DIR=${BENCH_DIR:-$(mktemp -d /tmp/devtime_trace_bench.XXXXXX)}
trap '[[ -z "${BENCH_DIR:-}" ]] && rm -rf "$DIR"' EXIT
PIN="taskset -c 0"
PIN2="taskset -c 0,1"  # gzip: the reader and its inflater thread
command -v taskset >/dev/null || { PIN=""; PIN2=""; }

echo "generating ~${MB} MB Kineto traces ($SHAPE) in $DIR ..."
"$BIN" generate "$DIR/trace.json" $((MB * 1000000)) --shape "$SHAPE"
"$BIN" generate "$DIR/trace.json.gz" $((MB * 1000000)) --shape "$SHAPE"
ls -l "$DIR"

# "wall_s cpu_s rss_mb" from a RESULT line.
result() { grep '^RESULT' | sed 's/.* seconds=\([0-9.]*\) cpu_seconds=\([0-9.]*\) peak_rss_mb=\([0-9.]*\).*/\1 \2 \3/'; }
# Runs a measurement RUNS times, shows its output, keeps "wall_s cpu_s rss_mb": the least wall
# time and the least CPU time of the runs (on a loaded machine each is the least disturbed), the
# RSS of the latter.
measure() {
  local out best="" wall="" i
  for ((i = 0; i < RUNS; i++)); do
    out=$("$@")
    echo "$out" | grep -v '^RESULT' >&2
    best=$(printf '%s\n%s\n' "$best" "$(echo "$out" | result)" | grep . | sort -k2 -g | head -1)
    wall=$(printf '%s\n%s\n' "$wall" "$(echo "$out" | result)" | grep . | sort -k1 -g | head -1)
  done
  echo "${wall%% *} ${best#* }"
}
C_PLAIN=$(measure $PIN "$BIN" summarize "$DIR/trace.json")
C_GZ=$(measure $PIN2 "$BIN" summarize "$DIR/trace.json.gz")
R_PLAIN=$(measure $PIN "$BIN" read "$DIR/trace.json")
R_GZ=$(measure $PIN2 "$BIN" read "$DIR/trace.json.gz")
# The baseline's arrays on huge pages too (glibc >= 2.35; its input is read into them already).
S_PLAIN=$(GLIBC_TUNABLES=glibc.malloc.hugetlb=1 measure $PIN "$BIN" ondemand "$DIR/trace.json")
# wc -l: reading the bytes and nothing else (the floor of any reader of the file).
WC_CPU=$( { /usr/bin/time -f '%U %S' $PIN wc -l "$DIR/trace.json" >/dev/null; } 2>&1 | awk '{print $1 + $2}')
echo "wc -l plain: $WC_CPU s CPU" >&2
BYTES=$(stat -c %s "$DIR/trace.json")
if [[ $PY == 1 ]]; then
  P_PLAIN=$(RUNS=1 measure $PIN /usr/bin/python3 "$ROOT/tests/bench/trace/baseline.py" "$DIR/trace.json")
  P_GZ=$(RUNS=1 measure $PIN /usr/bin/python3 "$ROOT/tests/bench/trace/baseline.py" "$DIR/trace.json.gz")
else
  P_PLAIN="0 0 0"
  P_GZ="0 0 0"
fi
/usr/bin/python3 - "$C_PLAIN" "$C_GZ" "$S_PLAIN" "$P_PLAIN" "$P_GZ" "$R_PLAIN" "$R_GZ" "$WC_CPU" "$BYTES" <<'PYEOF'
import sys
cp, cg, sp, pp, pg, rp, rg = [tuple(map(float, a.split())) for a in sys.argv[1:8]]
wc, size = float(sys.argv[8]), float(sys.argv[9])
mb = size / 1e6
print("RATE devtime plain %.0f MB/s, gzip %.0f MB/s (JSON bytes per CPU s); simdjson on-demand %.0f MB/s; wc -l %.0f MB/s"
      % (mb / cp[1], mb / cg[1], mb / sp[1], mb / wc if wc > 0 else float("nan")))
# gzip inflates on a second thread: its CPU time counts both threads, its wall time is what a
# user waits (with a second core free).
print("RATE wall: devtime plain %.0f MB/s, gzip %.0f MB/s (JSON bytes per wall s)" % (mb / cp[0], mb / cg[0]))
print("RATE reader alone: plain %.0f MB/s, gzip %.0f MB/s per CPU s (both threads); gzip %.0f MB/s per wall s"
      % (mb / rp[1], mb / rg[1], mb / rg[0]))
print("RATIO plain: devtime is %.2fx simdjson on-demand (CPU time); peak RSS %.1fx smaller"
      % (sp[1] / cp[1], sp[2] / cp[2]))
print("RATIO plain: devtime's reader alone is %.2fx simdjson on-demand (CPU time)" % (sp[1] / rp[1]))
for kind, c, p in (("plain", cp, pp), ("gzip ", cg, pg)):
    if p[1] > 0:
        print("RATIO %s: devtime is %.1fx faster than python json (wall), %.1fx (CPU time); peak RSS %.1fx smaller"
              % (kind, p[0] / c[0], p[1] / c[1], p[2] / c[2]))
PYEOF
