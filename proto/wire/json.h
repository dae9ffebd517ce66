// The JSON form of devtime's wire messages: protobuf's canonical JSON mapping with the
// .proto field names (snake_case), as written by `devtime-agent summarize --format json`
// and read by `devtime-agent upload`.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace devtime::wire {

// Parses `json` into `message`. Unknown fields and unknown enum names are errors whose
// message names them; `source` (a file name) prefixes the error. A torch.profiler trace given
// for a RunSummary (a JSON array, or an object with "traceEvents") is named as one, with the
// `devtime-agent summarize` command that makes a RunSummary of it.
absl::Status ParseJson(const std::string& json, const std::string& source,
                       google::protobuf::Message* message);

// Pretty-printed JSON with .proto field names; fields at default values are included so
// a reader sees the whole shape.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace devtime::wire
