// Delivering runs to the collector.
//
// Upload() sends one RunSummary and waits for its acknowledgement, which the collector sends
// only after the run is committed. Passing failures (Delivery::kRetry in delivery_errors.h:
// collector or database unreachable, deadline) are retried with exponential backoff and
// jitter until retry_for; any other error is returned at once. The collector's ingest is
// idempotent on run_id, so a retry never stores a run twice.
//
// RetrySchedule is the daemon's memory of each spooled run's failed attempts (daemon.h), so
// that no run holds the queue: a failed run waits out its own backoff while the others go
// past it, and a run the collector keeps failing on (Delivery::kServerError) is set aside
// after RetryPolicy::set_aside_after such answers.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "agents/daemon/delivery_errors.h"
#include "devtime/v1/collector.grpc.pb.h"
#include "proto/wire/env.h"

namespace devtime::agent {

struct UploadOptions {
  std::chrono::milliseconds attempt_timeout{30'000};
  std::chrono::milliseconds retry_for{60'000};  // give up after this long; 0 = one attempt
  std::chrono::milliseconds first_backoff{250};
  std::chrono::milliseconds max_backoff{8'000};
  // Called before each retry with the failed attempt's error and the wait before the next.
  std::function<void(const grpc::Status&, std::chrono::milliseconds)> on_retry;
  std::string collector;  // the address dialled, for error messages ("" = not named)
  wire::Env* env = wire::Env::Default();  // the clock retry_for and the backoff are measured on
};

// OK with the collector's answer, or the last error (its message names the gRPC code).
absl::StatusOr<v1::UploadRunResponse> Upload(v1::Collector::StubInterface& stub,
                                             const v1::RunSummary& run,
                                             const UploadOptions& options);

// How the daemon retries a spooled run. The wait after a run's n-th failed attempt is
// first_backoff * 2^(n-1), at most max_backoff (max_server_error_backoff after a server
// error), with full jitter (a uniform draw from its upper half). With the defaults a run the
// collector keeps failing on is set aside after 20 server errors, 27 to 54 minutes after the
// first; a collector that is down (kRetry) or refuses every run (kBlocked) never sets a run
// aside.
struct RetryPolicy {
  std::chrono::milliseconds first_backoff{500};
  std::chrono::milliseconds max_backoff{30'000};
  std::chrono::milliseconds max_server_error_backoff{300'000};
  int set_aside_after = 20;
};

// Per-run retry state: attempts and the time of the next try (on the caller's steady clock:
// the daemon passes its env's). Runs are named by run id;
// state lives in memory only (a restarted agent tries every spooled run at once).
//
// Thread-safety: none; the daemon's uploader thread alone uses it.
class RetrySchedule {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RetrySchedule(RetryPolicy policy, unsigned seed = std::random_device{}());

  // Whether `run_id` may be tried at `now`: never tried, delivered, or its wait is over.
  bool Due(const std::string& run_id, Clock::time_point now) const;

  // Records that an attempt at `now` ended with `delivery` (not kDelivered). True when the
  // run has now had set_aside_after server errors and should be set aside.
  bool Failed(const std::string& run_id, Delivery delivery, Clock::time_point now);

  // Forgets a run that was delivered or set aside.
  void Forget(const std::string& run_id) { runs_.erase(run_id); }

  // The server errors recorded for `run_id`.
  int ServerErrors(const std::string& run_id) const;

  // When the first waiting run comes due; none when no run waits.
  std::optional<Clock::time_point> NextDue() const;

 private:
  struct RunState {
    int failures = 0;
    int server_errors = 0;
    Clock::time_point next_try;
  };

  const RetryPolicy policy_;
  std::mt19937 jitter_;
  std::unordered_map<std::string, RunState> runs_;
};

}  // namespace devtime::agent
