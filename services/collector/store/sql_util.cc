#include "services/collector/store/sql_util.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"

namespace devtime::store {

using google::protobuf::util::TimeUtil;

std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

std::string JsonForSql(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

std::string EpochMicros(const std::string& column) {
  return "(extract(epoch from " + column + ") * 1000000)::bigint";
}

google::protobuf::Timestamp FromMicros(long long micros) {
  return TimeUtil::MicrosecondsToTimestamp(micros);
}

std::string TimestampText(const google::protobuf::Timestamp& t) { return TimeUtil::ToString(t); }

}  // namespace devtime::store
