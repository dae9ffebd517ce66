// proto/wire/change.h: the one definition of a change and the one way times are written.
#include "proto/wire/change.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace devtime::wire {
namespace {

// Each case: µs, as ScaledTime writes it.
void ExpectScaled(const std::vector<std::pair<double, std::string>>& cases) {
  for (const auto& [us, text] : cases) EXPECT_EQ(ScaledTime(us), text) << us;
}

TEST(ScaledTime, KeepsMicrosecondsBelowOneMillisecond) {
  ExpectScaled({{0.5, "0.5 µs"}, {0, "0.0 µs"}, {403.3, "403.3 µs"}, {999.9, "999.9 µs"}});
}

TEST(ScaledTime, SwitchesUnitWhereRoundingWouldReachTheNextOne) {
  ExpectScaled({{999.96, "1.000 ms"},  // not "1000.0 µs"
                {2354.9, "2.355 ms"},
                {23549, "23.55 ms"},
                {235490, "235.5 ms"},
                {999940, "999.9 ms"},
                {999960, "1.000 s"}});
}

TEST(ScaledTime, WritesACpuStepOfASecondInSecondsWithFourDigits) {
  ExpectScaled({{1016805.6, "1.017 s"}, {125e6, "125.0 s"}});
}

TEST(ScaledTime, NegativeTimesKeepTheirSignAndUnit) {
  ExpectScaled({{-0.5, "-0.5 µs"}, {-1016805.6, "-1.017 s"}});
  EXPECT_EQ(SignedTime(-403.3), "-403.3 µs");
  EXPECT_EQ(SignedTime(1164.5), "+1.165 ms");
  EXPECT_EQ(SignedTime(0), "0.0 µs");
  EXPECT_EQ(ScaledTime(2354.9, "us"), "2.355 ms");
  EXPECT_EQ(ScaledTime(12.5, "us"), "12.5 us");
}

TEST(Change, IsTheCandidateOverTheBaselineMinusOne) {
  const Change c = ChangeOf(403.3, 2354.9);
  EXPECT_TRUE(c.defined);
  EXPECT_DOUBLE_EQ(c.delta_us, 2354.9 - 403.3);
  EXPECT_DOUBLE_EQ(c.fraction, 2354.9 / 403.3 - 1);
  EXPECT_EQ(FormatChange(c), "+483.9 %");
  EXPECT_EQ(FormatChange(ChangeOf(100, 97)), "-3.0 %");
  EXPECT_EQ(FormatChange(ChangeOf(100, 100)), "+0.0 %");
}

TEST(Change, FromNoTimeAtAllIsUndefined) {
  const Change c = ChangeOf(0, 12);
  EXPECT_FALSE(c.defined);
  EXPECT_EQ(c.fraction, 0);
  EXPECT_EQ(c.delta_us, 12);
  EXPECT_EQ(FormatChange(c), "-");
  EXPECT_EQ(FormatChange(c, "new"), "new");
}

TEST(TimePerStep, IsTheMeanOfTheStepsElseTheOperatorsOverTheActiveSteps) {
  v1::RunSummary run;
  run.add_ops()->set_self_device_us(900);
  run.add_ops()->set_self_device_us(300);
  EXPECT_EQ(TimePerStep(run), 1200);  // no steps, no capture: one step
  run.mutable_capture()->set_active_steps(4);
  EXPECT_EQ(TimePerStep(run), 300);
  run.add_steps()->set_device_us(410);  // one step is enough: its time, not the operators'
  EXPECT_EQ(TimePerStep(run), 410);
  run.add_steps()->set_device_us(390);
  EXPECT_EQ(TimePerStep(run), 400);
}

TEST(TimePerStep, CountsSelfCpuTimeForACpuOnlyRun) {
  v1::RunSummary run;
  run.mutable_identity()->set_device_kind(v1::DEVICE_KIND_CPU);
  auto* step = run.add_steps();
  step->set_cpu_us(1016805.6);
  step->set_device_us(0);
  EXPECT_EQ(TimePerStep(run), 1016805.6);
}

// Issue 22: a run of more steps than the contract's limit arrives as buckets, each the mean
// per step over k contiguous steps (StepTotal.steps = k).
v1::RunSummary CpuRun(const std::vector<std::pair<double, uint32_t>>& steps) {
  v1::RunSummary run;
  run.mutable_identity()->set_device_kind(v1::DEVICE_KIND_CPU);
  uint32_t number = 0;
  for (const auto& [us, covers] : steps) {
    auto* step = run.add_steps();
    step->set_step(number);
    step->set_cpu_us(us);
    step->set_steps(covers);
    number += covers == 0 ? 1 : covers;
  }
  return run;
}

TEST(TimePerStep, WeighsEachBucketByTheStepsItCovers) {
  // Steps 10, 20, 30 (a bucket of 3, mean 20) then 50 alone: 110 µs over 4 steps.
  EXPECT_DOUBLE_EQ(TimePerStep(CpuRun({{20, 3}, {50, 1}})), 27.5);
  EXPECT_DOUBLE_EQ(StepsCovered(CpuRun({{20, 3}, {50, 1}})), 4);
  EXPECT_DOUBLE_EQ(TimePerStep(CpuRun({{20, 0}, {50, 0}})), 35);  // older agents: one each
}

TEST(StepSampleOf, IsThePlainSampleWhenNothingIsBucketed) {
  const StepSample s = StepSampleOf(CpuRun({{1, 0}, {2, 0}, {3, 0}, {6, 0}}));
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt((4 + 1 + 0 + 9) / 3.0));
  EXPECT_DOUBLE_EQ(s.steps, 4);
  EXPECT_EQ(s.entries, 4);
}

TEST(StepSampleOf, ABucketOfKStepsWeighsK) {
  // Buckets of 4 steps whose means are 10 and 14: one step's variance is estimated as
  // (4 * 2^2 + 4 * 2^2) / (2 - 1) = 32 (a mean of 4 steps varies as sigma^2 / 4 = 8).
  const StepSample s = StepSampleOf(CpuRun({{10, 4}, {14, 4}}));
  EXPECT_DOUBLE_EQ(s.mean, 12);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(32.0));
  EXPECT_DOUBLE_EQ(s.steps, 8);
  EXPECT_EQ(s.entries, 2);
}

}  // namespace
}  // namespace devtime::wire
