#include "proto/wire/validation.h"

#include <cmath>
#include <set>
#include <sstream>
#include <string>

#include "proto/wire/limits.h"

namespace devtime::wire {
namespace {

absl::Status Invalid(const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(field + ": " + problem);
}

absl::Status TooMany(const std::string& field, std::size_t count, std::size_t limit) {
  return absl::ResourceExhaustedError(field + ": " + std::to_string(count) +
                                      " entries exceed the limit of " + std::to_string(limit));
}

// Length of the UTF-8 sequence that starts with `lead`, 0 when `lead` cannot start one.
std::size_t Utf8SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xe) return 3;
  if ((lead >> 3) == 0x1e) return 4;
  return 0;
}

bool IsValidUtf8WithoutControls(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x20 || lead == 0x7f) return false;
    std::size_t length = Utf8SequenceLength(lead);
    if (length == 0 || i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return false;
    }
    i += length;
  }
  return true;
}

absl::Status CheckText(const std::string& field, const std::string& value, std::size_t max_bytes,
                       bool required) {
  if (value.empty()) {
    return required ? Invalid(field, "is required") : absl::OkStatus();
  }
  if (value.size() > max_bytes) {
    return Invalid(field, "is " + std::to_string(value.size()) +
                              " bytes, longer than the limit of " + std::to_string(max_bytes));
  }
  if (!IsValidUtf8WithoutControls(value)) {
    return Invalid(field, "must be UTF-8 without control characters");
  }
  return absl::OkStatus();
}

std::string FormatNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

absl::Status CheckDuration(const std::string& field, double value) {
  if (!std::isfinite(value) || value < 0) {
    return Invalid(field, "must be finite and >= 0, got " + FormatNumber(value));
  }
  return absl::OkStatus();
}

absl::Status CheckIdentity(const v1::RunIdentity& id, v1::RunStatus status) {
  if (id.run_id().empty()) return Invalid("run.identity.run_id", "is required");
  if (!IsCanonicalUuid(id.run_id())) {
    return Invalid("run.identity.run_id",
                   "must be a lowercase UUID like 3f2c9a5e-0b1d-4c6e-9f00-12ab34cd56ef, got '" +
                       id.run_id().substr(0, 64) + "'");
  }
  struct Field {
    const char* path;
    const std::string& value;
    bool required;
  };
  for (const Field& f :
       {Field{"run.identity.job", id.job(), false}, Field{"run.identity.model", id.model(), true},
        Field{"run.identity.workload", id.workload(), true},
        Field{"run.identity.host", id.host(), true},
        Field{"run.identity.instance_type", id.instance_type(), false}}) {
    if (auto s = CheckText(f.path, f.value, kMaxIdentityBytes, f.required); !s.ok()) return s;
  }
  if (!v1::DeviceKind_IsValid(id.device_kind())) {
    return Invalid("run.identity.device_kind", "unknown value " + std::to_string(id.device_kind()));
  }
  // A job that failed before profiling anything may not know its device.
  if (id.device_kind() == v1::DEVICE_KIND_UNSPECIFIED && status != v1::RUN_STATUS_FAILED) {
    return Invalid("run.identity.device_kind", "is required (CPU, CUDA or NEURON)");
  }
  return absl::OkStatus();
}

absl::Status CheckStatus(const v1::RunSummary& run) {
  if (!v1::RunStatus_IsValid(run.status())) {
    return Invalid("run.status", "unknown value " + std::to_string(run.status()));
  }
  if (run.status() == v1::RUN_STATUS_UNSPECIFIED) {
    return Invalid("run.status", "is required (OK, INVALID or FAILED)");
  }
  bool needs_reason = run.status() != v1::RUN_STATUS_OK;
  return CheckText("run.status_reason", run.status_reason(), kMaxReasonBytes, needs_reason);
}

