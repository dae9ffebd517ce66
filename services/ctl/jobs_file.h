// Reads a jobs file (devtimectl jobs apply -f jobs.yaml) into JobSpecs. Every problem is
// reported with the file, line and field: "jobs.yaml:12: jobs[1].schedule.crn: unknown
// field (known: cron, time_zone, jitter_seconds)". The format is documented in
// deploy/jobs.example.yaml; field names are those of JobSpec in proto/devtime/v1/jobs.proto.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devtime/v1/jobs.pb.h"

namespace devtime::ctl {

// `source` names the file in error messages.
absl::StatusOr<std::vector<v1::JobSpec>> ParseJobs(const std::string& yaml,
                                                   const std::string& source);
absl::StatusOr<std::vector<v1::JobSpec>> ReadJobsFile(const std::string& path);

}  // namespace devtime::ctl
