#include "proto/wire/json.h"

#include <gtest/gtest.h>

#include "devtime/v1/run.pb.h"

namespace devtime::wire {
namespace {

TEST(ParseJson, ReadsSnakeCaseFieldsAndEnumNames) {
  v1::RunSummary run;
  auto status = ParseJson(
      R"({"identity": {"run_id": "x", "device_kind": "DEVICE_KIND_NEURON"},
          "ops": [{"name": "aten::mul", "calls": 3, "self_device_us": 1164.5}]})",
      "run.json", &run);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(run.identity().device_kind(), v1::DEVICE_KIND_NEURON);
  EXPECT_EQ(run.ops(0).calls(), 3u);
  EXPECT_DOUBLE_EQ(run.ops(0).self_device_us(), 1164.5);
}

TEST(ParseJson, RejectsUnknownFieldNamingFileAndField) {
  v1::RunSummary run;
  auto status = ParseJson(R"({"identity": {"run_idd": "x"}})", "night-3.json", &run);
  ASSERT_FALSE(status.ok());
  std::string message(status.message());
  EXPECT_NE(message.find("night-3.json"), std::string::npos) << message;
  EXPECT_NE(message.find("run_idd"), std::string::npos) << message;
}

TEST(ParseJson, RejectsUnknownEnumName) {
  v1::RunSummary run;
  auto status = ParseJson(R"({"identity": {"device_kind": "DEVICE_KIND_TPU"}})", "r.json", &run);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(std::string(status.message()).find("DEVICE_KIND_TPU"), std::string::npos)
      << status.message();
}

TEST(ParseJson, ARawProfilerTraceGivenAsARunSummarySaysHowToSummarizeIt) {
  const std::string hint =
      "trace.json is a profiler trace, not a RunSummary: run `devtime-agent summarize trace.json "
      "--format json > run.json` and upload that";
  for (const char* trace : {
           R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "aten::mm"}]})",
           R"(  [{"ph": "X", "name": "aten::mm", "ts": 1, "dur": 2}])",  // the legacy array
           R"({"deviceProperties": [], "traceEvents": []})",
       }) {
    v1::RunSummary run;
    auto status = ParseJson(trace, "trace.json", &run);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << trace;
    EXPECT_EQ(status.message(), hint) << trace;
  }
}

TEST(ParseJson, OtherMessagesKeepProtobufsWordsForAnArray) {
  v1::RunIdentity identity;
  auto status = ParseJson("[1]", "ids.json", &identity);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(std::string(status.message()).find("profiler trace"), std::string::npos) << status;
}

TEST(ToJson, RoundTripsThroughParseJson) {
  v1::RunSummary run;
  run.mutable_identity()->set_model("rmsnorm");
  (*run.mutable_environment())["neuronx-cc"] = "2.21";
  run.add_ops()->set_name("aten::add");
  v1::RunSummary back;
  ASSERT_TRUE(ParseJson(ToJson(run), "mem", &back).ok());
  EXPECT_EQ(back.SerializeAsString(), run.SerializeAsString());
  EXPECT_NE(ToJson(run).find("\"neuronx-cc\""), std::string::npos);
}

}  // namespace
}  // namespace devtime::wire
