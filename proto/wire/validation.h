// Validation of a RunSummary against the wire contract (proto/devtime/v1/run.proto): the one
// validator the collector applies to uploads and the agent may apply before it spools a run.
// Runs before anything touches the database, so an invalid upload stores nothing.
#pragma once

#include "absl/status/status.h"
#include "devtime/v1/run.pb.h"

namespace devtime::wire {

// OK, or INVALID_ARGUMENT / RESOURCE_EXHAUSTED whose message starts with the offending
// field's path, e.g. "run.ops[3].self_device_us: must be finite and >= 0, got nan".
absl::Status ValidateRun(const v1::RunSummary& run);

// True for the canonical lowercase 8-4-4-4-12 hex UUID form.
bool IsCanonicalUuid(const std::string& text);

}  // namespace devtime::wire
