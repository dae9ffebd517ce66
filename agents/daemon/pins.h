// A culprit run's pins (issue 25): what `{pin:KEY}` becomes in a job's command and env, and
// the ordered values a pin's source lists. A normal run takes each pin's default; a culprit
// run (a run-now request with pins) the pinned values. Whatever cannot be pinned is an error
// naming the key, and the slot fails with it: a culprit run never runs silently unpinned.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "devtime/v1/jobs.pb.h"

namespace devtime::agent {

// `job` with every {pin:KEY} in its command and env values replaced: by pins[KEY] when
// given, else by the pin's default. FAILED_PRECONDITION ("pins: ...") when `pins` names a key
// the job does not declare, a value is not a plain one (wire::IsPinValue), or a placeholder
// names no declared pin.
absl::StatusOr<v1::JobSpec> ApplyPins(const v1::JobSpec& job,
                                      const std::map<std::string, std::string>& pins);

// The entries a culprit run records in its environment: devtime.hunt = tag, and
// devtime.pin.KEY = value for each pinned key.
std::map<std::string, std::string> HuntEnvironment(const v1::RunNowRequest& request);

// Runs the source of each range of `request` (in `dir`, {good} and {bad} replaced, at most
// `timeout`) and returns the values it printed as devtime.values.KEY.N entries (whole
// lines, in order, space-separated, N from 0, each entry <= 1,000 bytes, at most 64 entries per
// key). FAILED_PRECONDITION ("pins: ...") when a key has no source, the source fails or prints
// nothing, a value is not a plain one, or the values do not fit.
absl::StatusOr<std::map<std::string, std::string>> ResolveSources(
    const v1::JobSpec& job, const v1::RunNowRequest& request, const std::filesystem::path& dir,
    std::chrono::milliseconds timeout);

}  // namespace devtime::agent
