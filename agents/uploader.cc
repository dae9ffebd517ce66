#include "agents/uploader.h"

#include <algorithm>
#include <random>
#include <thread>

#include "agents/delivery_errors.h"
#include "proto/wire/channel.h"

namespace devtime::agent {

absl::StatusOr<v1::UploadRunResponse> Upload(v1::Collector::StubInterface& stub,
                                             const v1::RunSummary& run,
                                             const UploadOptions& options) {
  v1::UploadRunRequest request;
  *request.mutable_run() = run;
  auto give_up_at = std::chrono::steady_clock::now() + options.retry_for;
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
    if (DeliveryOf(code) != Delivery::kRetry ||
        std::chrono::steady_clock::now() + wait > give_up_at) {
      return absl::Status(code, wire::Describe(status));
    }
    if (options.on_retry) options.on_retry(status, wait);
    std::this_thread::sleep_for(wait);
    backoff = std::min(backoff * 2, options.max_backoff);
  }
}

}  // namespace devtime::agent
