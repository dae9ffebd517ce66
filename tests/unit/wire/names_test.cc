// The stored and displayed names of the wire enums: PostgreSQL rows and dashboards hold these
// words, so a change to any of them is a schema change.
#include "proto/wire/names.h"

#include "gtest/gtest.h"

namespace devtime::wire {
namespace {

TEST(EnumNames, AreTheProtoNamesWithoutPrefixLowercased) {
  EXPECT_EQ(DeviceKindName(v1::DEVICE_KIND_NEURON), "neuron");
  EXPECT_EQ(RunStatusName(v1::RUN_STATUS_INVALID), "invalid");
  EXPECT_EQ(SlotOutcomeName(v1::SLOT_OUTCOME_SKIPPED_STILL_RUNNING), "skipped_still_running");
  EXPECT_EQ(SlotOutcomeName(v1::SLOT_OUTCOME_MISSED_AGENT_DOWN), "missed_agent_down");
  EXPECT_EQ(RegressionStateName(v1::REGRESSION_STATE_ACKNOWLEDGED), "acknowledged");
  EXPECT_EQ(ResolutionName(v1::RESOLUTION_ACCEPTED_BASELINE), "accepted_baseline");
  EXPECT_EQ(LayerName(v1::LAYER_RUNTIME_SCHEDULING), "runtime_scheduling");
}

TEST(EnumNames, UnspecifiedAndUnknownValues) {
  EXPECT_EQ(DeviceKindName(v1::DEVICE_KIND_UNSPECIFIED), "unspecified");
  EXPECT_EQ(DeviceKindName(static_cast<v1::DeviceKind>(99)), "unspecified");
  EXPECT_EQ(LayerName(v1::LAYER_UNSPECIFIED), "unspecified");
  EXPECT_EQ(ResolutionName(v1::RESOLUTION_UNSPECIFIED), "");  // the column's default
}

TEST(EnumNames, RoundTripEveryValue) {
  for (auto kind : {v1::DEVICE_KIND_CPU, v1::DEVICE_KIND_CUDA, v1::DEVICE_KIND_NEURON}) {
    EXPECT_EQ(DeviceKindFromName(DeviceKindName(kind)), kind);
  }
  for (int i = 1; i <= v1::SlotOutcome_MAX; ++i) {
    auto outcome = static_cast<v1::SlotOutcome>(i);
    EXPECT_EQ(SlotOutcomeFromName(SlotOutcomeName(outcome)), outcome);
  }
  for (int i = 1; i <= v1::RegressionState_MAX; ++i) {
    auto state = static_cast<v1::RegressionState>(i);
    EXPECT_EQ(RegressionStateFromName(RegressionStateName(state)), state);
  }
  EXPECT_EQ(ResolutionFromName("fixed"), v1::RESOLUTION_FIXED);
  EXPECT_EQ(RunStatusFromName("ok"), v1::RUN_STATUS_OK);
}

TEST(EnumNames, UnknownNamesAreUnspecified) {
  EXPECT_EQ(DeviceKindFromName("tpu"), v1::DEVICE_KIND_UNSPECIFIED);
  EXPECT_EQ(RegressionStateFromName("unspecified"), v1::REGRESSION_STATE_UNSPECIFIED);
  EXPECT_EQ(RegressionStateFromName("OPEN"), v1::REGRESSION_STATE_UNSPECIFIED);
  EXPECT_EQ(ResolutionFromName(""), v1::RESOLUTION_UNSPECIFIED);
}

}  // namespace
}  // namespace devtime::wire
