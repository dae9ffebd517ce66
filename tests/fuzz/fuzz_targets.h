// One entry point per devtime::trace reader, shared by the libFuzzer targets (fuzz_*.cc, built
// with -DDEVTIME_FUZZ=ON and clang) and the always-built gtest regression test
// (fuzz_regression_test.cc), which replays the seed corpus and a set of nasty inputs.
// Each returns normally for any input: errors are statuses, never crashes or hangs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace devtime::trace::fuzz {

// Kineto / legacy trace JSON, plain or gzip, then the summary (and its table).
int KinetoJson(const uint8_t* data, size_t size);
// Neuron system trace JSON (fetch-API or neuron-explorer form).
int NeuronSystemTrace(const uint8_t* data, size_t size);
// Neuron Explorer's Perfetto system profile (.pftrace bytes, plain or gzip).
int PerfettoSystemTrace(const uint8_t* data, size_t size);
// The harness's key_averages.json.
int KeyAverages(const uint8_t* data, size_t size);
// The harness's environment.json.
int Environment(const uint8_t* data, size_t size);

}  // namespace devtime::trace::fuzz