absl::Status CheckTimes(const v1::RunSummary& run) {
  if (!run.has_started_at()) return Invalid("run.started_at", "is required");
  if (run.started_at().seconds() <= 0 || run.started_at().nanos() < 0 ||
      run.started_at().nanos() > 999'999'999) {
    return Invalid("run.started_at", "must be a time after 1970-01-01");
  }
  if (run.has_finished_at()) {
    const auto& s = run.started_at();
    const auto& f = run.finished_at();
    if (f.seconds() < s.seconds() || (f.seconds() == s.seconds() && f.nanos() < s.nanos())) {
      return Invalid("run.finished_at", "is before run.started_at");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOp(const v1::OpStat& op, const std::string& path) {
  if (auto s = CheckText(path + ".name", op.name(), kMaxOpNameBytes, true); !s.ok()) return s;
  if (op.calls() == 0) return Invalid(path + ".calls", "must be >= 1");
  for (auto [suffix, value] :
       {std::pair{".self_cpu_us", op.self_cpu_us()}, std::pair{".total_cpu_us", op.total_cpu_us()},
        std::pair{".self_device_us", op.self_device_us()},
        std::pair{".total_device_us", op.total_device_us()}}) {
    if (auto s = CheckDuration(path + suffix, value); !s.ok()) return s;
  }
  if (op.step_self_device_us_size() > static_cast<int>(kMaxStepSamples)) {
    return TooMany(path + ".step_self_device_us", op.step_self_device_us_size(), kMaxStepSamples);
  }
  for (int i = 0; i < op.step_self_device_us_size(); ++i) {
    auto field = path + ".step_self_device_us[" + std::to_string(i) + "]";
    if (auto s = CheckDuration(field, op.step_self_device_us(i)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckOps(const v1::RunSummary& run) {
  if (run.ops_size() > static_cast<int>(kMaxOps))
    return TooMany("run.ops", run.ops_size(), kMaxOps);
  std::set<std::string> names;
  for (int i = 0; i < run.ops_size(); ++i) {
    auto path = "run.ops[" + std::to_string(i) + "]";
    if (auto s = CheckOp(run.ops(i), path); !s.ok()) return s;
    if (!names.insert(run.ops(i).name()).second) {
      return Invalid(path + ".name", "'" + run.ops(i).name() + "' appears twice");
    }
  }
  if (run.status() == v1::RUN_STATUS_OK && run.ops_size() == 0) {
    return Invalid("run.ops", "an OK run needs at least one operator");
  }
  return absl::OkStatus();
}

absl::Status CheckSteps(const v1::RunSummary& run) {
  if (run.steps_size() > static_cast<int>(kMaxSteps)) {
    return TooMany("run.steps", run.steps_size(), kMaxSteps);
  }
  std::set<uint32_t> seen;
  for (int i = 0; i < run.steps_size(); ++i) {
    auto path = "run.steps[" + std::to_string(i) + "]";
    const auto& step = run.steps(i);
    if (!seen.insert(step.step()).second) {
      return Invalid(path + ".step", "step " + std::to_string(step.step()) + " appears twice");
    }
    if (auto s = CheckDuration(path + ".device_us", step.device_us()); !s.ok()) return s;
    if (auto s = CheckDuration(path + ".cpu_us", step.cpu_us()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckLayers(const v1::RunSummary& run) {
  std::set<int> seen;
  for (int i = 0; i < run.layers_size(); ++i) {
    auto path = "run.layers[" + std::to_string(i) + "]";
    const auto& layer = run.layers(i);
    if (!v1::Layer_IsValid(layer.layer()) || layer.layer() == v1::LAYER_UNSPECIFIED) {
      return Invalid(path + ".layer", "unknown value " + std::to_string(layer.layer()));
    }
    if (!seen.insert(layer.layer()).second) {
      return Invalid(path + ".layer", v1::Layer_Name(layer.layer()) + " appears twice");
    }
    if (auto s = CheckDuration(path + ".time_us", layer.time_us()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckEnvironment(const v1::RunSummary& run) {
  if (run.environment_size() > static_cast<int>(kMaxEnvironmentEntries)) {
    return TooMany("run.environment", run.environment_size(), kMaxEnvironmentEntries);
  }
  for (const auto& [key, value] : run.environment()) {
    auto path = "run.environment[\"" + key.substr(0, 64) + "\"]";
    if (auto s = CheckText(path + " key", key, kMaxEnvironmentKeyBytes, true); !s.ok()) return s;
    if (auto s = CheckText(path, value, kMaxEnvironmentValueBytes, false); !s.ok()) return s;
  }
  return absl::OkStatus();
}

bool IsLowerHex(const std::string& text) {
  return text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

absl::Status CheckArtifacts(const v1::RunSummary& run) {
  if (run.artifacts_size() > static_cast<int>(kMaxArtifacts)) {
    return TooMany("run.artifacts", run.artifacts_size(), kMaxArtifacts);
  }
  for (int i = 0; i < run.artifacts_size(); ++i) {
    auto path = "run.artifacts[" + std::to_string(i) + "]";
    const auto& a = run.artifacts(i);
    if (auto s = CheckText(path + ".kind", a.kind(), kMaxIdentityBytes, true); !s.ok()) return s;
    if (auto s = CheckText(path + ".uri", a.uri(), kMaxUriBytes, true); !s.ok()) return s;
    if (!a.sha256().empty() && (a.sha256().size() != 64 || !IsLowerHex(a.sha256()))) {
      return Invalid(path + ".sha256", "must be 64 lowercase hex characters");
    }
    if (auto s = CheckText(path + ".pair_key", a.pair_key(), kMaxIdentityBytes, false); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDeviceTotals(const v1::RunSummary& run) {
  if (auto s = CheckDuration("run.device_total_us", run.device_total_us()); !s.ok()) return s;
  if (auto s = CheckDuration("run.unattributed_device_us", run.unattributed_device_us()); !s.ok()) {
    return s;
  }
  if (run.device_total_us() < run.unattributed_device_us()) {
    return Invalid("run.device_total_us", "is " + FormatNumber(run.device_total_us()) +
                                              ", less than run.unattributed_device_us (" +
                                              FormatNumber(run.unattributed_device_us()) +
                                              ") which it includes");
  }
  return absl::OkStatus();
}

bool IsSnakeCase(const std::string& text) {
  if (text.empty() || text.front() < 'a' || text.front() > 'z') return false;
  return text.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
}

absl::Status CheckWarnings(const v1::RunSummary& run) {
  if (run.warnings_size() > static_cast<int>(kMaxWarnings)) {
    return TooMany("run.warnings", run.warnings_size(), kMaxWarnings);
  }
  for (int i = 0; i < run.warnings_size(); ++i) {
    auto path = "run.warnings[" + std::to_string(i) + "]";
    const auto& w = run.warnings(i);
    if (auto s = CheckText(path + ".kind", w.kind(), kMaxWarningKindBytes, true); !s.ok()) {
      return s;
    }
    if (!IsSnakeCase(w.kind())) {
      return Invalid(path + ".kind", "must be snake_case (a-z, 0-9, _; starting with a letter)");
    }
    if (auto s = CheckText(path + ".message", w.message(), kMaxWarningMessageBytes, true);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status CheckKernels(const v1::RunSummary& run) {
  if (run.kernels_size() > static_cast<int>(kMaxKernels)) {
    return TooMany("run.kernels", run.kernels_size(), kMaxKernels);
  }
  for (int i = 0; i < run.kernels_size(); ++i) {
    auto path = "run.kernels[" + std::to_string(i) + "]";
    const auto& k = run.kernels(i);
    if (auto s = CheckText(path + ".name", k.name(), kMaxKernelNameBytes, true); !s.ok()) return s;
    if (k.calls() == 0) return Invalid(path + ".calls", "must be >= 1");
    if (auto s = CheckDuration(path + ".device_us", k.device_us()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckDeviceJoin(const v1::RunSummary& run) {
  if (!run.has_device_join()) return absl::OkStatus();
  const auto& join = run.device_join();
  if (!v1::DeviceJoinMethod_IsValid(join.method())) {
    return Invalid("run.device_join.method", "unknown value " + std::to_string(join.method()));
  }
  if (join.method() == v1::DEVICE_JOIN_METHOD_UNSPECIFIED) {
    return Invalid("run.device_join.method", "is required (NONE, ID, ORDER or ID_AND_ORDER)");
  }
  // Execution counts are unsigned on the wire, so only the times can be out of range.
  for (auto [field, value] : {std::pair{"run.device_join.by_id_us", join.by_id_us()},
                              std::pair{"run.device_join.by_order_us", join.by_order_us()},
                              std::pair{"run.device_join.unjoined_us", join.unjoined_us()}}) {
    if (auto s = CheckDuration(field, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

bool IsCanonicalUuid(const std::string& text) {
  if (text.size() != 36) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    char c = text[i];
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::Status ValidateRun(const v1::RunSummary& run) {
  if (!run.has_identity()) return Invalid("run.identity", "is required");
  if (auto s = CheckIdentity(run.identity(), run.status()); !s.ok()) return s;
  using Check = absl::Status (*)(const v1::RunSummary&);
  for (Check check :
       {CheckStatus, CheckTimes, CheckOps, CheckSteps, CheckLayers, CheckEnvironment,
        CheckArtifacts, CheckDeviceTotals, CheckWarnings, CheckKernels, CheckDeviceJoin}) {
    if (auto s = check(run); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace devtime::wire
