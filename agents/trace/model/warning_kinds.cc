// WarningKind(): the machine-readable kind of each warning this library writes, matched on the
// fixed part of its text. The texts live next to the code that writes them (neuron_dir.cc,
// neuron_join.cc, summarizer.cc, summarize.cc); tests/unit/trace/warning_kinds_test.cc checks
// that every warning the fixtures produce has a kind, so a reworded warning fails a test.
#include <string>
#include <string_view>

#include "agents/trace/model/summary.h"

namespace devtime::trace {

std::string WarningKind(std::string_view w) {
  struct Rule {
    std::string_view needle;
    std::string_view kind;
  };
  static constexpr Rule kRules[] = {
      {"has no NTFF with hash", "neff_without_ntff"},
      {"is empty (0 bytes): no device profile", "empty_ntff"},
      {"Neuron system traces of the same capture", "duplicate_system_traces"},
      {"Neuron capture sessions in", "several_sessions"},
      {"rank directories (<instance>_pid_<pid>)", "several_ranks"},
      {"Neuron runtime: ", "neuron_runtime"},
      {"start/stop events have no partner", "unpaired_system_trace_events"},
      {"lie outside the ProfilerStep windows", "executions_outside_steps"},
      {"steps carry no device time", "device_time_not_in_steps"},
      {"in the launching op's step", "device_time_in_launching_steps"},
      {"is not attributed to operators", "device_time_not_attributed"},
      {"are not joined to a launching op", "executions_not_joined"},
      {"active steps but the trace has", "active_steps_mismatch"},
      {"trace files in", "several_traces"},
      {"run.json is missing", "run_json_missing"},
      {"its started_at/finished_at are not used", "run_json_times_unread"},
      {"have no launching op in the trace", "unattributed_device_events"},
      {"key_averages.json and the trace disagree", "key_averages_mismatch"},
  };
  for (const Rule& r : kRules) {
    if (w.find(r.needle) != std::string_view::npos) return std::string(r.kind);
  }
  return "other";
}

}  // namespace devtime::trace
