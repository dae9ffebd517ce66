// fleet_bench --monitor (issue 24): neuron-monitor windows as a fleet's agents send them.
#pragma once

#include <cstdint>

#include "devtime/v1/run.pb.h"

namespace devtime::bench {

// Host `host`'s window of model `model` starting at `start_s` (hourly): two latency sketches
// of `buckets` buckets each (a 0.5 % sketch of a latency spread of x7 has ~200), the figures
// and an environment as the agent fills them.
v1::RunSummary BenchWindow(int host, int model, int64_t start_s, int buckets = 200);

}  // namespace devtime::bench
