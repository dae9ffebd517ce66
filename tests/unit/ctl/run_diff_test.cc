#include "services/ctl/run_diff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tests/support/sample_runs.h"

namespace devtime::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The fused RMSNorm of the TorchNeuron guide: one aten::rms_norm at 403.3 µs per step.
v1::RunSummary FusedRun() {
  auto run = devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(1), "fused");
  devtime::testing::FuseRmsNormOps(run);
  for (double f : {0.99, 1.0, 1.01}) run.mutable_ops(0)->add_step_self_device_us(403.3 * f);
  for (int i = 0; i < run.steps_size(); ++i) {
    run.mutable_steps(i)->set_device_us(403.3 * (0.99 + 0.01 * i));
  }
  (*run.mutable_environment())["neuronx-cc"] = "2.21.0";
  return run;
}

v1::RunSummary LostFusionRun() {
  auto run = devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(2), "fused");
  (*run.mutable_environment())["neuronx-cc"] = "2.22.4";
  return run;
}

TEST(DiffRuns, LostFusionShowsTheNaiveOpsAndTheCompilerChange) {
  RunDiff diff = DiffRuns(FusedRun(), LostFusionRun());
  EXPECT_EQ(diff.before_basis, "device");
  EXPECT_EQ(diff.after_basis, "device");
  EXPECT_NEAR(diff.before_us, 403.3, 0.01);
  EXPECT_NEAR(diff.after_us, 2354.9, 0.01);
  EXPECT_TRUE(diff.tested);
  EXPECT_LT(diff.p_value, 1e-6);
  ASSERT_FALSE(diff.ops.empty());
  EXPECT_EQ(diff.ops[0].name, "aten::mul");  // the largest change first
  EXPECT_EQ(diff.ops[0].kind, OpDelta::Kind::kAdded);
  EXPECT_NEAR(diff.ops[0].after_us, 1164.5, 0.01);
  EXPECT_DOUBLE_EQ(diff.ops[0].after_calls, 2);  // a lost fusion: more calls of small ops
  ASSERT_EQ(diff.environment.size(), 1u);
  EXPECT_EQ(diff.environment[0].key, "neuronx-cc");
  EXPECT_EQ(diff.environment[0].before, "2.21.0");
  EXPECT_EQ(diff.environment[0].after, "2.22.4");
  EXPECT_TRUE(IsRegression(diff, {}));

  std::string text = RenderDiff(diff);
  EXPECT_THAT(text, HasSubstr("device time per step: 403.3 µs -> 2.355 ms (+483.9 %)"));
  EXPECT_THAT(text, HasSubstr("aten::rms_norm"));
  EXPECT_THAT(text, HasSubstr("removed"));
  EXPECT_THAT(text, HasSubstr("neuronx-cc: 2.21.0 -> 2.22.4"));
}

TEST(DiffRuns, TheFixIsNoRegression) {
  RunDiff diff = DiffRuns(LostFusionRun(), FusedRun());
  EXPECT_LT(diff.relative_change, -0.8);
  EXPECT_FALSE(IsRegression(diff, {}));
}

TEST(IsRegression, NeedsBothTheMinimumChangeAndSignificance) {
  auto base = FusedRun();
  auto slightly = FusedRun();
  for (auto& step : *slightly.mutable_steps()) step.set_device_us(step.device_us() * 1.01);
  EXPECT_FALSE(IsRegression(DiffRuns(base, slightly), {}));  // 1 % < 2 %

  auto noisy = FusedRun();  // +5 % on average, but the steps scatter wildly
  double factors[] = {0.70, 1.05, 1.40};
  for (int i = 0; i < noisy.steps_size(); ++i)
    noisy.mutable_steps(i)->set_device_us(403.3 * factors[i]);
  RunDiff diff = DiffRuns(base, noisy);
  EXPECT_GT(diff.relative_change, 0.02);
  EXPECT_GT(diff.p_value, 0.01);
  EXPECT_FALSE(IsRegression(diff, {}));
  EXPECT_TRUE(IsRegression(diff, {.min_change = 0.02, .max_p = 0.9}));
}

// The naive RMSNorm profiled on a CPU, as the quickstart's nightly job does: its times are
// self CPU time (60 µs per step), not device time.
v1::RunSummary CpuRun() {
  auto run = devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(3));
  run.mutable_identity()->set_device_kind(v1::DEVICE_KIND_CPU);
  run.mutable_identity()->set_instance_type("");
  for (auto& op : *run.mutable_ops()) {  // a CPU run's per-step samples are self CPU time
    op.clear_step_self_device_us();
    for (int step = 0; step < 3; ++step) op.add_step_self_device_us(op.self_cpu_us() / 3);
  }
  return run;
}

