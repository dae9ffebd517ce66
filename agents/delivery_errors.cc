#include "agents/delivery_errors.h"

namespace devtime::agent {

Delivery DeliveryOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return Delivery::kDelivered;

    // The collector is down or restarting, or PostgreSQL is (the collector says UNAVAILABLE
    // while its database stays away).
    case absl::StatusCode::kUnavailable:
    // The attempt ran out of time; the run may even have been committed, and ingest is
    // idempotent on run_id, so sending it again is safe.
    case absl::StatusCode::kDeadlineExceeded:
    // A concurrency conflict (transaction aborted): the next attempt normally goes through.
    case absl::StatusCode::kAborted:
    // The call was cancelled (a channel shutting down or reconnecting), not refused.
    case absl::StatusCode::kCancelled:
      return Delivery::kRetry;

    // No or an unknown token: the token file is being fixed, and the run with it.
    case absl::StatusCode::kUnauthenticated:
    // The collector cannot serve UploadRun (an older collector, a proxy in between).
    case absl::StatusCode::kUnimplemented:
    // The collector is not ready to store (its database schema is newer or older than it).
    case absl::StatusCode::kFailedPrecondition:
    // A server bug or a database error that is not a lost connection; also the gRPC library's
    // answer to a malformed response. The run is not what failed.
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDataLoss:
    // UploadRun never answers these for a run; whatever produced them is not the run.
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
      return Delivery::kBlocked;

    // ValidateRun rejected a field (the message names it).
    case absl::StatusCode::kInvalidArgument:
    // The run is over a size limit (ValidateRun's counts, or the gRPC message size).
    case absl::StatusCode::kResourceExhausted:
    // Another run with this run_id and different content is stored.
    case absl::StatusCode::kAlreadyExists:
    // This agent's token may not write runs for the run's host.
    case absl::StatusCode::kPermissionDenied:
      return Delivery::kRefusedForGood;

    default:
      break;
  }
  // A code outside the canonical set says nothing about the run: keep it, do not hammer.
  return Delivery::kBlocked;
}

}  // namespace devtime::agent
