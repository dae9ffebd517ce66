#include "proto/wire/json.h"

#include "google/protobuf/util/json_util.h"

namespace devtime::wire {
namespace {

// torch.profiler's trace JSON: Kineto's {"traceEvents": [...]} or the legacy bare array.
// Asked only of content that failed to parse as a RunSummary, which has neither shape.
bool LooksLikeProfilerTrace(const std::string& json) {
  const std::size_t first = json.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return false;
  return json[first] == '[' ||
         (json[first] == '{' && json.find("\"traceEvents\"") != std::string::npos);
}

}  // namespace

absl::Status ParseJson(const std::string& json, const std::string& source,
                       google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(json, message, options);
  if (!status.ok() && message->GetTypeName() == "devtime.v1.RunSummary" &&
      LooksLikeProfilerTrace(json)) {
    return absl::InvalidArgumentError(source +
                                      " is a profiler trace, not a RunSummary: run `devtime-agent "
                                      "summarize " +
                                      source + " --format json > run.json` and upload that");
  }
  if (!status.ok()) {
    return absl::InvalidArgumentError(source + ": not a valid " + message->GetTypeName() +
                                      " in JSON form: " + std::string(status.message()));
  }
  return absl::OkStatus();
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  // Printing a well-formed message cannot fail; a failure would be a bug in protobuf.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace devtime::wire
