#include "agents/monitor/window_run.h"

#include <cmath>
#include <cstdio>

#include "proto/wire/time.h"
#include "proto/wire/validation.h"

namespace devtime::agent::monitor {
namespace {

constexpr char kCheckpointMagic[] = "devtime-monitor-checkpoint-1\n";

google::protobuf::Timestamp ToProto(absl::Time t) {
  return wire::ToTimestamp(absl::ToChronoTime(t));
}
absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

uint64_t Fnv1a(const std::string& text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void ToProto(const LatencySketch& s, v1::LatencySketch& out) {
  out.set_relative_accuracy(s.relative_accuracy());
  out.set_min_index(s.min_index());
  for (double w : s.weights()) out.add_weights(w);
  out.set_zero_weight(s.zero_weight());
  out.set_min_us(s.min_us());
  out.set_max_us(s.max_us());
}

LatencySketch FromProto(const v1::LatencySketch& s) {
  if (s.relative_accuracy() <= 0) return LatencySketch();
  return LatencySketch::FromParts(s.relative_accuracy(), s.min_index(),
                                  {s.weights().begin(), s.weights().end()}, s.zero_weight(),
                                  s.min_us(), s.max_us());
}

double OrZero(double v) { return std::isnan(v) ? 0 : v; }

}  // namespace

std::string WindowRunId(const std::string& host, const WindowSummary& w) {
  const std::string key = host + '\n' + w.tag + '\n' + w.model + '\n' + w.workload + '\n' +
                          std::to_string(absl::ToUnixSeconds(w.start));
  const uint64_t a = Fnv1a(key, 14695981039346656037ull);
  const uint64_t b = Fnv1a(key, a ^ 0x9e3779b97f4a7c15ull);
  char id[37];
  // Version 8 (a name-derived id of our own), RFC 4122 variant.
  std::snprintf(id, sizeof id, "%08x-%04x-8%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<unsigned long long>(b & 0xffffffffffffull));
  return id;
}

v1::RunSummary ToRunSummary(const WindowSummary& w, const RunContext& context) {
  v1::RunSummary run;
  auto* id = run.mutable_identity();
  id->set_run_id(WindowRunId(context.host, w));
  id->set_model(w.model);
  id->set_workload(w.workload);
  id->set_host(context.host);
  auto type = w.instance.find("instance_type");
  id->set_instance_type(type != w.instance.end() && !type->second.empty() ? type->second
                                                                          : context.instance_type);
  id->set_device_kind(v1::DEVICE_KIND_NEURON);
  *run.mutable_started_at() = ToProto(w.start);
  *run.mutable_finished_at() = ToProto(w.end);
  run.set_status(v1::RUN_STATUS_OK);
  run.set_source(v1::RUN_SOURCE_MONITOR);
  auto& env = *run.mutable_environment();
  for (const char* key : {"instance_id", "ami_id", "instance_region"}) {
    if (auto it = w.instance.find(key); it != w.instance.end() && !it->second.empty()) {
      env[key] = wire::PrintableText(it->second, 1'000);
    }
  }
  for (const char* key : {"neuron_device_type", "neuroncore_version", "neuron_device_count"}) {
    if (auto it = w.hardware.find(key); it != w.hardware.end() && !it->second.empty()) {
      env[key] = wire::PrintableText(it->second, 1'000);
    }
  }
  for (const auto& [k, v] : context.environment) env[k] = wire::PrintableText(v, 1'000);
  auto* m = run.mutable_monitor();
  *m->mutable_window_start() = ToProto(w.start);
  *m->mutable_window_end() = ToProto(w.end);
  m->set_runtime_tag(wire::PrintableText(w.tag, 256));
  for (const auto& name : w.neff_names) {
    if (m->neff_names_size() >= 64) break;
    m->add_neff_names(wire::PrintableText(name, 256));
  }
  m->set_periods(w.periods);
  m->set_covered_seconds(w.covered_seconds);
  m->set_executions(w.executions);
  for (const auto& [k, v] : w.outcomes) (*m->mutable_outcomes())[k] = v;
  for (const auto& [k, v] : w.errors) (*m->mutable_errors())[k] = v;
  m->set_neuroncore_utilization_pct(
      w.utilization_periods > 0 ? w.utilization_sum / w.utilization_periods : 0);
  ToProto(w.device, *m->mutable_device_latency());
  ToProto(w.total, *m->mutable_total_latency());
  m->set_device_p50_us(OrZero(w.device.Quantile(0.5)));
  m->set_device_p99_us(OrZero(w.device.Quantile(0.99)));
  m->set_total_p99_us(OrZero(w.total.Quantile(0.99)));
  m->set_restarts(w.restarts);
  m->set_unusable_periods(w.unusable_periods);
  return run;
}

WindowSummary FromRunSummary(const v1::RunSummary& run) {
  WindowSummary w;
  const auto& m = run.monitor();
  w.tag = m.runtime_tag();
  w.model = run.identity().model();
  w.workload = run.identity().workload();
  w.start = FromProto(m.window_start());
  w.end = FromProto(m.window_end());
  for (const auto& n : m.neff_names()) w.neff_names.insert(n);
  w.periods = m.periods();
  w.covered_seconds = m.covered_seconds();
  w.executions = m.executions();
  w.outcomes = {m.outcomes().begin(), m.outcomes().end()};
  w.errors = {m.errors().begin(), m.errors().end()};
  w.utilization_periods = m.periods();
  w.utilization_sum = m.neuroncore_utilization_pct() * m.periods();
  w.device = FromProto(m.device_latency());
  w.total = FromProto(m.total_latency());
  w.restarts = m.restarts();
  w.unusable_periods = m.unusable_periods();
  if (run.identity().instance_type().size())
    w.instance["instance_type"] = run.identity().instance_type();
  return w;
}

std::string EncodeCheckpoint(absl::Time stream_time, const std::vector<WindowSummary>& open,
                             const RunContext& context) {
  std::string out = kCheckpointMagic;
  out += std::to_string(absl::ToUnixMicros(stream_time)) + "\n";
  for (const auto& w : open) {
    const std::string bytes = ToRunSummary(w, context).SerializeAsString();
    out += std::to_string(bytes.size()) + "\n" + bytes;
  }
  return out;
}

absl::Status DecodeCheckpoint(const std::string& bytes, absl::Time& stream_time,
                              std::vector<WindowSummary>& open) {
  auto bad = [](const std::string& why) {
    return absl::DataLossError("monitor checkpoint: " + why);
  };
  if (bytes.rfind(kCheckpointMagic, 0) != 0) return bad("not a checkpoint");
  std::size_t at = sizeof kCheckpointMagic - 1;
  auto line = [&](long long& value) {
    const std::size_t end = bytes.find('\n', at);
    if (end == std::string::npos) return false;
    value = std::atoll(bytes.substr(at, end - at).c_str());
    at = end + 1;
    return true;
  };
  long long micros = 0;
  if (!line(micros)) return bad("no stream time");
  stream_time = absl::FromUnixMicros(micros);
  while (at < bytes.size()) {
    long long size = 0;
    if (!line(size) || size < 0 || at + static_cast<std::size_t>(size) > bytes.size()) {
      return bad("cut short");
    }
    v1::RunSummary run;
    if (!run.ParseFromArray(bytes.data() + at, static_cast<int>(size))) return bad("bad window");
    at += static_cast<std::size_t>(size);
    open.push_back(FromRunSummary(run));
  }
  return absl::OkStatus();
}

}  // namespace devtime::agent::monitor
