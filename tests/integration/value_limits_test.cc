// The value bounds of proto/wire/validation.h, end to end through gRPC and PostgreSQL: a run
// the store could not hold, or whose figures would not be finite, is refused with
// INVALID_ARGUMENT naming the field (never INTERNAL, which an agent would retry) and nothing
// of it is stored; a run at every bound is stored, and what the collector computes from it
// is finite.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "devtime/v1/collector.grpc.pb.h"
#include "proto/wire/channel.h"
#include "proto/wire/validation.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/sample_runs.h"

namespace devtime {
namespace {

using devtime::testing::NaiveRmsNormRun;
using devtime::testing::TestRunId;
using ::testing::StartsWith;

class ValueLimitsTest : public devtime::testing::CollectorFixture {
 protected:
  grpc::Status Upload(const v1::RunSummary& run) {
    v1::UploadRunRequest request;
    *request.mutable_run() = run;
    v1::UploadRunResponse response;
    auto context = wire::MakeContext(std::chrono::seconds(30));
    return stub_->UploadRun(context.get(), request, &response);
  }
  long long StoredRows() const {
    return db_.Count("runs") + db_.Count("op_stats") + db_.Count("run_steps") +
           db_.Count("series_points");
  }

  std::unique_ptr<v1::Collector::Stub> stub_ = AdminStub();
};

TEST_F(ValueLimitsTest, AStepBeyondAPostgresIntegerIsRefusedNamingTheFieldAndNothingIsStored) {
  auto run = NaiveRmsNormRun(TestRunId(1));
  run.mutable_steps(0)->set_step(3'000'000'000u);
  grpc::Status status = Upload(run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << wire::Describe(status);
  EXPECT_THAT(status.error_message(), StartsWith("run.steps[0].step: must be <= 2147483647"));
  EXPECT_EQ(StoredRows(), 0);
}

TEST_F(ValueLimitsTest, EveryValueTheStoreCouldNotHoldIsRefusedNamingItsField) {
  struct Poison {
    std::string field;
    std::function<void(v1::RunSummary&)> change;
  };
  const std::vector<Poison> poisons = {
      {"run.started_at",
       [](v1::RunSummary& run) {  // the year 11476
         run.mutable_started_at()->set_seconds(300'000'000'000);
         run.mutable_finished_at()->set_seconds(300'000'000'060);
       }},
      {"run.finished_at",
       [](v1::RunSummary& run) {
         run.mutable_finished_at()->set_seconds(std::numeric_limits<int64_t>::max());
       }},
      {"run.ops[0].calls", [](v1::RunSummary& run) { run.mutable_ops(0)->set_calls(UINT64_MAX); }},
      {"run.ops[0].calls",
       [](v1::RunSummary& run) { run.mutable_ops(0)->set_calls(uint64_t{1} << 63); }},
      {"run.ops[0].self_device_us",
       [](v1::RunSummary& run) {
         for (int i : {0, 1}) {
           run.mutable_ops(i)->set_self_device_us(1.7e308);
           run.mutable_ops(i)->set_total_device_us(1.7e308);
         }
       }},
      {"run.ops[0].total_cpu_us",
       [](v1::RunSummary& run) {
         run.mutable_ops(0)->set_total_cpu_us(run.ops(0).self_cpu_us() / 2);
       }},
      {"run.identity.workload",
       [](v1::RunSummary& run) { run.mutable_identity()->set_workload("naive\u202egnp.exe"); }},
      {"run.capture.profiler",  // jsonb holds no NUL
       [](v1::RunSummary& run) {
         run.mutable_capture()->set_profiler(std::string("torch\0profiler", 14));
       }},
      {"run.capture.active_steps",
       [](v1::RunSummary& run) { run.mutable_capture()->set_active_steps(UINT32_MAX); }},
  };
  int n = 10;
  for (const Poison& poison : poisons) {
    SCOPED_TRACE(poison.field);
    auto run = NaiveRmsNormRun(TestRunId(++n));
    poison.change(run);
    grpc::Status status = Upload(run);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << wire::Describe(status);
    EXPECT_THAT(status.error_message(), StartsWith(poison.field + ":"));
  }
  EXPECT_EQ(StoredRows(), 0);
}

TEST_F(ValueLimitsTest, ARunAtEveryBoundIsStoredAndItsFiguresAreFinite) {
  auto run = NaiveRmsNormRun(TestRunId(2));
  run.mutable_steps(0)->set_step(wire::kMaxStepNumber);
  run.mutable_capture()->set_active_steps(wire::kMaxStepNumber);
  run.mutable_finished_at()->set_seconds(wire::kMaxTimeSeconds);
  run.mutable_finished_at()->set_nanos(999'999'999);
  for (auto& op : *run.mutable_ops()) {
    op.set_calls(wire::kMaxCount);
    op.set_self_device_us(wire::kMaxDurationUs);
    op.set_total_device_us(wire::kMaxDurationUs);
    for (auto& sample : *op.mutable_step_self_device_us()) sample = wire::kMaxDurationUs;
  }
  for (auto& step : *run.mutable_steps()) step.set_device_us(wire::kMaxDurationUs);
  grpc::Status status = Upload(run);
  ASSERT_TRUE(status.ok()) << wire::Describe(status);

  EXPECT_EQ(db_.Count("runs"), 1);
  EXPECT_EQ(db_.Query("SELECT max(step) FROM run_steps"), std::to_string(wire::kMaxStepNumber));
  EXPECT_EQ(db_.Query("SELECT min(calls) FROM op_stats"), std::to_string(wire::kMaxCount));
  EXPECT_EQ(db_.Query("SELECT count(*) FROM series_points WHERE value = 'Infinity'::float8"
                      " OR noise = 'Infinity'::float8 OR value = 'NaN'::float8"),
            "0");
  EXPECT_EQ(db_.Query("SELECT count(*) FROM runs WHERE device_us_per_step = 'Infinity'::float8"
                      " OR total_device_us = 'Infinity'::float8"),
            "0");
  EXPECT_EQ(db_.Count("series_points"), run.ops_size() + 1);
}

}  // namespace
}  // namespace devtime
