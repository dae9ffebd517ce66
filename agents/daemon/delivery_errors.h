// What an upload's error says about the run it tried to deliver: the one classifier of the
// collector's answers, shared by `devtime-agent upload` (uploader.h) and the daemon's spool
// (daemon.h), so that both read the same status code the same way.
#pragma once

#include "absl/status/status.h"

namespace devtime::agent {

enum class Delivery {
  kDelivered,  // OK: the collector has committed the run
  // Nothing was stored and the same request may succeed in a moment (the collector or its
  // database is unreachable, a deadline passed, a conflict): retry with backoff, for as long
  // as it takes (nothing is lost while a collector is down).
  kRetry,
  // The run is fine, but something outside it stops every delivery until a person acts (a
  // token being fixed, a collector to upgrade or migrate): retrying at once will not help,
  // and the run must be kept for when it is fixed.
  kBlocked,
  // The collector failed on this run (a server bug, a database error that is not a lost
  // connection): it may pass with a fix or never; the run is kept and tried again with
  // backoff while other runs go past it, and set aside after a bound (RetryPolicy).
  kServerError,
  // The collector will never accept this run as it is, and its message says why.
  kRefusedForGood,
};

// The class of an upload attempt that ended with `code` (grpc::StatusCode has the same values).
Delivery DeliveryOf(absl::StatusCode code);

}  // namespace devtime::agent
