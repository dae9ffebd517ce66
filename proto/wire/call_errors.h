// What a failed call to the collector tells its user: the status as gRPC gave it, led by what
// to check or change when the failure has a known cause. devtimectl and devtime-agent print
// it for every failed call, so both name the same fixes in the same words.
#pragma once

#include <string>

#include "grpcpp/grpcpp.h"

namespace devtime::wire {

// Describe(status), and first, where the cause is known, the fix:
//   - the address answers HTTP/1 (gRPC's "Trying to connect an http1.x server" / "Failed
//     parsing HTTP/2"): it is most likely the collector's metrics port;
//   - UNAVAILABLE: the collector is not running or not listening at that address.
// `target` is the address the caller dialled, as the user gave it ("" when unknown: the
// words then say "the collector").
std::string DescribeCallError(const grpc::Status& status, const std::string& target);

}  // namespace devtime::wire
