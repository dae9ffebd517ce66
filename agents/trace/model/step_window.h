// devtime::trace model — one ProfilerStep#N window: made by summary/ (StepWindows), used by the
// Neuron session reader to count executions per step.
#pragma once

#include <cstdint>

namespace devtime::trace {

// One ProfilerStep#N window of the host ops, in the file's time base (add base_time_ns for
// absolute time).
struct StepWindow {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t number = 0;
};

}  // namespace devtime::trace
