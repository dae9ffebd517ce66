#include "proto/wire/validation.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_set>

#include "proto/wire/limits.h"

namespace devtime::wire {
namespace {

// A field's path in an error message ("run.ops[3].step_self_device_us[7]"), put together only
// when a check fails: a 500-operator run has ~9,000 numbers, and building the path of each as
// a string was a third of the collector's CPU per upload. A path refers to its parent and its
// name without copying them, so it lives only as long as the call that made it.
class FieldPath {
 public:
  FieldPath(const char* name) : name_(name) {}  // a field's name is its path
  FieldPath(const std::string& name) : name_(name) {}

  FieldPath Member(std::string_view suffix) const { return FieldPath(this, suffix, kNoIndex); }
  FieldPath Index(std::size_t i) const { return FieldPath(this, {}, i); }

  std::string Text() const {
    std::string text = parent_ ? parent_->Text() : std::string();
    text += name_;
    if (index_ != kNoIndex) text += "[" + std::to_string(index_) + "]";
    return text;
  }

 private:
  static constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);
  FieldPath(const FieldPath* parent, std::string_view name, std::size_t index)
      : parent_(parent), name_(name), index_(index) {}

  const FieldPath* parent_ = nullptr;
  std::string_view name_;
  std::size_t index_ = kNoIndex;
};

absl::Status Invalid(const FieldPath& field, const std::string& problem) {
  return absl::InvalidArgumentError(field.Text() + ": " + problem);
}

absl::Status TooMany(const FieldPath& field, std::size_t count, std::size_t limit) {
  return absl::ResourceExhaustedError(field.Text() + ": " + std::to_string(count) +
                                      " entries exceed the limit of " + std::to_string(limit));
}

// Checks the entries of a repeated field, at most `limit` of them: check(entry, "field[i]").
template <typename Entries, typename Check>
absl::Status CheckEach(const FieldPath& field, const Entries& entries, std::size_t limit,
                       Check check) {
  const auto count = static_cast<std::size_t>(entries.size());
  if (count > limit) return TooMany(field, count, limit);
  for (std::size_t i = 0; i < count; ++i) {
    if (auto s = check(entries[static_cast<int>(i)], field.Index(i)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// One code point of a UTF-8 text: its value and how many bytes it took.
struct Decoded {
  char32_t code_point;
  std::size_t length;
};

// The code point at text[at], or nullopt when the bytes there are not UTF-8 (a stray
// continuation byte, a truncated sequence, an overlong form, a surrogate, past U+10FFFF).
std::optional<Decoded> DecodeUtf8(std::string_view text, std::size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  if (lead < 0x80) return Decoded{lead, 1};
  std::size_t length = 0;
  char32_t value = 0;
  if ((lead >> 5) == 0x6) {
    length = 2;
    value = lead & 0x1f;
  } else if ((lead >> 4) == 0xe) {
    length = 3;
    value = lead & 0x0f;
  } else if ((lead >> 3) == 0x1e) {
    length = 4;
    value = lead & 0x07;
  } else {
    return std::nullopt;
  }
  if (at + length > text.size()) return std::nullopt;
  for (std::size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[at + k]);
    if ((next >> 6) != 0x2) return std::nullopt;
    value = (value << 6) | (next & 0x3f);
  }
  constexpr char32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};  // by length: no overlong forms
  if (value < kSmallest[length] || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) {
    return std::nullopt;
  }
  return Decoded{value, length};
}

// C0 and C1 controls, DEL, and the bidirectional embeddings, overrides and isolates.
bool IsForbidden(char32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) ||
         (c >= 0x2066 && c <= 0x2069);
}

std::string CodePointName(char32_t c) {
  char name[16];
  std::snprintf(name, sizeof name, "U+%04X", static_cast<unsigned>(c));
  return name;
}

// Why `text` is not printable (IsPrintableText), or "" when it is.
std::string WhyNotPrintable(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    auto decoded = DecodeUtf8(text, at);
    if (!decoded) return "is not valid UTF-8 at byte " + std::to_string(at);
    if (IsForbidden(decoded->code_point)) {
      return "must not contain control or bidirectional formatting characters; " +
             CodePointName(decoded->code_point) + " at byte " + std::to_string(at);
    }
    at += decoded->length;
  }
  return "";
}

absl::Status CheckText(const FieldPath& field, const std::string& value, std::size_t max_bytes,
                       bool required) {
  if (value.empty()) {
    return required ? Invalid(field, "is required") : absl::OkStatus();
  }
  if (value.size() > max_bytes) {
    return Invalid(field, "is " + std::to_string(value.size()) +
                              " bytes, longer than the limit of " + std::to_string(max_bytes));
  }
  if (auto why = WhyNotPrintable(value); !why.empty()) return Invalid(field, why);
  return absl::OkStatus();
}

std::string FormatNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

absl::Status CheckDuration(const FieldPath& field, double value) {
  if (!std::isfinite(value) || value < 0 || value > kMaxDurationUs) {
    return Invalid(field, "must be finite, >= 0 and <= " + FormatNumber(kMaxDurationUs) +
                              " (about 31 years), got " + FormatNumber(value));
  }
  return absl::OkStatus();
}

// A count the store keeps as a bigint; `at_least_one` for the calls of something that ran.
absl::Status CheckCount(const FieldPath& field, uint64_t value, bool at_least_one) {
  if (at_least_one && value == 0) return Invalid(field, "must be >= 1");
  if (value > kMaxCount) {
    return Invalid(field, "must be <= " + std::to_string(kMaxCount) +
                              " (a signed 64-bit count), got " + std::to_string(value));
  }
  return absl::OkStatus();
}

// A step number or step count the store keeps as an integer.
absl::Status CheckStepNumber(const FieldPath& field, uint32_t value) {
  if (value > kMaxStepNumber) {
    return Invalid(field, "must be <= " + std::to_string(kMaxStepNumber) +
                              " (a signed 32-bit integer), got " + std::to_string(value));
  }
  return absl::OkStatus();
}

// `total` includes `self`: it cannot be smaller.
absl::Status CheckIncludes(const FieldPath& total_field, double total, const FieldPath& self_field,
                           double self) {
  if (total < self) {
    return Invalid(total_field, "is " + FormatNumber(total) + ", less than " + self_field.Text() +
                                    " (" + FormatNumber(self) + ") which it includes");
  }
  return absl::OkStatus();
}

absl::Status CheckIdentity(const v1::RunIdentity& id, v1::RunStatus status) {
  if (id.run_id().empty()) return Invalid("run.identity.run_id", "is required");
  if (!IsCanonicalUuid(id.run_id())) {
    return Invalid("run.identity.run_id",
                   "must be a lowercase UUID like 3f2c9a5e-0b1d-4c6e-9f00-12ab34cd56ef, got '" +
                       PrintableText(id.run_id(), 64) + "'");
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

absl::Status CheckTime(const FieldPath& field, const google::protobuf::Timestamp& t) {
  if (t.seconds() < kMinTimeSeconds || t.seconds() > kMaxTimeSeconds || t.nanos() < 0 ||
      t.nanos() > 999'999'999) {
    return Invalid(field, "must be a time after 1970-01-01 and before 10000-01-01, got " +
                              std::to_string(t.seconds()) + " s " + std::to_string(t.nanos()) +
                              " ns since 1970");
  }
  return absl::OkStatus();
}

absl::Status CheckTimes(const v1::RunSummary& run) {
  if (!run.has_started_at()) return Invalid("run.started_at", "is required");
  if (auto s = CheckTime("run.started_at", run.started_at()); !s.ok()) return s;
  if (run.has_finished_at()) {
    if (auto s = CheckTime("run.finished_at", run.finished_at()); !s.ok()) return s;
    const auto& s = run.started_at();
    const auto& f = run.finished_at();
    if (f.seconds() < s.seconds() || (f.seconds() == s.seconds() && f.nanos() < s.nanos())) {
      return Invalid("run.finished_at", "is before run.started_at");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckCapture(const v1::RunSummary& run) {
  const auto& capture = run.capture();
  for (auto [field, value] : {std::pair{"run.capture.wait_steps", capture.wait_steps()},
                              std::pair{"run.capture.warmup_steps", capture.warmup_steps()},
                              std::pair{"run.capture.active_steps", capture.active_steps()}}) {
    if (auto s = CheckStepNumber(field, value); !s.ok()) return s;
  }
  if (auto s = CheckCount("run.capture.events_dropped", capture.events_dropped(), false); !s.ok()) {
    return s;
  }
  // Free text, stored in PostgreSQL jsonb (which holds no NUL character).
  if (auto s = CheckText("run.capture.profiler", capture.profiler(), kMaxReasonBytes, false);
      !s.ok()) {
    return s;
  }
  return CheckText("run.capture.trace_format", capture.trace_format(), kMaxReasonBytes, false);
}

// A per-step sample: a duration, or for a CPU run's self-CPU samples down to
// -kSelfCpuRoundingUsPerCall per call of the op (legacy rounding, validation.h).
absl::Status CheckStepSample(const FieldPath& field, double value, double floor) {
  if (value < 0 && value >= floor) return absl::OkStatus();
  if (floor < 0 && value < floor && std::isfinite(value)) {
    return Invalid(field, "must be >= " + FormatNumber(floor) + " (" +
                              FormatNumber(kSelfCpuRoundingUsPerCall) +
                              " us of rounding per call of the op), got " + FormatNumber(value));
  }
  return CheckDuration(field, value);
}

absl::Status CheckOp(const v1::OpStat& op, const FieldPath& path, bool cpu_run) {
  if (auto s = CheckText(path.Member(".name"), op.name(), kMaxOpNameBytes, true); !s.ok()) return s;
  if (auto s = CheckCount(path.Member(".calls"), op.calls(), true); !s.ok()) return s;
  for (auto [suffix, value] :
       {std::pair{".self_cpu_us", op.self_cpu_us()}, std::pair{".total_cpu_us", op.total_cpu_us()},
        std::pair{".self_device_us", op.self_device_us()},
        std::pair{".total_device_us", op.total_device_us()}}) {
    if (auto s = CheckDuration(path.Member(suffix), value); !s.ok()) return s;
  }
  if (auto s = CheckIncludes(path.Member(".total_cpu_us"), op.total_cpu_us(),
                             path.Member(".self_cpu_us"), op.self_cpu_us());
      !s.ok()) {
    return s;
  }
  if (auto s = CheckIncludes(path.Member(".total_device_us"), op.total_device_us(),
                             path.Member(".self_device_us"), op.self_device_us());
      !s.ok()) {
    return s;
  }
  const double floor = cpu_run ? -kSelfCpuRoundingUsPerCall * static_cast<double>(op.calls()) : 0.0;
  return CheckEach(
      path.Member(".step_self_device_us"), op.step_self_device_us(), kMaxStepSamples,
      [floor](double us, const FieldPath& at) { return CheckStepSample(at, us, floor); });
}

absl::Status CheckOps(const v1::RunSummary& run) {
  std::unordered_set<std::string_view> names;  // views of the run's own names
  // A CPU run's samples are self CPU time (the collector's UsesCpuTime), a device run's device
  // time.
  const bool cpu_run = run.identity().device_kind() == v1::DEVICE_KIND_CPU;
  auto status =
      CheckEach("run.ops", run.ops(), kMaxOps, [&](const v1::OpStat& op, const FieldPath& path) {
        if (auto s = CheckOp(op, path, cpu_run); !s.ok()) return s;
        if (!names.insert(op.name()).second) {
          return Invalid(path.Member(".name"), "'" + op.name() + "' appears twice");
        }
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  if (run.status() == v1::RUN_STATUS_OK && run.ops_size() == 0 &&
      run.source() != v1::RUN_SOURCE_MONITOR) {
    return Invalid("run.ops", "an OK run needs at least one operator");
  }
  return absl::OkStatus();
}

absl::Status CheckSteps(const v1::RunSummary& run) {
  std::set<uint32_t> seen;
  uint64_t covered = 0;  // profiler steps: buckets (StepTotal.steps > 1) cover several
  auto status = CheckEach(
      "run.steps", run.steps(), kMaxSteps, [&](const v1::StepTotal& step, const FieldPath& path) {
        if (auto s = CheckStepNumber(path.Member(".step"), step.step()); !s.ok()) return s;
        if (!seen.insert(step.step()).second) {
          return Invalid(path.Member(".step"),
                         "step " + std::to_string(step.step()) + " appears twice");
        }
        if (auto s = CheckStepNumber(path.Member(".steps"), step.steps()); !s.ok()) return s;
        covered += std::max<uint32_t>(step.steps(), 1);
        if (auto s = CheckDuration(path.Member(".device_us"), step.device_us()); !s.ok()) {
          return s;
        }
        return CheckDuration(path.Member(".cpu_us"), step.cpu_us());
      });
  if (!status.ok()) return status;
  // The collector divides by the steps covered as an int.
  if (covered > kMaxStepNumber) {
    return Invalid("run.steps", "cover " + std::to_string(covered) +
                                    " steps, more than the limit of " +
                                    std::to_string(kMaxStepNumber));
  }
  return absl::OkStatus();
}

// In a run whose steps are bucketed, an op's sample i is the mean over bucket i's steps: each
// op has one sample per bucket (or none), so that a reader can weigh sample i by its bucket.
absl::Status CheckBucketedSamples(const v1::RunSummary& run) {
  const bool bucketed = std::any_of(run.steps().begin(), run.steps().end(),
                                    [](const v1::StepTotal& step) { return step.steps() > 1; });
  if (!bucketed) return absl::OkStatus();
  for (int i = 0; i < run.ops_size(); ++i) {
    const int samples = run.ops(i).step_self_device_us_size();
    if (samples != 0 && samples != run.steps_size()) {
      return Invalid(
          FieldPath("run.ops").Index(static_cast<std::size_t>(i)).Member(".step_self_device_us"),
          "has " + std::to_string(samples) + " entries, but the run's steps are " +
              std::to_string(run.steps_size()) +
              " buckets (run.steps[].steps > 1): one sample per bucket, or none");
    }
  }
  return absl::OkStatus();
}

// The whole message, as the gRPC channels of both sides limit it (limits.h): a run over it
// would be refused as RESOURCE_EXHAUSTED by the transport, naming no field.
absl::Status CheckMessageSize(const v1::RunSummary& run) {
  const std::size_t bytes = run.ByteSizeLong();
  if (bytes <= kMaxMessageBytes) return absl::OkStatus();
  return absl::ResourceExhaustedError("run: " + std::to_string(bytes) +
                                      " bytes, more than the message limit of " +
                                      std::to_string(kMaxMessageBytes) + " bytes");
}

absl::Status CheckLayers(const v1::RunSummary& run) {
  std::set<int> seen;
  // Each layer at most once: more entries than layers always repeat one, said below.
  return CheckEach(
      "run.layers", run.layers(), std::numeric_limits<int>::max(),
      [&](const v1::LayerTime& layer, const FieldPath& path) {
        if (!v1::Layer_IsValid(layer.layer()) || layer.layer() == v1::LAYER_UNSPECIFIED) {
          return Invalid(path.Member(".layer"), "unknown value " + std::to_string(layer.layer()));
        }
        if (!seen.insert(layer.layer()).second) {
          return Invalid(path.Member(".layer"), v1::Layer_Name(layer.layer()) + " appears twice");
        }
        return CheckDuration(path.Member(".time_us"), layer.time_us());
      });
}

absl::Status CheckEnvironment(const v1::RunSummary& run) {
  if (run.environment_size() > static_cast<int>(kMaxEnvironmentEntries)) {
    return TooMany("run.environment", run.environment_size(), kMaxEnvironmentEntries);
  }
  for (const auto& [key, value] : run.environment()) {
    const std::string name = "run.environment[\"" + PrintableText(key, 64) + "\"]";
    const FieldPath path(name);
    if (auto s = CheckText(path.Member(" key"), key, kMaxEnvironmentKeyBytes, true); !s.ok())
      return s;
    if (auto s = CheckText(path, value, kMaxEnvironmentValueBytes, false); !s.ok()) return s;
  }
  return absl::OkStatus();
}

bool IsLowerHex(const std::string& text) {
  return text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

absl::Status CheckArtifact(const v1::Artifact& a, const FieldPath& path) {
  if (auto s = CheckText(path.Member(".kind"), a.kind(), kMaxIdentityBytes, true); !s.ok())
    return s;
  if (auto s = CheckText(path.Member(".uri"), a.uri(), kMaxUriBytes, true); !s.ok()) return s;
  if (auto s = CheckCount(path.Member(".size_bytes"), a.size_bytes(), false); !s.ok()) return s;
  if (!a.sha256().empty() && (a.sha256().size() != 64 || !IsLowerHex(a.sha256()))) {
    return Invalid(path.Member(".sha256"), "must be 64 lowercase hex characters");
  }
  return CheckText(path.Member(".pair_key"), a.pair_key(), kMaxIdentityBytes, false);
}

absl::Status CheckArtifacts(const v1::RunSummary& run) {
  return CheckEach("run.artifacts", run.artifacts(), kMaxArtifacts, CheckArtifact);
}

absl::Status CheckDeviceTotals(const v1::RunSummary& run) {
  if (auto s = CheckDuration("run.device_total_us", run.device_total_us()); !s.ok()) return s;
  if (auto s = CheckDuration("run.unattributed_device_us", run.unattributed_device_us()); !s.ok()) {
    return s;
  }
  return CheckIncludes("run.device_total_us", run.device_total_us(), "run.unattributed_device_us",
                       run.unattributed_device_us());
}

bool IsSnakeCase(const std::string& text) {
  if (text.empty() || text.front() < 'a' || text.front() > 'z') return false;
  return text.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
}

absl::Status CheckWarning(const v1::CaptureWarning& w, const FieldPath& path) {
  if (auto s = CheckText(path.Member(".kind"), w.kind(), kMaxWarningKindBytes, true); !s.ok())
    return s;
  if (!IsSnakeCase(w.kind())) {
    return Invalid(path.Member(".kind"),
                   "must be snake_case (a-z, 0-9, _; starting with a letter)");
  }
  return CheckText(path.Member(".message"), w.message(), kMaxWarningMessageBytes, true);
}

absl::Status CheckWarnings(const v1::RunSummary& run) {
  return CheckEach("run.warnings", run.warnings(), kMaxWarnings, CheckWarning);
}

absl::Status CheckKernel(const v1::KernelTotal& k, const FieldPath& path) {
  if (auto s = CheckText(path.Member(".name"), k.name(), kMaxKernelNameBytes, true); !s.ok())
    return s;
  if (auto s = CheckCount(path.Member(".calls"), k.calls(), true); !s.ok()) return s;
  return CheckDuration(path.Member(".device_us"), k.device_us());
}

absl::Status CheckKernels(const v1::RunSummary& run) {
  return CheckEach("run.kernels", run.kernels(), kMaxKernels, CheckKernel);
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
  for (auto [field, value] :
       {std::pair{"run.device_join.by_id_executions", join.by_id_executions()},
        std::pair{"run.device_join.by_order_executions", join.by_order_executions()},
        std::pair{"run.device_join.unjoined_executions", join.unjoined_executions()}}) {
    if (auto s = CheckCount(field, value, false); !s.ok()) return s;
  }
  for (auto [field, value] : {std::pair{"run.device_join.by_id_us", join.by_id_us()},
                              std::pair{"run.device_join.by_order_us", join.by_order_us()},
                              std::pair{"run.device_join.unjoined_us", join.unjoined_us()}}) {
    if (auto s = CheckDuration(field, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// ---- issue 26: what run.proto says and the checks above did not hold ----

// run.proto: events_dropped "must be 0 for OK runs": an OK run's device time is complete.
absl::Status CheckNoEventsDroppedWhenOk(const v1::RunSummary& run) {
  if (run.status() != v1::RUN_STATUS_OK || run.capture().events_dropped() == 0) {
    return absl::OkStatus();
  }
  return Invalid("run.capture.events_dropped",
                 "is " + std::to_string(run.capture().events_dropped()) +
                     " in an OK run (must be 0; a run whose profiler dropped events is INVALID)");
}

// run.proto: an op's step samples are one per step (one per bucket when bucketed: that case is
// CheckBucketedSamples), or none; a different count cannot be weighed against the steps.
absl::Status CheckStepSampleCounts(const v1::RunSummary& run) {
  if (run.steps_size() == 0) return absl::OkStatus();
  for (int i = 0; i < run.ops_size(); ++i) {
    const int samples = run.ops(i).step_self_device_us_size();
    if (samples != 0 && samples != run.steps_size()) {
      return Invalid(
          FieldPath("run.ops").Index(static_cast<std::size_t>(i)).Member(".step_self_device_us"),
          "has " + std::to_string(samples) + " entries, but the run has " +
              std::to_string(run.steps_size()) + " steps: one sample per step, or none");
    }
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

bool IsPrintableText(std::string_view text) { return WhyNotPrintable(text).empty(); }

std::string PrintableText(std::string_view text, std::size_t max_bytes) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    auto decoded = DecodeUtf8(text, at);
    std::string_view piece = decoded ? text.substr(at, decoded->length) : kReplacement;
    if (decoded && IsForbidden(decoded->code_point)) {
      const char32_t c = decoded->code_point;
      piece = (c == '\t' || c == '\n' || c == '\r') ? std::string_view(" ") : kReplacement;
    }
    if (out.size() + piece.size() > max_bytes) break;
    out += piece;
    at += decoded ? decoded->length : 1;
  }
  return out;
}

std::string EscapedText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char escape[16];
  for (std::size_t at = 0; at < text.size();) {
    auto decoded = DecodeUtf8(text, at);
    if (!decoded) {
      std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned char>(text[at]));
      out += escape;
      ++at;
      continue;
    }
    const char32_t c = decoded->code_point;
    if (!IsForbidden(c)) {
      out.append(text, at, decoded->length);
    } else {
      std::snprintf(escape, sizeof escape, c < 0x100 ? "\\x%02x" : "\\u%04x",
                    static_cast<unsigned>(c));
      out += escape;
    }
    at += decoded->length;
  }
  return out;
}

// Issue 24: a MONITOR run is one window of neuron-monitor's stream: its figures in `monitor`,
// no operators or steps; a profile carries no `monitor`.
absl::Status CheckSketch(const FieldPath& field, const v1::LatencySketch& s) {
  if (s.weights_size() == 0 && s.zero_weight() == 0) return absl::OkStatus();  // idle window
  if (!(s.relative_accuracy() > 0 && s.relative_accuracy() <= kMaxSketchAccuracy)) {
    return Invalid(field.Member(".relative_accuracy"),
                   "must be in (0, " + FormatNumber(kMaxSketchAccuracy) + "], got " +
                       FormatNumber(s.relative_accuracy()));
  }
  if (auto st = CheckEach(field.Member(".weights"), s.weights(), kMaxSketchBuckets,
                          [](double w, const FieldPath& at) {
                            return std::isfinite(w) && w >= 0 && w <= 1e18
                                       ? absl::OkStatus()
                                       : Invalid(at, "must be finite, >= 0 and <= 1e18");
                          });
      !st.ok()) {
    return st;
  }
  if (!(std::isfinite(s.zero_weight()) && s.zero_weight() >= 0 && s.zero_weight() <= 1e18)) {
    return Invalid(field.Member(".zero_weight"), "must be finite, >= 0 and <= 1e18");
  }
  if (std::abs(static_cast<int64_t>(s.min_index())) > 100'000) {
    return Invalid(field.Member(".min_index"), "must be within +-100000");
  }
  if (auto st = CheckDuration(field.Member(".min_us"), s.min_us()); !st.ok()) return st;
  if (auto st = CheckDuration(field.Member(".max_us"), s.max_us()); !st.ok()) return st;
  if (s.max_us() < s.min_us()) return Invalid(field.Member(".max_us"), "is below min_us");
  return absl::OkStatus();
}

absl::Status CheckCountMap(const FieldPath& field,
                           const google::protobuf::Map<std::string, uint64_t>& counts) {
  if (counts.size() > kMaxMonitorKinds) {
    return TooMany(field, static_cast<std::size_t>(counts.size()), kMaxMonitorKinds);
  }
  for (const auto& [key, value] : counts) {
    if (auto s = CheckText(field.Member("." + key), key, 64, true); !s.ok()) return s;
    if (auto s = CheckCount(field, value, false); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckMonitor(const v1::RunSummary& run) {
  if (!v1::RunSource_IsValid(run.source())) {
    return Invalid("run.source", "unknown value " + std::to_string(run.source()));
  }
  if (run.source() != v1::RUN_SOURCE_MONITOR) {
    return run.has_monitor() ? Invalid("run.monitor", "is only for runs of source MONITOR")
                             : absl::OkStatus();
  }
  if (!run.has_monitor()) return Invalid("run.monitor", "is required for a MONITOR run");
  if (run.ops_size() > 0 || run.steps_size() > 0) {
    return Invalid("run.ops", "a MONITOR run has no operators or steps");
  }
  if (run.identity().device_kind() != v1::DEVICE_KIND_NEURON) {
    return Invalid("run.identity.device_kind", "a MONITOR run is NEURON");
  }
  const auto& m = run.monitor();
  if (!m.has_window_start()) return Invalid("run.monitor.window_start", "is required");
  if (!m.has_window_end()) return Invalid("run.monitor.window_end", "is required");
  if (auto s = CheckTime("run.monitor.window_start", m.window_start()); !s.ok()) return s;
  if (auto s = CheckTime("run.monitor.window_end", m.window_end()); !s.ok()) return s;
  const int64_t span = m.window_end().seconds() - m.window_start().seconds();
  if (span <= 0 || span > kMaxMonitorWindowSeconds) {
    return Invalid(
        "run.monitor.window_end",
        "must be after window_start and at most 7 days later, got " + std::to_string(span) + " s");
  }
  if (auto s = CheckText("run.monitor.runtime_tag", m.runtime_tag(), 256, false); !s.ok()) return s;
  if (auto s = CheckEach("run.monitor.neff_names", m.neff_names(), 64,
                         [](const std::string& name, const FieldPath& at) {
                           return CheckText(at, name, 256, true);
                         });
      !s.ok()) {
    return s;
  }
  if (!(std::isfinite(m.covered_seconds()) && m.covered_seconds() >= 0 &&
        m.covered_seconds() <= kMaxMonitorWindowSeconds)) {
    return Invalid("run.monitor.covered_seconds", "must be finite, >= 0 and <= 604800");
  }
  if (auto s = CheckCount("run.monitor.executions", m.executions(), false); !s.ok()) return s;
  if (auto s = CheckCountMap("run.monitor.outcomes", m.outcomes()); !s.ok()) return s;
  if (auto s = CheckCountMap("run.monitor.errors", m.errors()); !s.ok()) return s;
  const double util = m.neuroncore_utilization_pct();
  if (!(std::isfinite(util) && util >= 0 && util <= 100)) {
    return Invalid("run.monitor.neuroncore_utilization_pct",
                   "must be 0..100, got " + FormatNumber(util));
  }
  if (auto s = CheckSketch("run.monitor.device_latency", m.device_latency()); !s.ok()) return s;
  if (auto s = CheckSketch("run.monitor.total_latency", m.total_latency()); !s.ok()) return s;
  for (auto [field, value] : {std::pair{"run.monitor.device_p50_us", m.device_p50_us()},
                              std::pair{"run.monitor.device_p99_us", m.device_p99_us()},
                              std::pair{"run.monitor.total_p99_us", m.total_p99_us()}}) {
    if (auto s = CheckDuration(field, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ValidateRun(const v1::RunSummary& run) {
  if (!run.has_identity()) return Invalid("run.identity", "is required");
  if (auto s = CheckIdentity(run.identity(), run.status()); !s.ok()) return s;
  using Check = absl::Status (*)(const v1::RunSummary&);
  for (Check check : {CheckStatus, CheckTimes, CheckCapture, CheckMonitor, CheckOps, CheckSteps,
                      CheckLayers, CheckEnvironment, CheckArtifacts, CheckDeviceTotals,
                      CheckWarnings, CheckKernels, CheckDeviceJoin, CheckBucketedSamples,
                      CheckMessageSize, CheckNoEventsDroppedWhenOk, CheckStepSampleCounts}) {
    if (auto s = check(run); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// ---- issue 26: a job's text fields ----

absl::Status ValidateJobText(const v1::JobSpec& job, const std::string& path) {
  // model and workload name series and label every run: printable, as a run's text fields are.
  for (auto [field, value] :
       {std::pair{".model", &job.model()}, std::pair{".workload", &job.workload()}}) {
    if (auto why = WhyNotPrintable(*value); !why.empty()) return Invalid(path + field, why);
  }
  // The command is shell text (tabs and line breaks are fine), passed to exec as a C string.
  auto check_command_text = [&](const std::string& field, const std::string& value) {
    for (std::size_t at = 0; at < value.size();) {
      auto decoded = DecodeUtf8(value, at);
      if (!decoded) return Invalid(field, "is not valid UTF-8 at byte " + std::to_string(at));
      if (decoded->code_point == 0) {
        return Invalid(field, "must not contain NUL (U+0000) at byte " + std::to_string(at));
      }
      at += decoded->length;
    }
    return absl::OkStatus();
  };
  if (auto s = check_command_text(path + ".command", job.command()); !s.ok()) return s;
  for (const auto& [key, value] : job.env()) {
    if (auto why = WhyNotPrintable(key); !why.empty()) return Invalid(path + ".env", why);
    if (auto s = check_command_text(path + ".env." + key, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::optional<std::size_t> FirstInvalidUtf8(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    auto decoded = DecodeUtf8(text, at);
    if (!decoded) return at;
    at += decoded->length;
  }
  return std::nullopt;
}

absl::Status CheckSecretFileMode(const std::string& path, const std::string& what,
                                 std::ostream& warnings) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return absl::OkStatus();  // reading it will say why
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
  if ((info.st_mode & S_IWOTH) != 0) {
    return absl::PermissionDeniedError(what + " " + path + " is world-writable (mode " + mode +
                                       "): anyone on this host could replace it; chmod 600 " +
                                       path);
  }
  if ((info.st_mode & S_IROTH) != 0) {
    warnings << "warning: " << what << " " << path << " is world-readable (mode " << mode
             << "): anyone on this host can use it; chmod 600 " << path << "\n";
  }
  return absl::OkStatus();
}

}  // namespace devtime::wire
