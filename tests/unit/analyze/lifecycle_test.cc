// Which regression lifecycle transitions are allowed, and which notification each queues.
#include "services/collector/analyze/lifecycle.h"

#include <gtest/gtest.h>

#include "proto/wire/names.h"

namespace devtime::analyze {
namespace {

TEST(Lifecycle, AllowsTheDocumentedTransitionsOnly) {
  using S = v1::RegressionState;
  const auto none = v1::RESOLUTION_UNSPECIFIED;
  const auto fixed = v1::RESOLUTION_FIXED;
  EXPECT_TRUE(CheckTransition(S::REGRESSION_STATE_SUSPECTED, S::REGRESSION_STATE_OPEN, none).ok());
  EXPECT_TRUE(
      CheckTransition(S::REGRESSION_STATE_SUSPECTED, S::REGRESSION_STATE_INVALID, none).ok());
  EXPECT_TRUE(
      CheckTransition(S::REGRESSION_STATE_OPEN, S::REGRESSION_STATE_ACKNOWLEDGED, none).ok());
  EXPECT_TRUE(
      CheckTransition(S::REGRESSION_STATE_ACKNOWLEDGED, S::REGRESSION_STATE_RESOLVED, fixed).ok());
  // Final states stay final; nothing goes back to open.
  auto status =
      CheckTransition(S::REGRESSION_STATE_RESOLVED, S::REGRESSION_STATE_ACKNOWLEDGED, none);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "the regression is resolved: it cannot become acknowledged");
  EXPECT_FALSE(CheckTransition(S::REGRESSION_STATE_INVALID, S::REGRESSION_STATE_OPEN, none).ok());
  EXPECT_FALSE(
      CheckTransition(S::REGRESSION_STATE_ACKNOWLEDGED, S::REGRESSION_STATE_OPEN, none).ok());
  // A resolution goes with resolved, and only with it.
  EXPECT_EQ(CheckTransition(S::REGRESSION_STATE_OPEN, S::REGRESSION_STATE_RESOLVED, none).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckTransition(S::REGRESSION_STATE_OPEN, S::REGRESSION_STATE_INVALID, fixed).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(wire::IsFiring(S::REGRESSION_STATE_ACKNOWLEDGED));
  EXPECT_FALSE(wire::IsFiring(S::REGRESSION_STATE_SUSPECTED));
}

TEST(Lifecycle, QueuesANotificationWhenFiringStartsOrEnds) {
  using S = v1::RegressionState;
  EXPECT_EQ(EventFor(S::REGRESSION_STATE_SUSPECTED, S::REGRESSION_STATE_OPEN),
            NotificationEvent::kOpened);
  EXPECT_EQ(EventFor(S::REGRESSION_STATE_OPEN, S::REGRESSION_STATE_ACKNOWLEDGED), std::nullopt);
  EXPECT_EQ(EventFor(S::REGRESSION_STATE_ACKNOWLEDGED, S::REGRESSION_STATE_RESOLVED),
            NotificationEvent::kResolved);
  EXPECT_EQ(EventFor(S::REGRESSION_STATE_OPEN, S::REGRESSION_STATE_INVALID),
            NotificationEvent::kInvalidated);
  // A suspected regression never fired: refuting it notifies nobody.
  EXPECT_EQ(EventFor(S::REGRESSION_STATE_SUSPECTED, S::REGRESSION_STATE_INVALID), std::nullopt);
  EXPECT_EQ(EventName(NotificationEvent::kInvalidated), "invalidated");
}

}  // namespace
}  // namespace devtime::analyze
