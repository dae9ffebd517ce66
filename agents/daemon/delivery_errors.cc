#include "agents/daemon/delivery_errors.h"

namespace devtime::agent {
namespace {

using absl::StatusCode;

struct Rule {
  StatusCode code;
  Delivery delivery;
};

// Every canonical code once, with why its class fits it.
constexpr Rule kRules[] = {
    {StatusCode::kOk, Delivery::kDelivered},
    // The collector is down or restarting, or PostgreSQL is (the collector says UNAVAILABLE
    // while its database stays away).
    {StatusCode::kUnavailable, Delivery::kRetry},
    // The attempt ran out of time; the run may even have been committed, and ingest is
    // idempotent on run_id, so sending it again is safe.
    {StatusCode::kDeadlineExceeded, Delivery::kRetry},
    // A concurrency conflict (transaction aborted): the next attempt normally goes through.
    {StatusCode::kAborted, Delivery::kRetry},
    // The call was cancelled (a channel shutting down or reconnecting), not refused.
    {StatusCode::kCancelled, Delivery::kRetry},
    // No or an unknown token: the token file is being fixed, and every run with it.
    {StatusCode::kUnauthenticated, Delivery::kBlocked},
    // The collector cannot serve UploadRun (an older collector, a proxy in between).
    {StatusCode::kUnimplemented, Delivery::kBlocked},
    // The collector is not ready to store (its database schema is newer or older than it).
    {StatusCode::kFailedPrecondition, Delivery::kBlocked},
    // A server bug or a database error that is not a lost connection; also the gRPC library's
    // answer to a malformed response. It may be this run that trips it.
    {StatusCode::kInternal, Delivery::kServerError},
    {StatusCode::kUnknown, Delivery::kServerError},
    {StatusCode::kDataLoss, Delivery::kServerError},
    // UploadRun never answers these for a run; whatever produced them failed on this call.
    {StatusCode::kNotFound, Delivery::kServerError},
    {StatusCode::kOutOfRange, Delivery::kServerError},
    // ValidateRun rejected a field (the message names it), or the request was not a
    // devtime.v1.UploadRunRequest at all (truncated, invalid UTF-8 in a string): the same bytes
    // fail the same way on every attempt (issue 26).
    {StatusCode::kInvalidArgument, Delivery::kRefusedForGood},
    // The run is over a size limit (ValidateRun's counts, or the gRPC message size).
    {StatusCode::kResourceExhausted, Delivery::kRefusedForGood},
    // Another run with this run_id and different content is stored.
    {StatusCode::kAlreadyExists, Delivery::kRefusedForGood},
    // This agent's token may not write runs for the run's host.
    {StatusCode::kPermissionDenied, Delivery::kRefusedForGood},
};

}  // namespace

Delivery DeliveryOf(StatusCode code) {
  for (const Rule& rule : kRules) {
    if (rule.code == code) return rule.delivery;
  }
  // A code outside the canonical set is the server misbehaving: keep the run, bounded.
  return Delivery::kServerError;
}

}  // namespace devtime::agent
