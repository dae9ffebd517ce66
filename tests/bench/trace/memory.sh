#!/bin/bash
# Peak anonymous memory of `devtime-agent summarize` (issue 23: "bounded by nothing but the
# limits"): RSS minus file-backed pages (the mapped trace, the binary), i.e. /proc/PID/status
# RssAnon, sampled every 2 ms for the whole process — reading, summarizing, building the
# RunSummary and printing its JSON. The bound is 256 MiB beyond the mapped input.
#   tests/bench/trace/memory.sh [SCALE]    SCALE 1 (default): the issue's sizes; 0.25: a quarter
# Cases: a. 2 GB, 45k steps (realistic shape; and classic, the table); b. 300 MB, 138k steps
# (--format json); c. 1 GB, 1 M distinct op names (--format json and the table); d. one 100 MB
# op name among 8 MB of events (--format json and the table). Each case's peak is printed with
# its ratio to the bound.
# Env: TRACE_BENCH (default build-release/bin/trace_bench), AGENT (default
# build-release/bin/devtime-agent), BENCH_DIR (default a fresh /tmp directory, removed at the end).
set -euo pipefail
SCALE=${1:-1}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BENCH=${TRACE_BENCH:-$ROOT/build-release/bin/trace_bench}
AGENT=${AGENT:-$ROOT/build-release/bin/devtime-agent}
DIR=${BENCH_DIR:-$(mktemp -d /tmp/devtime_memory_bench.XXXXXX)}
trap '[[ -z "${BENCH_DIR:-}" ]] && rm -rf "$DIR"' EXIT
BOUND_MB=256

# Runs "$@" with stdout discarded; prints its exit code, peak RssAnon and peak VmRSS in MiB.
peak() {
  python3 - "$@" <<'PYEOF'
import subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
anon = rss = 0
while p.poll() is None:
    try:
        with open(f"/proc/{p.pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = max(anon, int(line.split()[1]))
                elif line.startswith("VmRSS:"):
                    rss = max(rss, int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.002)
print(p.returncode, f"{anon / 1024:.1f}", f"{rss / 1024:.1f}")
PYEOF
}

# case NAME BYTES GENERATE_FLAGS -- SUMMARIZE_FLAGS
run_case() {
  local name=$1 bytes=$2 gen=$3 fmt=$4 file="$DIR/$1.json"
  [[ -f $file ]] || "$BENCH" generate "$file" "$bytes" $gen >/dev/null
  local out rc anon rss
  out=$(peak "$AGENT" summarize $fmt "$file")
  read -r rc anon rss <<<"$out"
  python3 -c "import sys; a=float(sys.argv[2]); print(f'MEMORY {sys.argv[1]}: peak_anon_mb={a} peak_rss_mb={sys.argv[3]} exit={sys.argv[4]} ({a / $BOUND_MB:.2f} of the {$BOUND_MB} MiB bound)')" \
    "$name ${fmt:-table}" "$anon" "$rss" "$rc"
}

s() { python3 -c "print(int($1 * $SCALE))"; }
run_case a_2gb_45k_steps "$(s 2000000000)" "--steps $(s 45000)" ""
run_case a_2gb_45k_steps "$(s 2000000000)" "--steps $(s 45000)" "--format json"
# The issue 3 shape (fewer, larger events: 4.06 M per GB instead of ~5.5 M, 8.1 M in all).
run_case a_2gb_45k_steps_classic "$(s 2000000000)" "--steps $(s 45000) --shape classic" ""
run_case b_300mb_138k_steps "$(s 300000000)" "--steps $(s 138000)" "--format json"
run_case c_1gb_1m_names "$(s 1000000000)" "--names $(s 1000000)" "--format json"
run_case c_1gb_1m_names "$(s 1000000000)" "--names $(s 1000000)" ""
run_case d_100mb_name "$(s 8000000)" "--long-name-bytes $(s 100000000)" "--format json"
run_case d_100mb_name "$(s 8000000)" "--long-name-bytes $(s 100000000)" ""
