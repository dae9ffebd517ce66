#include "agents/monitor/monitor_report.h"

#include <cmath>

#include "nlohmann/json.hpp"

namespace devtime::agent::monitor {
namespace {

using Json = nlohmann::json;

const char* const kPercentileKeys[7] = {"p0", "p1", "p25", "p50", "p75", "p99", "p100"};

const Json* Member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string ErrorOf(const Json& group) {
  const Json* error = Member(group, "error");
  return error != nullptr && error->is_string() ? error->get<std::string>() : "";
}

// Per-period counts keyed by name: non-negative integers only (B6.2); others are problems.
std::map<std::string, uint64_t> Counts(const Json* object, const std::string& where,
                                       std::vector<std::string>& problems) {
  std::map<std::string, uint64_t> counts;
  if (object == nullptr || !object->is_object()) return counts;
  for (const auto& [key, value] : object->items()) {
    if (value.is_number_unsigned()) {
      counts[key] = value.get<uint64_t>();
    } else if (value.is_number_integer() && value.get<int64_t>() >= 0) {
      counts[key] = static_cast<uint64_t>(value.get<int64_t>());
    } else {
      problems.push_back(where + "." + key + ": not a count");
    }
  }
  return counts;
}

// A latency object (B6.2): null = idle (nullopt, no problem); each of p0..p100 a finite
// number of seconds >= 0, non-decreasing, else a problem and nullopt.
std::optional<Percentiles> ReadPercentiles(const Json* object, const std::string& where,
                                           std::vector<std::string>& problems) {
  if (object == nullptr) return std::nullopt;
  if (!object->is_object()) {
    problems.push_back(where + ": not an object");
    return std::nullopt;
  }
  Percentiles p;
  for (int i = 0; i < 7; ++i) {
    const Json* value = Member(*object, kPercentileKeys[i]);
    if (value == nullptr || !value->is_number() || !std::isfinite(value->get<double>()) ||
        value->get<double>() < 0 || (i > 0 && value->get<double>() < p.seconds[i - 1])) {
      problems.push_back(where + "." + kPercentileKeys[i] +
                         ": missing, negative or below the lower percentile");
      return std::nullopt;
    }
    p.seconds[i] = value->get<double>();
  }
  return p;
}

void ReadExecution(const Json& report, AppReport& app) {
  const Json* group = Member(report, "execution_stats");
  bool legacy = false;
  if (group == nullptr) {
    group = Member(report, "inference_stats");  // SDK <= 2.4 (B6.2, B7)
    legacy = group != nullptr;
  }
  if (group == nullptr || !group->is_object()) return;
  app.execution_error = ErrorOf(*group);
  if (!app.execution_error.empty()) return;  // B5: values unreliable
  ExecutionPeriod period;
  period.legacy_name = legacy;
  if (const Json* p = Member(*group, "period"); p != nullptr && p->is_number()) {
    period.period_seconds = p->get<double>();
  }
  const Json* summary = Member(*group, legacy ? "inference_summary" : "execution_summary");
  if (summary == nullptr) summary = Member(*group, "execution_summary");
  period.outcomes = Counts(summary, "execution_summary", app.problems);
  period.errors = Counts(Member(*group, "error_summary"), "error_summary", app.problems);
  if (const Json* latency = Member(*group, "latency_stats")) {
    period.device_latency =
        ReadPercentiles(Member(*latency, "device_latency"), "device_latency", app.problems);
    period.total_latency =
        ReadPercentiles(Member(*latency, "total_latency"), "total_latency", app.problems);
  }
  app.execution = std::move(period);
}

// Mean neuroncore_utilization (percent, B6.1) over the cores listed; Trn2's `v3d` breakdown
// and the flops keys are not needed.
void ReadUtilization(const Json& report, AppReport& app) {
  const Json* group = Member(report, "neuroncore_counters");
  if (group == nullptr || !ErrorOf(*group).empty()) return;
  const Json* cores = Member(*group, "neuroncores_in_use");
  if (cores == nullptr || !cores->is_object()) return;
  double sum = 0;
  int n = 0;
  for (const auto& [index, core] : cores->items()) {
    const Json* u = Member(core, "neuroncore_utilization");
    if (u == nullptr || !u->is_number()) continue;
    const double pct = u->get<double>();
    if (!std::isfinite(pct) || pct < 0 || pct > 100) {
      app.problems.push_back("neuroncore_utilization of core " + index + ": not 0..100");
      continue;
    }
    sum += pct;
    ++n;
  }
  if (n > 0) app.utilization_pct = sum / n;
}

void ReadModels(const Json& report, AppReport& app) {
  const Json* group = Member(report, "memory_used");
  if (group == nullptr) return;
  const Json* models = Member(*group, "loaded_models");
  if (models == nullptr || !models->is_array()) return;
  for (const auto& model : *models) {
    const Json* name = Member(model, "name");
    if (name != nullptr && name->is_string()) app.neff_names.push_back(name->get<std::string>());
  }
}

std::map<std::string, std::string> Scalars(const Json* object) {
  std::map<std::string, std::string> out;
  if (object == nullptr || !object->is_object()) return out;
  for (const auto& [key, value] : object->items()) {
    if (value.is_string()) {
      out[key] = value.get<std::string>();
    } else if (value.is_number() || value.is_boolean()) {
      out[key] = value.dump();
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<MonitorReport> ParseMonitorLine(std::string_view line) {
  Json root = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return absl::InvalidArgumentError("not JSON");
  if (!root.is_object()) return absl::InvalidArgumentError("not a JSON object");
  MonitorReport report;
  report.instance = Scalars(Member(root, "instance_info"));
  report.hardware = Scalars(Member(root, "neuron_hardware_info"));
  const Json* runtimes = Member(root, "neuron_runtime_data");  // null/absent/empty: none (B3)
  if (runtimes == nullptr) return report;
  if (!runtimes->is_array()) return absl::InvalidArgumentError("neuron_runtime_data: not an array");
  for (const auto& entry : *runtimes) {
    AppReport app;
    const Json* tag = Member(entry, "neuron_runtime_tag");
    const Json* pid = Member(entry, "pid");
    if (pid != nullptr && pid->is_number_integer()) app.pid = pid->get<int64_t>();
    if (tag != nullptr && tag->is_string()) {
      app.tag = tag->get<std::string>();
    } else if (tag != nullptr && tag->is_number_integer()) {
      app.tag = tag->dump();
    } else {
      app.tag = std::to_string(app.pid);  // B1: the PID when no tag is set
    }
    app.error = ErrorOf(entry);
    const Json* body = Member(entry, "report");
    if (app.error.empty() && body != nullptr) {
      ReadExecution(*body, app);
      ReadUtilization(*body, app);
      ReadModels(*body, app);
    }
    report.apps.push_back(std::move(app));
  }
  return report;
}

}  // namespace devtime::agent::monitor
