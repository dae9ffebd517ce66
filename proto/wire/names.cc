#include "proto/wire/names.h"

#include <cctype>

#include "google/protobuf/generated_enum_reflection.h"

namespace devtime::wire {
namespace {

// The value's .proto name without `prefix`, lowercased; "unspecified" for 0 and unknown values.
template <typename Enum>
std::string ShortName(Enum value, std::string_view prefix) {
  const auto* descriptor = google::protobuf::GetEnumDescriptor<Enum>();
  const auto* entry = descriptor->FindValueByNumber(static_cast<int>(value));
  if (entry == nullptr || entry->number() == 0) return "unspecified";
  std::string name = entry->name().substr(prefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// The value whose ShortName is `name`; the zero value (UNSPECIFIED) when none is.
template <typename Enum>
Enum FromShortName(const std::string& name, std::string_view prefix) {
  const auto* descriptor = google::protobuf::GetEnumDescriptor<Enum>();
  for (int i = 0; i < descriptor->value_count(); ++i) {
    auto value = static_cast<Enum>(descriptor->value(i)->number());
    if (descriptor->value(i)->number() != 0 && ShortName(value, prefix) == name) return value;
  }
  return static_cast<Enum>(0);
}

constexpr std::string_view kDeviceKind = "DEVICE_KIND_";
constexpr std::string_view kRunStatus = "RUN_STATUS_";
constexpr std::string_view kSlotOutcome = "SLOT_OUTCOME_";
constexpr std::string_view kRegressionState = "REGRESSION_STATE_";
constexpr std::string_view kResolution = "RESOLUTION_";
constexpr std::string_view kLayer = "LAYER_";

}  // namespace

std::string DeviceKindName(v1::DeviceKind kind) { return ShortName(kind, kDeviceKind); }
v1::DeviceKind DeviceKindFromName(const std::string& name) {
  return FromShortName<v1::DeviceKind>(name, kDeviceKind);
}

std::string RunStatusName(v1::RunStatus status) { return ShortName(status, kRunStatus); }
v1::RunStatus RunStatusFromName(const std::string& name) {
  return FromShortName<v1::RunStatus>(name, kRunStatus);
}

std::string SlotOutcomeName(v1::SlotOutcome outcome) { return ShortName(outcome, kSlotOutcome); }
v1::SlotOutcome SlotOutcomeFromName(const std::string& name) {
  return FromShortName<v1::SlotOutcome>(name, kSlotOutcome);
}

std::string RegressionStateName(v1::RegressionState state) {
  return ShortName(state, kRegressionState);
}
v1::RegressionState RegressionStateFromName(const std::string& name) {
  return FromShortName<v1::RegressionState>(name, kRegressionState);
}

bool IsFiring(v1::RegressionState state) {
  return state == v1::REGRESSION_STATE_OPEN || state == v1::REGRESSION_STATE_ACKNOWLEDGED;
}

std::string LayerName(v1::Layer layer) { return ShortName(layer, kLayer); }
v1::Layer LayerFromName(const std::string& name) { return FromShortName<v1::Layer>(name, kLayer); }

std::string ResolutionName(v1::Resolution resolution) {
  // Stored as '' when unresolved (the column's default), not "unspecified".
  if (resolution == v1::RESOLUTION_UNSPECIFIED) return "";
  return ShortName(resolution, kResolution);
}
v1::Resolution ResolutionFromName(const std::string& name) {
  return FromShortName<v1::Resolution>(name, kResolution);
}

}  // namespace devtime::wire
