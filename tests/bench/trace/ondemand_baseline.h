// trace_bench's simdjson On-Demand baseline (ondemand_baseline.cc, built for AVX2).
#pragma once

#include <cstdint>
#include <string>

namespace devtime::trace::bench {

struct OnDemandResult {
  uint64_t json_bytes = 0;
  uint64_t events = 0;
  uint64_t names = 0;  // distinct names of complete events
  std::string error;   // empty when the file was read to its end
};

// Reads `path` (plain JSON) whole and walks its traceEvents with simdjson On-Demand.
OnDemandResult OnDemandSummarize(const std::string& path);

}  // namespace devtime::trace::bench
