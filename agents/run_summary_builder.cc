#include "agents/run_summary_builder.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <random>

#include "proto/wire/limits.h"
#include "proto/wire/names.h"
#include "proto/wire/time.h"

namespace devtime::agent {
namespace {

// The trace library names its enums as the wire does (trace_summary.h).
v1::DeviceKind ToWire(trace::DeviceKind kind) {
  return wire::DeviceKindFromName(std::string(trace::DeviceKindName(kind)));
}

v1::Layer ToWire(trace::Layer layer) {
  return wire::LayerFromName(std::string(trace::LayerName(layer)));
}

// torch 1.13's legacy profiler truncates every duration to whole microseconds, so a parent's
// self time (its duration minus its children's) can come out a few µs below zero, in torch's
// own key_averages() too. The wire contract has no negative times: such a self time is 0.
double NotNegative(double us) { return us < 0 ? 0 : us; }

std::string FirstNonEmpty(std::initializer_list<std::string> candidates) {
  for (const auto& c : candidates) {
    if (!c.empty()) return c;
  }
  return "";
}

std::string Lookup(const std::map<std::string, std::string>& map, const std::string& key) {
  auto it = map.find(key);
  return it == map.end() ? "" : it->second;
}

void FillIdentity(v1::RunIdentity* id, const trace::TraceSummary& summary,
                  const RunLabels& labels) {
  const auto& env = summary.environment;
  id->set_run_id(labels.run_id.empty() ? NewRunId() : labels.run_id);
  id->set_job(labels.job);
  id->set_model(FirstNonEmpty({labels.model, Lookup(env, "model"), "adhoc"}));
  id->set_workload(FirstNonEmpty(
      {labels.workload, Lookup(env, "workload"), labels.fallback_workload, "unnamed"}));
  id->set_host(FirstNonEmpty({labels.host, HostName()}));
  id->set_instance_type(FirstNonEmpty({labels.instance_type, Lookup(env, "instance_type")}));
  id->set_device_kind(ToWire(summary.device_kind));
}

void FillCapture(v1::CaptureSettings* capture, const trace::TraceSummary& summary) {
  capture->set_wait_steps(summary.capture.wait_steps);
  capture->set_warmup_steps(summary.capture.warmup_steps);
  capture->set_active_steps(summary.capture.active_steps);
  capture->set_synchronized(summary.capture.synchronized);
  capture->set_events_dropped(summary.capture.events_dropped);
  capture->set_trace_format(summary.source_format);
  auto torch = Lookup(summary.environment, "torch");
  if (!torch.empty()) capture->set_profiler("torch.profiler " + torch);
}

// Text for a wire field that forbids control characters and caps bytes: a warning may quote a
// file line with a tab or newline, and a kernel name may be a whole C++ template instance.
// Each control character becomes a space; the text is cut at a UTF-8 boundary.
std::string WireText(const std::string& text, std::size_t max_bytes) {
  std::string out = text;
  for (char& c : out) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) c = ' ';
  }
  if (out.size() <= max_bytes) return out;
  std::size_t cut = max_bytes;
  // Step back over continuation bytes (10xxxxxx) so the cut never splits a character.
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;
  out.resize(cut);
  return out;
}

void FillWarnings(v1::RunSummary* run, const trace::TraceSummary& summary) {
  std::size_t kept = std::min(summary.warnings.size(), wire::kMaxWarnings);
  for (std::size_t i = 0; i < kept; ++i) {
    auto* out = run->add_warnings();
    out->set_kind(trace::WarningKind(summary.warnings[i]));
    out->set_message(WireText(summary.warnings[i], wire::kMaxWarningMessageBytes));
  }
}

// The top kernels by device time (the trace library sorts them), then one row summing the
// rest, so the kernels' total is the trace's whatever its number of distinct names.
void FillKernels(v1::RunSummary* run, const trace::TraceSummary& summary) {
  const auto& kernels = summary.kernels;
  std::size_t top = std::min(kernels.size(), wire::kTopKernels);
  for (std::size_t i = 0; i < top; ++i) {
    auto* out = run->add_kernels();
    out->set_name(WireText(kernels[i].name, wire::kMaxKernelNameBytes));
    out->set_calls(kernels[i].calls);
    out->set_device_us(NotNegative(kernels[i].device_us));
  }
  if (kernels.size() <= top) return;
  auto* other = run->add_kernels();
  other->set_name(wire::kOtherKernelsName);
  uint64_t calls = 0;
  double device_us = 0;
  for (std::size_t i = top; i < kernels.size(); ++i) {
    calls += kernels[i].calls;
    device_us += NotNegative(kernels[i].device_us);
  }
  other->set_calls(calls);
  other->set_device_us(device_us);
}