TEST(DiffRuns, CpuTimeIsLabelledSelfCpuTimeNeverDeviceTime) {
  RunDiff cpu = DiffRuns(CpuRun(), CpuRun());
  EXPECT_EQ(TimeLabel(cpu), "self CPU time per step");
  EXPECT_THAT(RenderDiff(cpu), HasSubstr("self CPU time per step: 60.0 µs -> 60.0 µs"));

  // Across device kinds (only ever on purpose), each side says what its time is, and each
  // side's operators are its own kind of time: aten::mul 8 µs of self CPU per step against
  // 1,164.5 µs of device time.
  RunDiff crossed = DiffRuns(CpuRun(), FusedRun());
  EXPECT_EQ(crossed.before_basis, "self CPU");
  EXPECT_EQ(crossed.after_basis, "device");
  EXPECT_EQ(TimeLabel(crossed), "time per step (self CPU before, device after)");
  EXPECT_THAT(RenderDiff(crossed), Not(HasSubstr("device time per step")));
  for (const auto& op : DiffRuns(CpuRun(), LostFusionRun()).ops) {
    if (op.name == "aten::mul") {
      EXPECT_DOUBLE_EQ(op.before_us, 8.0);
      EXPECT_NEAR(op.after_us, 1164.5, 0.01);
    }
  }
}

TEST(IdentityDifferences, NameEveryKeyOfTheSeriesIdentityThatDiffers) {
  const v1::RunSummary trn1 = FusedRun(), cpu = CpuRun();
  EXPECT_TRUE(IdentityDifferences(trn1.identity(), LostFusionRun().identity()).empty());

  auto differences = IdentityDifferences(trn1.identity(), cpu.identity());
  ASSERT_EQ(differences.size(), 3u);  // workload fused vs naive, instance type, device
  EXPECT_EQ(differences[0].key, IdentityKey::kWorkload);
  EXPECT_EQ(differences[1].key, IdentityKey::kInstanceType);
  EXPECT_EQ(differences[2].key, IdentityKey::kDevice);
  EXPECT_EQ(DifferencesText(differences),
            "workload fused vs naive, instance-type trn1.2xlarge vs unknown, device neuron vs cpu");

  auto model = trn1;
  model.mutable_identity()->set_model("llama");
  EXPECT_EQ(DifferencesText(IdentityDifferences(trn1.identity(), model.identity())),
            "model rmsnorm vs llama");
}

TEST(SeriesText, NamesModelWorkloadInstanceTypeAndDevice) {
  EXPECT_EQ(SeriesText(FusedRun().identity()), "rmsnorm/fused trn1.2xlarge neuron");
  EXPECT_EQ(SeriesText(CpuRun().identity()), "rmsnorm/naive cpu");  // no instance type known
}

// Issue 22: a run of more steps than the wire contract holds arrives as buckets of k steps
// (StepTotal.steps = k, each the mean per step). The t-test over steps must weigh them, or a
// bucketed run checked against an unbucketed one pools a variance sigma^2 / k with sigma^2.
v1::RunSummary StepsRun(const std::vector<double>& steps, int per_bucket) {
  v1::RunSummary run = FusedRun();
  run.clear_steps();
  for (std::size_t i = 0; i < steps.size(); i += per_bucket) {
    double sum = 0;
    for (int k = 0; k < per_bucket; ++k) sum += steps[i + k];
    auto* step = run.add_steps();
    step->set_step(static_cast<uint32_t>(i));
    step->set_device_us(sum / per_bucket);
    if (per_bucket > 1) step->set_steps(static_cast<uint32_t>(per_bucket));
  }
  for (auto& op : *run.mutable_ops()) op.clear_step_self_device_us();
  return run;
}

TEST(DiffRuns, ABucketedRunIsTestedAsTheStepsItCovers) {
  std::mt19937 random(22);
  std::normal_distribution<double> before_step(1000, 20), after_step(1001, 20);
  std::vector<double> before(4'000), after(4'000);
  for (double& us : before) us = before_step(random);
  for (double& us : after) us = after_step(random);
  const RunDiff plain = DiffRuns(StepsRun(before, 1), StepsRun(after, 1));
  const RunDiff bucketed = DiffRuns(StepsRun(before, 1), StepsRun(after, 4));
  ASSERT_TRUE(plain.tested && bucketed.tested);
  EXPECT_NEAR(bucketed.after_us, plain.after_us, 1e-9);
  // The same steps, the same answer (up to the noise of estimating sigma from 1,000 buckets).
  EXPECT_GT(bucketed.p_value, plain.p_value / 1.5) << plain.p_value;
  EXPECT_LT(bucketed.p_value, plain.p_value * 1.5) << plain.p_value;
}

}  // namespace
}  // namespace devtime::ctl
