#include "agents/daemon/delivery_errors.h"

#include <gtest/gtest.h>

#include <map>

#include "grpcpp/support/status.h"

namespace devtime::agent {
namespace {

using absl::StatusCode;

TEST(DeliveryOf, OkIsDelivered) { EXPECT_EQ(DeliveryOf(StatusCode::kOk), Delivery::kDelivered); }

TEST(DeliveryOf, RetriesOnlyFailuresThatPassOnTheirOwn) {
  for (auto code : {StatusCode::kUnavailable, StatusCode::kDeadlineExceeded, StatusCode::kAborted,
                    StatusCode::kCancelled}) {
    EXPECT_EQ(DeliveryOf(code), Delivery::kRetry) << absl::StatusCodeToString(code);
  }
}

TEST(DeliveryOf, KeepsARunWhoseDeliveryWaitsForAFixOutsideIt) {
  for (auto code : {StatusCode::kUnauthenticated, StatusCode::kUnimplemented,
                    StatusCode::kFailedPrecondition}) {
    EXPECT_EQ(DeliveryOf(code), Delivery::kBlocked) << absl::StatusCodeToString(code);
  }
}

TEST(DeliveryOf, CallsAFailureOfTheCollectorOnTheRunAServerError) {
  for (auto code : {StatusCode::kInternal, StatusCode::kUnknown, StatusCode::kDataLoss,
                    StatusCode::kNotFound, StatusCode::kOutOfRange}) {
    EXPECT_EQ(DeliveryOf(code), Delivery::kServerError) << absl::StatusCodeToString(code);
  }
}

TEST(DeliveryOf, RefusesForGoodOnlyWhatTheCollectorSaysIsWrongWithTheRun) {
  for (auto code : {StatusCode::kInvalidArgument, StatusCode::kResourceExhausted,
                    StatusCode::kAlreadyExists, StatusCode::kPermissionDenied}) {
    EXPECT_EQ(DeliveryOf(code), Delivery::kRefusedForGood) << absl::StatusCodeToString(code);
  }
}

// The table above covers every canonical code once, so a code moved between classes shows.
TEST(DeliveryOf, ClassifiesEveryCanonicalCode) {
  const std::map<StatusCode, Delivery> expected = {
      {StatusCode::kOk, Delivery::kDelivered},
      {StatusCode::kCancelled, Delivery::kRetry},
      {StatusCode::kUnknown, Delivery::kServerError},
      {StatusCode::kInvalidArgument, Delivery::kRefusedForGood},
      {StatusCode::kDeadlineExceeded, Delivery::kRetry},
      {StatusCode::kNotFound, Delivery::kServerError},
      {StatusCode::kAlreadyExists, Delivery::kRefusedForGood},
      {StatusCode::kPermissionDenied, Delivery::kRefusedForGood},
      {StatusCode::kResourceExhausted, Delivery::kRefusedForGood},
      {StatusCode::kFailedPrecondition, Delivery::kBlocked},
      {StatusCode::kAborted, Delivery::kRetry},
      {StatusCode::kOutOfRange, Delivery::kServerError},
      {StatusCode::kUnimplemented, Delivery::kBlocked},
      {StatusCode::kInternal, Delivery::kServerError},
      {StatusCode::kUnavailable, Delivery::kRetry},
      {StatusCode::kDataLoss, Delivery::kServerError},
      {StatusCode::kUnauthenticated, Delivery::kBlocked},
  };
  for (int code = 0; code <= static_cast<int>(StatusCode::kUnauthenticated); ++code) {
    ASSERT_EQ(expected.count(static_cast<StatusCode>(code)), 1u) << code;
  }
  for (const auto& [code, delivery] : expected) {
    EXPECT_EQ(DeliveryOf(code), delivery) << absl::StatusCodeToString(code);
  }
}

TEST(DeliveryOf, ReadsGrpcCodesAsTheSameAbslCodes) {
  // The uploader casts grpc::StatusCode to absl::StatusCode; the numbering is shared.
  EXPECT_EQ(DeliveryOf(static_cast<StatusCode>(grpc::StatusCode::UNAVAILABLE)), Delivery::kRetry);
  EXPECT_EQ(DeliveryOf(static_cast<StatusCode>(grpc::StatusCode::UNAUTHENTICATED)),
            Delivery::kBlocked);
  EXPECT_EQ(DeliveryOf(static_cast<StatusCode>(grpc::StatusCode::INVALID_ARGUMENT)),
            Delivery::kRefusedForGood);
}

TEST(DeliveryOf, TakesACodeOutsideTheCanonicalSetForAServerError) {
  EXPECT_EQ(DeliveryOf(static_cast<StatusCode>(42)), Delivery::kServerError);
}

}  // namespace
}  // namespace devtime::agent
