// The exit codes of all three executables (devtimectl, devtime-agent, devtime-collector), so
// that a script or a CI gate can tell "the answer is no" from "could not ask". README.md,
// "Exit codes", is the table people read; this is the one place the numbers live.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace devtime::wire {

enum ExitCode : int {
  kExitOk = 0,
  // The answer is no: a significant regression (`check`), an INVALID capture (`summarize`),
  // some inputs refused (`import`, `upload`), a run that is not OK.
  kExitFailed = 1,
  kExitUsage = 2,        // bad flags or arguments, unreadable files named on the command line
  kExitUnavailable = 3,  // the collector (or its database) could not be reached in time
  kExitNotFound = 4,     // the run, job, regression or model named does not exist
  kExitPermission = 5,   // no token, an unknown token, or a token without the right
  // `check`/`compare` refused to compare runs of different series (model, workload, instance
  // type, device kind) that --allow-different did not name: a CPU run is not a baseline for
  // a Trainium run, nor the other way round.
  kExitDifferentSeries = 6,
};

// The exit code for a failed call: UNAVAILABLE and DEADLINE_EXCEEDED 3, NOT_FOUND 4,
// UNAUTHENTICATED and PERMISSION_DENIED 5, INVALID_ARGUMENT 2 (what was asked is malformed),
// anything else 1.
ExitCode ExitCodeFor(grpc::StatusCode code);
ExitCode ExitCodeFor(absl::StatusCode code);

// What an exit code means, in a few words: "unavailable", "not found", "different series".
const char* ExitCodeMeaning(int code);

}  // namespace devtime::wire
