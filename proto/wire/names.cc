#include "proto/wire/names.h"

namespace devtime::wire {

std::string DeviceKindName(v1::DeviceKind kind) {
  switch (kind) {
    case v1::DEVICE_KIND_CPU:
      return "cpu";
    case v1::DEVICE_KIND_CUDA:
      return "cuda";
    case v1::DEVICE_KIND_NEURON:
      return "neuron";
    default:
      return "unspecified";
  }
}

v1::DeviceKind DeviceKindFromName(const std::string& name) {
  for (auto kind : {v1::DEVICE_KIND_CPU, v1::DEVICE_KIND_CUDA, v1::DEVICE_KIND_NEURON}) {
    if (DeviceKindName(kind) == name) return kind;
  }
  return v1::DEVICE_KIND_UNSPECIFIED;
}

std::string RunStatusName(v1::RunStatus status) {
  switch (status) {
    case v1::RUN_STATUS_OK:
      return "ok";
    case v1::RUN_STATUS_INVALID:
      return "invalid";
    case v1::RUN_STATUS_FAILED:
      return "failed";
    default:
      return "unspecified";
  }
}

v1::RunStatus RunStatusFromName(const std::string& name) {
  for (auto status : {v1::RUN_STATUS_OK, v1::RUN_STATUS_INVALID, v1::RUN_STATUS_FAILED}) {
    if (RunStatusName(status) == name) return status;
  }
  return v1::RUN_STATUS_UNSPECIFIED;
}

std::string SlotOutcomeName(v1::SlotOutcome outcome) {
  switch (outcome) {
    case v1::SLOT_OUTCOME_RUNNING:
      return "running";
    case v1::SLOT_OUTCOME_SUCCEEDED:
      return "succeeded";
    case v1::SLOT_OUTCOME_FAILED:
      return "failed";
    case v1::SLOT_OUTCOME_SKIPPED_STILL_RUNNING:
      return "skipped_still_running";
    case v1::SLOT_OUTCOME_MISSED_NO_AGENT:
      return "missed_no_agent";
    case v1::SLOT_OUTCOME_MISSED_AGENT_DOWN:
      return "missed_agent_down";
    default:
      return "unspecified";
  }
}

v1::SlotOutcome SlotOutcomeFromName(const std::string& name) {
  for (int i = v1::SlotOutcome_MIN; i <= v1::SlotOutcome_MAX; ++i) {
    auto outcome = static_cast<v1::SlotOutcome>(i);
    if (v1::SlotOutcome_IsValid(i) && SlotOutcomeName(outcome) == name) return outcome;
  }
  return v1::SLOT_OUTCOME_UNSPECIFIED;
}

std::string RegressionStateName(v1::RegressionState state) {
  switch (state) {
    case v1::REGRESSION_STATE_SUSPECTED:
      return "suspected";
    case v1::REGRESSION_STATE_OPEN:
      return "open";
    case v1::REGRESSION_STATE_ACKNOWLEDGED:
      return "acknowledged";
    case v1::REGRESSION_STATE_RESOLVED:
      return "resolved";
    case v1::REGRESSION_STATE_INVALID:
      return "invalid";
    default:
      return "unspecified";
  }
}

v1::RegressionState RegressionStateFromName(const std::string& name) {
  for (auto state : {v1::REGRESSION_STATE_SUSPECTED, v1::REGRESSION_STATE_OPEN,
                     v1::REGRESSION_STATE_ACKNOWLEDGED, v1::REGRESSION_STATE_RESOLVED,
                     v1::REGRESSION_STATE_INVALID}) {
    if (RegressionStateName(state) == name) return state;
  }
  return v1::REGRESSION_STATE_UNSPECIFIED;
}

bool IsFiring(v1::RegressionState state) {
  return state == v1::REGRESSION_STATE_OPEN || state == v1::REGRESSION_STATE_ACKNOWLEDGED;
}

std::string ResolutionName(v1::Resolution resolution) {
  switch (resolution) {
    case v1::RESOLUTION_FIXED:
      return "fixed";
    case v1::RESOLUTION_ACCEPTED_BASELINE:
      return "accepted_baseline";
    default:
      return "";
  }
}

v1::Resolution ResolutionFromName(const std::string& name) {
  for (auto resolution : {v1::RESOLUTION_FIXED, v1::RESOLUTION_ACCEPTED_BASELINE}) {
    if (ResolutionName(resolution) == name) return resolution;
  }
  return v1::RESOLUTION_UNSPECIFIED;
}

}  // namespace devtime::wire
