// Uploads one RunSummary to the collector and waits for its acknowledgement, which the
// collector sends only after the run is committed. Passing failures (Delivery::kRetry in
// delivery_errors.h: collector or database unreachable, deadline) are retried with exponential
// backoff and jitter until retry_for; any other error is returned at once. The
// collector's ingest is idempotent on run_id, so a retry never stores a run twice.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "devtime/v1/collector.grpc.pb.h"

namespace devtime::agent {

struct UploadOptions {
  std::chrono::milliseconds attempt_timeout{30'000};
  std::chrono::milliseconds retry_for{60'000};  // give up after this long; 0 = one attempt
  std::chrono::milliseconds first_backoff{250};
  std::chrono::milliseconds max_backoff{8'000};
  // Called before each retry with the failed attempt's error and the wait before the next.
  std::function<void(const grpc::Status&, std::chrono::milliseconds)> on_retry;
};

// OK with the collector's answer, or the last error (its message names the gRPC code).
absl::StatusOr<v1::UploadRunResponse> Upload(v1::Collector::StubInterface& stub,
                                             const v1::RunSummary& run,
                                             const UploadOptions& options);

}  // namespace devtime::agent
