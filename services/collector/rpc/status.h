// devtime::collector — the one shape of a unary handler: authenticate, run the body (which
// speaks absl::Status), and hand gRPC the same code and message.
#pragma once

#include <utility>

#include "absl/status/statusor.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "grpcpp/grpcpp.h"

namespace devtime::collector {

// The gRPC status for an absl status (same code, same message).
grpc::Status ToGrpcStatus(const absl::Status& status);

// `body(caller)` when `caller` is authenticated, else its error; either way as gRPC's status.
template <typename Caller, typename Body>
grpc::Status Serve(const absl::StatusOr<Caller>& caller, Body&& body) {
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  return ToGrpcStatus(std::forward<Body>(body)(*caller));
}

// Moves every item of `items` into `out`, or returns its error.
template <typename T>
absl::Status MoveInto(absl::StatusOr<std::vector<T>> items,
                      google::protobuf::RepeatedPtrField<T>* out) {
  if (!items.ok()) return items.status();
  for (T& item : *items) *out->Add() = std::move(item);
  return absl::OkStatus();
}

// Moves `item` into `*out`, or returns its error.
template <typename T>
absl::Status MoveInto(absl::StatusOr<T> item, T* out) {
  if (!item.ok()) return item.status();
  *out = std::move(*item);
  return absl::OkStatus();
}

}  // namespace devtime::collector