v1::DeviceJoinMethod ToWireJoinMethod(const std::string& method) {
  if (method == "id") return v1::DEVICE_JOIN_METHOD_ID;
  if (method == "order") return v1::DEVICE_JOIN_METHOD_ORDER;
  if (method == "id+order") return v1::DEVICE_JOIN_METHOD_ID_AND_ORDER;
  return v1::DEVICE_JOIN_METHOD_NONE;
}

void FillDeviceJoin(v1::DeviceJoinCoverage* out, const trace::DeviceJoin& join) {
  out->set_method(ToWireJoinMethod(join.Method()));
  out->set_by_id_executions(join.by_id);
  out->set_by_id_us(NotNegative(join.by_id_us));
  out->set_by_order_executions(join.by_order);
  out->set_by_order_us(NotNegative(join.by_order_us));
  out->set_unjoined_executions(join.unjoined);
  out->set_unjoined_us(NotNegative(join.unjoined_us));
}

}  // namespace

v1::RunSummary BuildRunSummary(const trace::TraceSummary& summary, const RunLabels& labels) {
  v1::RunSummary run;
  FillIdentity(run.mutable_identity(), summary, labels);
  *run.mutable_started_at() = wire::ToTimestamp(labels.started_at);
  if (labels.finished_at >= labels.started_at) {
    *run.mutable_finished_at() = wire::ToTimestamp(labels.finished_at);
  }
  if (summary.invalid_reason) {
    run.set_status(v1::RUN_STATUS_INVALID);
    run.set_status_reason(*summary.invalid_reason);
  } else {
    run.set_status(v1::RUN_STATUS_OK);
  }
  for (const auto& [key, value] : summary.environment) (*run.mutable_environment())[key] = value;
  FillCapture(run.mutable_capture(), summary);
  for (const auto& op : summary.ops) {
    auto* out = run.add_ops();
    out->set_name(op.name);
    out->set_calls(op.calls);
    out->set_self_cpu_us(NotNegative(op.self_cpu_us));
    out->set_total_cpu_us(op.total_cpu_us);
    out->set_self_device_us(NotNegative(op.self_device_us));
    out->set_total_device_us(op.total_device_us);
    for (double v : op.step_self_device_us) out->add_step_self_device_us(NotNegative(v));
  }
  for (const auto& step : summary.steps) {
    auto* out = run.add_steps();
    out->set_step(step.step);
    out->set_device_us(NotNegative(step.device_us));
    out->set_cpu_us(NotNegative(step.cpu_us));
  }
  for (const auto& layer : summary.layers) {
    auto* out = run.add_layers();
    out->set_layer(ToWire(layer.layer));
    out->set_time_us(layer.time_us);
  }
  for (const auto& artifact : summary.artifacts) {
    auto* out = run.add_artifacts();
    out->set_kind(artifact.kind);
    out->set_uri("file://" + std::filesystem::absolute(artifact.path).string());
    out->set_size_bytes(artifact.size_bytes);
    out->set_pair_key(artifact.pair_key);
  }
  double unattributed = NotNegative(summary.unattributed_device_us);
  run.set_unattributed_device_us(unattributed);
  // The total includes the unattributed time; rounding in the library's sums must not make
  // it the smaller of the two, which the wire contract forbids.
  run.set_device_total_us(std::max(NotNegative(summary.device_total_us), unattributed));
  FillWarnings(&run, summary);
  FillKernels(&run, summary);
  if (summary.device_join) FillDeviceJoin(run.mutable_device_join(), *summary.device_join);
  return run;
}

std::string NewRunId() {
  std::random_device entropy;
  std::array<unsigned char, 16> bytes;
  for (auto& b : bytes) b = static_cast<unsigned char>(entropy());
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  char text[37];
  std::snprintf(text, sizeof text,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0],
                bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace devtime::agent
