// libFuzzer target: devtime::trace::fuzz::KeyAverages (see fuzz_targets.h). Build with
// CC=clang CXX=clang++ cmake -DDEVTIME_FUZZ=ON; run: fuzz_key_averages
// tests/fuzz/corpus/key_averages
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return devtime::trace::fuzz::KeyAverages(data, size);
}
