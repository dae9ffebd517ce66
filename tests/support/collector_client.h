// A gRPC client of a test's collector, as an agent or devtimectl would hold one.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "agents/daemon/uploader.h"
#include "devtime/v1/collector.grpc.pb.h"

namespace devtime::testing {

// A stub for the collector at `address` that sends `token` ("" = none) with every call.
std::unique_ptr<v1::Collector::Stub> CollectorStub(const std::string& address,
                                                   const std::string& token);

// Uploads one run; the collector's answer.
grpc::Status UploadRun(v1::Collector::StubInterface& stub, const v1::RunSummary& run,
                       std::chrono::seconds timeout = std::chrono::seconds(30));

// How the tests' uploaders retry, as an agent would but quicker: for 90 s (long enough to
// ride out a collector's restart), 10 s an attempt, backing off from 50 ms to 1 s.
agent::UploadOptions RetryingUploadOptions();

}  // namespace devtime::testing
