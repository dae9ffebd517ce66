#include "agents/trace/model/neuron_system_trace.h"

#include <charconv>
#include <set>

namespace devtime::trace {
namespace {

constexpr std::string_view kExec = "nc_exec_running";

}  // namespace

bool IsNeuronHardwareEvent(std::string_view name) {
  static const std::set<std::string_view> kHardware = {
      "nc_exec_running",  "cc_running",      "cc_exec_barrier",      "numerical_err",
      "nrt_model_switch", "nc_model_switch", "timestamp_sync_point", "hw_notify"};
  return kHardware.contains(name);
}

bool IsExecutionName(std::string_view name) {
  return name == kExec || (name.starts_with(kExec) && name[kExec.size()] == ' ');
}

void SetModelIdentity(std::string_view name, std::string_view model_name, std::string_view model_id,
                      std::string_view device_profile, NeuronExecution* x) {
  if (!model_name.empty()) {
    x->neff = std::string(model_name);
  } else if (name.size() > kExec.size() + 1 && IsExecutionName(name)) {
    x->neff = std::string(name.substr(kExec.size() + 1));
  }
  if (!model_id.empty()) {
    x->model_id = std::string(model_id);
    return;
  }
  constexpr std::string_view kProfile = "device_profile_model_";
  if (const size_t at = device_profile.rfind(kProfile); at != std::string_view::npos) {
    std::string_view id = device_profile.substr(at + kProfile.size());
    id = id.substr(0, id.find('.'));
    if (!id.empty()) x->model_id = std::string(id);
  }
}

void MergeExecutionRows(const std::vector<ExecutionRow>& rows, NeuronSystemTrace* out) {
  std::vector<std::pair<std::string, NeuronExecution>> keyed;
  keyed.reserve(rows.size());
  for (const ExecutionRow& r : rows) keyed.emplace_back(r.key, r.execution);
  MergeExecutionsByKey(keyed, out);
}

std::optional<uint64_t> DroppedEventsInWarning(std::string_view w) {
  constexpr std::string_view kNeedle = " trace events were dropped";
  const size_t at = w.find(kNeedle);
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  size_t begin = at;
  while (begin > 0 && w[begin - 1] >= '0' && w[begin - 1] <= '9') --begin;
  if (begin == at) return std::nullopt;
  // At most 19 digits, like every other integer the system-trace readers take.
  if (at - begin > 19) return std::nullopt;
  uint64_t n = 0;
  std::from_chars(w.data() + begin, w.data() + at, n);
  return n;
}

}  // namespace devtime::trace
