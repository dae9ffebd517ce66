// libFuzzer target: devtime::trace::fuzz::Environment (see fuzz_targets.h). Build with
// CC=clang CXX=clang++ cmake -DDEVTIME_FUZZ=ON; run: fuzz_environment tests/fuzz/corpus/environment
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return devtime::trace::fuzz::Environment(data, size);
}
