// libFuzzer target: devtime::trace::fuzz::KinetoJson (see fuzz_targets.h). Build with
// CC=clang CXX=clang++ cmake -DDEVTIME_FUZZ=ON; run: fuzz_kineto_json tests/fuzz/corpus/kineto_json
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return devtime::trace::fuzz::KinetoJson(data, size);
}
