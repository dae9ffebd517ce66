#include <gtest/gtest.h>

#include <chrono>

#include "agents/daemon/uploader.h"

namespace devtime::agent {
namespace {

using std::chrono::milliseconds;
using Clock = RetrySchedule::Clock;

RetryPolicy Policy() {
  RetryPolicy policy;
  policy.first_backoff = milliseconds(1'000);
  policy.max_backoff = milliseconds(8'000);
  policy.max_server_error_backoff = milliseconds(60'000);
  policy.set_aside_after = 5;
  return policy;
}

const Clock::time_point kStart = Clock::time_point() + std::chrono::hours(1);

TEST(RetrySchedule, ARunNeverTriedIsDue) {
  RetrySchedule retries(Policy(), 1);
  EXPECT_TRUE(retries.Due("a", kStart));
  EXPECT_FALSE(retries.NextDue());
}

TEST(RetrySchedule, AFailedRunWaitsItsBackoffWhileTheOthersStayDue) {
  RetrySchedule retries(Policy(), 1);
  EXPECT_FALSE(retries.Failed("a", Delivery::kServerError, kStart));
  // Full jitter: somewhere in the upper half of the first backoff.
  EXPECT_FALSE(retries.Due("a", kStart + milliseconds(499)));
  EXPECT_TRUE(retries.Due("a", kStart + milliseconds(1'000)));
  EXPECT_TRUE(retries.Due("b", kStart));
  ASSERT_TRUE(retries.NextDue());
  EXPECT_GE(*retries.NextDue(), kStart + milliseconds(500));
  EXPECT_LE(*retries.NextDue(), kStart + milliseconds(1'000));
}

TEST(RetrySchedule, BackoffDoublesUpToTheCapOfItsKindOfFailure) {
  RetryPolicy policy = Policy();
  policy.set_aside_after = 1'000;
  RetrySchedule retries(policy, 7);
  const Clock::time_point now = kStart;
  for (int failure = 1; failure <= 30; ++failure) retries.Failed("down", Delivery::kRetry, now);
  // A collector that is down: at most max_backoff (8 s) between tries, however long.
  EXPECT_FALSE(retries.Due("down", now + milliseconds(3'999)));
  EXPECT_TRUE(retries.Due("down", now + milliseconds(8'000)));
  for (int failure = 1; failure <= 4; ++failure) retries.Failed("bug", Delivery::kServerError, now);
  // The 4th failure waits 8 s (1, 2, 4, 8); server errors may wait longer, up to 60 s.
  EXPECT_FALSE(retries.Due("bug", now + milliseconds(3'999)));
  EXPECT_TRUE(retries.Due("bug", now + milliseconds(8'000)));
  retries.Failed("bug", Delivery::kServerError, now);  // the 5th: 16 s
  EXPECT_FALSE(retries.Due("bug", now + milliseconds(7'999)));
  EXPECT_TRUE(retries.Due("bug", now + milliseconds(16'000)));
  for (int failure = 6; failure <= 30; ++failure)
    retries.Failed("bug", Delivery::kServerError, now);
  EXPECT_FALSE(retries.Due("bug", now + milliseconds(29'999)));
  EXPECT_TRUE(retries.Due("bug", now + milliseconds(60'000)));
}

TEST(RetrySchedule, SetsARunAsideAtTheBoundOfServerErrorsOnly) {
  RetrySchedule retries(Policy(), 3);
  for (int failure = 1; failure < 5; ++failure) {
    EXPECT_FALSE(retries.Failed("bug", Delivery::kServerError, kStart)) << failure;
  }
  EXPECT_TRUE(retries.Failed("bug", Delivery::kServerError, kStart));
  EXPECT_EQ(retries.ServerErrors("bug"), 5);
  // Passing and agent-wide failures (collector down, token being fixed) never count: a run
  // waiting for them loses nothing by waiting.
  for (int failure = 1; failure <= 1'000; ++failure) {
    EXPECT_FALSE(retries.Failed("down", Delivery::kRetry, kStart));
    EXPECT_FALSE(retries.Failed("token", Delivery::kBlocked, kStart));
  }
  EXPECT_EQ(retries.ServerErrors("down"), 0);
}

TEST(RetrySchedule, ForgetsADeliveredRun) {
  RetrySchedule retries(Policy(), 1);
  retries.Failed("a", Delivery::kServerError, kStart);
  retries.Forget("a");
  EXPECT_TRUE(retries.Due("a", kStart));
  EXPECT_EQ(retries.ServerErrors("a"), 0);
  EXPECT_FALSE(retries.NextDue());
}

}  // namespace
}  // namespace devtime::agent
