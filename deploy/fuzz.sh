#!/usr/bin/env bash
# Fuzzes devtime's trace readers with libFuzzer (clang, ASan + UBSan), as the test command
# does: builds the fuzz_* targets in build-fuzz (clang; the readers are instrumented there),
# then runs each for DEVTIME_FUZZ_SECONDS (default 60) on a scratch copy of its seed corpus
# (tests/fuzz/corpus/<target>), two at a time. A finding (crash, leak, UB, timeout) fails the
# run and leaves its reproducer in .devtime/fuzz/findings/<target>/; replay it with
#   build-fuzz/bin/fuzz_<target> .devtime/fuzz/findings/<target>/crash-...
# and add it to tests/fuzz/corpus/<target>/ once fixed (trace_fuzz_regression_tests replays it).
#
#   deploy/fuzz.sh                 every target
#   deploy/fuzz.sh kineto_json     only these targets
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
seconds=${DEVTIME_FUZZ_SECONDS:-60}
build=${DEVTIME_FUZZ_BUILD_DIR:-build-fuzz}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(kineto_json neuron_system_trace perfetto_system_trace key_averages environment)
fi

work="$root/.devtime/fuzz"
rm -rf "$work/scratch" "$work/logs"
mkdir -p "$work/scratch" "$work/logs"

echo "devtime: building the fuzz targets with clang in $build"
if ! { CC=clang CXX=clang++ cmake -S . -B "$build" -DDEVTIME_FUZZ=ON -DDEVTIME_WERROR=ON \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" \
         --target "${targets[@]/#/fuzz_}"; } >"$work/build.log" 2>&1; then
  tail -n 40 "$work/build.log" >&2
  echo "devtime: building the fuzz targets failed (log: $work/build.log)" >&2
  exit 1
fi

fuzz_one() {  # fuzz_one TARGET: runs it, leaves its log; exit status is libFuzzer's
  local target=$1
  local scratch="$work/scratch/$target" findings="$work/findings/$target/"
  mkdir -p "$scratch" "$findings"
  cp -r "tests/fuzz/corpus/$target/." "$scratch/"
  # -max_len 65536: the seeds are small; longer inputs only slow the search down.
  "$build/bin/fuzz_$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$findings" -print_final_stats=1 \
    "$scratch" >"$work/logs/$target.log" 2>&1
}

failed=0
pids=()
names=()
for target in "${targets[@]}"; do
  fuzz_one "$target" &
  pids+=($!)
  names+=("$target")
  if [ ${#pids[@]} -ge 2 ]; then
    wait "${pids[0]}" || { echo "devtime: fuzz_${names[0]} FOUND A PROBLEM"; failed=1; }
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "devtime: fuzz_${names[$i]} FOUND A PROBLEM"; failed=1; }
done

for target in "${targets[@]}"; do
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/logs/$target.log" | tail -n 1)
  echo "devtime: fuzz_$target: ${runs:-?} executions in ${seconds} s"
done
if [ "$failed" -ne 0 ]; then
  echo "devtime: fuzzing found problems; reproducers in $work/findings/, logs in $work/logs/" >&2
  for target in "${targets[@]}"; do
    grep -l "ERROR\|SUMMARY" "$work/logs/$target.log" >/dev/null 2>&1 &&
      tail -n 30 "$work/logs/$target.log" >&2
  done
  exit 1
fi
echo "devtime: fuzzing found nothing"
