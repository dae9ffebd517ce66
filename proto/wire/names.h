// Short lowercase names of the wire enums: what PostgreSQL stores and what users read.
#pragma once

#include <string>

#include "devtime/v1/run.pb.h"

namespace devtime::wire {

std::string DeviceKindName(v1::DeviceKind kind);  // "cpu", "cuda", "neuron", "unspecified"
v1::DeviceKind DeviceKindFromName(const std::string& name);  // UNSPECIFIED when unknown
std::string RunStatusName(v1::RunStatus status);  // "ok", "invalid", "failed", "unspecified"
v1::RunStatus RunStatusFromName(const std::string& name);  // UNSPECIFIED when unknown

}  // namespace devtime::wire
