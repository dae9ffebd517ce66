// Small helpers the collector's stores share for moving protobuf values in and out of SQL.
#pragma once

#include <string>

#include "google/protobuf/message.h"
#include "google/protobuf/timestamp.pb.h"

namespace devtime::store {

// Deterministic protobuf bytes: the same message always hashes and compares the same.
std::string DeterministicBytes(const google::protobuf::Message& message);

// Compact JSON with the .proto field names (snake_case), for jsonb columns SQL readers query.
std::string JsonForSql(const google::protobuf::Message& message);

// SQL that turns a timestamptz column into microseconds since the epoch, exactly.
std::string EpochMicros(const std::string& column);

google::protobuf::Timestamp FromMicros(long long micros);

// RFC 3339 text PostgreSQL reads as timestamptz.
std::string TimestampText(const google::protobuf::Timestamp& t);

}  // namespace devtime::store
