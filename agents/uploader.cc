#include "agents/uploader.h"

#include <algorithm>
#include <random>
#include <thread>

#include "proto/wire/channel.h"

namespace devtime::agent {

bool IsTransient(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::CANCELLED:
      return true;
    default:
      return false;
  }
}

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
    if (!IsTransient(status) || std::chrono::steady_clock::now() + wait > give_up_at) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          wire::Describe(status));
    }
    if (options.on_retry) options.on_retry(status, wait);
    std::this_thread::sleep_for(wait);
    backoff = std::min(backoff * 2, options.max_backoff);
  }
}

}  // namespace devtime::agent
