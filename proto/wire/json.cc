#include "proto/wire/json.h"

#include "google/protobuf/util/json_util.h"

namespace devtime::wire {

absl::Status ParseJson(const std::string& json, const std::string& source,
                       google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(json, message, options);
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
