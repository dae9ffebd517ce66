// libFuzzer target: devtime::trace::fuzz::PerfettoSystemTrace (see fuzz_targets.h). Build with
// CC=clang CXX=clang++ cmake -DDEVTIME_FUZZ=ON; run: fuzz_perfetto_system_trace
// tests/fuzz/corpus/perfetto_system_trace
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return devtime::trace::fuzz::PerfettoSystemTrace(data, size);
}
