#include "agents/daemon/uploader.h"

#include <algorithm>
#include <random>

#include "agents/daemon/delivery_errors.h"
#include "proto/wire/call_errors.h"
#include "proto/wire/channel.h"

namespace devtime::agent {

absl::StatusOr<v1::UploadRunResponse> Upload(v1::Collector::StubInterface& stub,
                                             const v1::RunSummary& run,
                                             const UploadOptions& options) {
  v1::UploadRunRequest request;
  *request.mutable_run() = run;
  wire::Env& env = *options.env;
  auto give_up_at = env.SteadyNow() + options.retry_for;
  auto backoff = options.first_backoff;
  std::mt19937 jitter(std::random_device{}());
  while (true) {
    v1::UploadRunResponse response;
    auto context = wire::MakeContext(options.attempt_timeout);
    context->set_wait_for_ready(false);
    grpc::Status status = stub.UploadRun(context.get(), request, &response);
    if (status.ok()) return response;
    // Full jitter: a fleet of agents retrying after one outage must not arrive in lockstep.
    auto wait = std::chrono::milliseconds(
        std::uniform_int_distribution<long long>(backoff.count() / 2, backoff.count())(jitter));
    auto code = static_cast<absl::StatusCode>(status.error_code());
    // Only a passing failure is retried here: nobody fixes a token or a collector while this
    // call waits, so a blocked run is reported at once (the daemon keeps it in its spool).
    if (DeliveryOf(code) != Delivery::kRetry || env.SteadyNow() + wait > give_up_at) {
      return absl::Status(code, wire::DescribeCallError(status, options.collector));
    }
    if (options.on_retry) options.on_retry(status, wait);
    env.SleepFor(wait);
    backoff = std::min(backoff * 2, options.max_backoff);
  }
}

}  // namespace devtime::agent

namespace devtime::agent {

RetrySchedule::RetrySchedule(RetryPolicy policy, unsigned seed) : policy_(policy), jitter_(seed) {}

bool RetrySchedule::Due(const std::string& run_id, Clock::time_point now) const {
  auto it = runs_.find(run_id);
  return it == runs_.end() || it->second.next_try <= now;
}

bool RetrySchedule::Failed(const std::string& run_id, Delivery delivery, Clock::time_point now) {
  RunState& run = runs_[run_id];
  ++run.failures;
  const bool server_error = delivery == Delivery::kServerError;
  if (server_error) ++run.server_errors;
  const auto cap = server_error ? policy_.max_server_error_backoff : policy_.max_backoff;
  // Doubling stops at the cap, long before 2^failures could overflow.
  auto backoff = policy_.first_backoff;
  for (int i = 1; i < run.failures && backoff < cap; ++i) backoff *= 2;
  backoff = std::min(backoff, cap);
  const auto wait = std::chrono::milliseconds(
      std::uniform_int_distribution<long long>(backoff.count() / 2, backoff.count())(jitter_));
  run.next_try = now + wait;
  return server_error && run.server_errors >= policy_.set_aside_after;
}

int RetrySchedule::ServerErrors(const std::string& run_id) const {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? 0 : it->second.server_errors;
}

std::optional<RetrySchedule::Clock::time_point> RetrySchedule::NextDue() const {
  std::optional<Clock::time_point> first;
  for (const auto& [id, run] : runs_) {
    if (!first || run.next_try < *first) first = run.next_try;
  }
  return first;
}

}  // namespace devtime::agent
