// The pure parts of regressions: attribution between two runs, severity, and the one-line
// summary.
#include "services/collector/analyze/attribution.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "services/collector/notify/payloads.h"
#include "services/collector/store/regression_codec.h"

namespace devtime::analyze {
namespace {

using ::testing::HasSubstr;

// The TorchNeuron guide's RMSNorm: fused 403.3 us per step, naive 2,354.9 us in five ops.
RunFigures Fused() {
  RunFigures f;
  f.total_us = 403.3;
  f.op_us = {{"aten::rms_norm", 403.3}};
  f.op_calls = {{"aten::rms_norm", 1}};
  f.layer_us = {{"device_execution", 403.3}, {"framework_dispatch", 19.0}};
  f.environment = {{"neuronx-cc", "2.21.18"}, {"torch", "2.5.1"}, {"flags", "-O2"}};
  return f;
}

RunFigures Naive() {
  RunFigures f;
  f.total_us = 2354.9;
  f.op_us = {
      {"aten::mul", 1164.5}, {"aten::add", 434.6}, {"aten::rsqrt", 415.0}, {"aten::mean", 340.8}};
  f.op_calls = {{"aten::mul", 2}, {"aten::add", 1}, {"aten::rsqrt", 1}, {"aten::mean", 1}};
  f.layer_us = {{"device_execution", 2354.9}, {"framework_dispatch", 85.0}};
  f.environment = {{"neuronx-cc", "2.22.4"}, {"torch", "2.5.1"}, {"new-key", "x"}};
  return f;
}

TEST(Attribution, LostFusionPutsMulOnTopWithItsCallsAndTheFusedOpGone) {
  Attribution a = Attribute(Fused(), Naive());
  ASSERT_EQ(a.ops.size(), 5u);
  EXPECT_EQ(a.ops[0].op, "aten::mul");
  EXPECT_DOUBLE_EQ(a.ops[0].before_us, 0.0);
  EXPECT_DOUBLE_EQ(a.ops[0].delta_us, 1164.5);
  EXPECT_DOUBLE_EQ(a.ops[0].after_calls, 2.0);
  EXPECT_NEAR(a.ops[0].share, 1164.5 / (2354.9 - 403.3), 1e-12);
  EXPECT_EQ(a.ops[1].op, "aten::add");
  // The fused op disappeared: a negative delta, ranked by its size (between rsqrt and mean).
  EXPECT_EQ(a.ops[3].op, "aten::rms_norm");
  EXPECT_DOUBLE_EQ(a.ops[3].delta_us, -403.3);
  EXPECT_DOUBLE_EQ(a.ops[3].after_calls, 0.0);
  EXPECT_EQ(a.ops[4].op, "aten::mean");
}

TEST(Attribution, NamesTheLayerThatGrewMost) {
  Attribution a = Attribute(Fused(), Naive());
  EXPECT_EQ(a.dominant_layer, "device_execution");
  ASSERT_EQ(a.layers.size(), 2u);
  EXPECT_NEAR(a.layers[0].delta_us, 2354.9 - 403.3, 1e-9);
  // Nothing grew: no dominant layer.
  EXPECT_EQ(Attribute(Naive(), Fused()).dominant_layer, "");
}

TEST(Attribution, ListsChangedAddedAndRemovedEnvironmentKeysSorted) {
  Attribution a = Attribute(Fused(), Naive());
  ASSERT_EQ(a.environment.size(), 3u);
  EXPECT_EQ(a.environment[0].key, "flags");
  EXPECT_EQ(a.environment[0].after, "");
  EXPECT_EQ(a.environment[1].key, "neuronx-cc");
  EXPECT_EQ(a.environment[1].before, "2.21.18");
  EXPECT_EQ(a.environment[1].after, "2.22.4");
  EXPECT_EQ(a.environment[2].key, "new-key");
  EXPECT_EQ(a.environment[2].before, "");
}

TEST(Attribution, KeepsAtMostTenOperatorsAndSkipsUnchangedOnes) {
  RunFigures good, bad;
  for (int i = 0; i < 30; ++i) {
    std::string op = "op" + std::to_string(i);
    good.op_us[op] = 10.0;
    bad.op_us[op] = 10.0 + i;  // op0 unchanged
    good.op_calls[op] = bad.op_calls[op] = 1;
  }
  Attribution a = Attribute(good, bad);
  ASSERT_EQ(a.ops.size(), static_cast<size_t>(kMaxAttributedOps));
  EXPECT_EQ(a.ops[0].op, "op29");
  for (const auto& op : a.ops) EXPECT_NE(op.op, "op0");
}

TEST(Severity, FollowsTheRelativeChange) {
  EXPECT_EQ(SeverityFor(4.84), "critical");
  EXPECT_EQ(SeverityFor(0.25), "critical");
  EXPECT_EQ(SeverityFor(0.2), "warning");
  EXPECT_EQ(SeverityFor(0.05), "warning");
  EXPECT_EQ(SeverityFor(0.02), "info");
}

TEST(Summary, SaysWhatHowMuchWhichOpsAndWhatChanged) {
  v1::Regression r;
  r.set_model("rmsnorm");
  r.set_workload("fused");
  r.set_instance_type("trn1.2xlarge");
  r.set_metric("device_us_per_step");
  r.set_before(403.3);
  r.set_after(2354.9);
  r.set_relative_change(2354.9 / 403.3 - 1);
  *r.mutable_attribution() = store::ToProto(Attribute(Fused(), Naive()));
  EXPECT_THAT(collector::notify::Summary(r),
              HasSubstr("rmsnorm/fused on trn1.2xlarge: device time per step "
                        "+483.9 % (403.3 µs -> 2.355 ms)"));
  EXPECT_THAT(collector::notify::Summary(r),
              HasSubstr("top: aten::mul +1.165 ms/step (new), aten::add"));
  EXPECT_THAT(collector::notify::Summary(r),
              HasSubstr("changed: flags -O2 -> (absent); neuronx-cc 2.21.18 -> "
                        "2.22.4; new-key (absent) -> x"));
}

}  // namespace
}  // namespace devtime::analyze
