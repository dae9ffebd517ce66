#include "tests/support/collector_client.h"

#include <stdexcept>

#include "proto/wire/channel.h"

namespace devtime::testing {

std::unique_ptr<v1::Collector::Stub> CollectorStub(const std::string& address,
                                                   const std::string& token) {
  auto channel = wire::ConnectCollector(address, wire::ClientCredentials::WithToken(token));
  if (!channel.ok()) {
    throw std::runtime_error("cannot connect to " + address + ": " +
                             std::string(channel.status().message()));
  }
  return v1::Collector::NewStub(*channel);
}

grpc::Status UploadRun(v1::Collector::StubInterface& stub, const v1::RunSummary& run,
                       std::chrono::seconds timeout) {
  v1::UploadRunRequest request;
  *request.mutable_run() = run;
  v1::UploadRunResponse response;
  auto context = wire::MakeContext(timeout);
  return stub.UploadRun(context.get(), request, &response);
}

agent::UploadOptions RetryingUploadOptions() {
  agent::UploadOptions options;
  options.retry_for = std::chrono::seconds(90);
  options.attempt_timeout = std::chrono::seconds(10);
  options.first_backoff = std::chrono::milliseconds(50);
  options.max_backoff = std::chrono::milliseconds(1000);
  return options;
}

}  // namespace devtime::testing
