// Short lowercase names of the wire enums: what PostgreSQL stores and what users read.
// Each name is the enum value's own .proto name without its type prefix, lowercased
// (REGRESSION_STATE_OPEN -> "open"), so a value added to a .proto file is named without code.
#pragma once

#include <string>

#include "devtime/v1/jobs.pb.h"
#include "devtime/v1/regressions.pb.h"
#include "devtime/v1/run.pb.h"

namespace devtime::wire {

std::string DeviceKindName(v1::DeviceKind kind);  // "cpu", "cuda", "neuron", "unspecified"
v1::DeviceKind DeviceKindFromName(const std::string& name);  // UNSPECIFIED when unknown
std::string RunStatusName(v1::RunStatus status);  // "ok", "invalid", "failed", "unspecified"
v1::RunStatus RunStatusFromName(const std::string& name);  // UNSPECIFIED when unknown
// "running", "succeeded", "failed", "skipped_still_running", "missed_no_agent",
// "missed_agent_down", "unspecified"
std::string SlotOutcomeName(v1::SlotOutcome outcome);
v1::SlotOutcome SlotOutcomeFromName(const std::string& name);  // UNSPECIFIED when unknown

// "suspected", "open", "acknowledged", "resolved", "invalid", "unspecified"
std::string RegressionStateName(v1::RegressionState state);
v1::RegressionState RegressionStateFromName(const std::string& name);  // UNSPECIFIED when unknown
// Open or acknowledged: the states that are alerted on (regressions.proto).
bool IsFiring(v1::RegressionState state);

// "framework_dispatch", "runtime_scheduling", "device_execution", "idle", "unspecified"
std::string LayerName(v1::Layer layer);
v1::Layer LayerFromName(const std::string& name);  // UNSPECIFIED when unknown

// "fixed", "accepted_baseline", "" (unspecified)
std::string ResolutionName(v1::Resolution resolution);
v1::Resolution ResolutionFromName(const std::string& name);  // UNSPECIFIED when unknown

}  // namespace devtime::wire
