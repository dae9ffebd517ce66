#include "proto/wire/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "proto/wire/limits.h"
#include "tests/support/sample_runs.h"

namespace devtime::wire {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

v1::RunSummary Valid() { return devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(1)); }

// Expects `run` to be rejected with `code` and a message starting with `field`.
void ExpectRejected(const v1::RunSummary& run, absl::StatusCode code, const std::string& field) {
  auto status = ValidateRun(run);
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_THAT(std::string(status.message()), StartsWith(field + ":"));
}

TEST(ValidateRun, AcceptsCompleteRun) { EXPECT_TRUE(ValidateRun(Valid()).ok()); }

TEST(ValidateRun, RequiresIdentityFields) {
  struct Required {
    const char* field;
    void (*clear)(v1::RunIdentity&);
  };
  for (const Required& required : {
           Required{"run.identity.run_id", [](v1::RunIdentity& id) { id.clear_run_id(); }},
           Required{"run.identity.model", [](v1::RunIdentity& id) { id.clear_model(); }},
           Required{"run.identity.workload", [](v1::RunIdentity& id) { id.clear_workload(); }},
           Required{"run.identity.host", [](v1::RunIdentity& id) { id.clear_host(); }},
       }) {
    auto run = Valid();
    required.clear(*run.mutable_identity());
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, required.field);
  }
  auto run = Valid();
  run.clear_identity();
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.identity");
}

TEST(ValidateRun, RequiresCanonicalUuid) {
  for (const char* bad :
       {"42", "3F2C9A5E-0B1D-4C6E-9F00-12AB34CD56EF", "3f2c9a5e0b1d4c6e9f0012ab34cd56ef",
        "3f2c9a5e-0b1d-4c6e-9f00-12ab34cd56eg"}) {
    auto run = Valid();
    run.mutable_identity()->set_run_id(bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.identity.run_id");
  }
}

TEST(ValidateRun, RejectsNanInfiniteAndNegativeTimesNamingTheField) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {nan, inf, -1.0}) {
    auto run = Valid();
    run.mutable_ops(2)->set_self_device_us(bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.ops[2].self_device_us");
    run = Valid();
    run.mutable_ops(0)->set_step_self_device_us(1, bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.ops[0].step_self_device_us[1]");
    run = Valid();
    run.mutable_steps(1)->set_device_us(bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.steps[1].device_us");
    run = Valid();
    run.mutable_layers(0)->set_time_us(bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.layers[0].time_us");
  }
  auto run = Valid();
  run.mutable_ops(1)->set_total_cpu_us(nan);
  auto status = ValidateRun(run);
  EXPECT_THAT(std::string(status.message()), HasSubstr("got nan"));
}

TEST(ValidateRun, RejectsUnknownAndUnspecifiedEnumValues) {
  auto run = Valid();
  run.mutable_identity()->set_device_kind(static_cast<v1::DeviceKind>(42));
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.identity.device_kind");
  run = Valid();
  run.mutable_identity()->set_device_kind(v1::DEVICE_KIND_UNSPECIFIED);
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.identity.device_kind");
  run.set_status(v1::RUN_STATUS_FAILED);  // a job that failed before it profiled anything
  run.set_status_reason("exit code 1");
  EXPECT_TRUE(ValidateRun(run).ok());
  run = Valid();
  run.set_status(static_cast<v1::RunStatus>(9));
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.status");
  run = Valid();
  run.mutable_layers(0)->set_layer(static_cast<v1::Layer>(77));
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.layers[0].layer");
}

TEST(ValidateRun, InvalidRunNeedsAReasonAndMayHaveNoOps) {
  auto run = Valid();
  run.set_status(v1::RUN_STATUS_INVALID);
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.status_reason");
  run.set_status_reason("device time is empty: torch.neuron.synchronize() missing?");
  run.clear_ops();
  EXPECT_TRUE(ValidateRun(run).ok());
  run.set_status(v1::RUN_STATUS_OK);
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.ops");
}

TEST(ValidateRun, RejectsDuplicateOperatorsAndSteps) {
  auto run = Valid();
  run.mutable_ops(3)->set_name("aten::mul");
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.ops[3].name");
  run = Valid();
  run.mutable_steps(2)->set_step(3);
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.steps[2].step");
}

TEST(ValidateRun, RejectsZeroCallsAndMissingTimes) {
  auto run = Valid();
  run.mutable_ops(0)->set_calls(0);
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.ops[0].calls");
  run = Valid();
  run.clear_started_at();
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.started_at");
  run = Valid();
  run.mutable_finished_at()->set_seconds(run.started_at().seconds() - 1);
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.finished_at");
}

TEST(ValidateRun, EnforcesSizeLimitsWithResourceExhausted) {
  auto run = Valid();
  while (run.ops_size() <= static_cast<int>(wire::kMaxOps)) {
    run.add_ops()->set_name("op" + std::to_string(run.ops_size()));
  }
  ExpectRejected(run, absl::StatusCode::kResourceExhausted, "run.ops");
  run = Valid();
  for (std::size_t i = 0; i <= wire::kMaxEnvironmentEntries; ++i) {
    (*run.mutable_environment())["k" + std::to_string(i)] = "v";
  }
  ExpectRejected(run, absl::StatusCode::kResourceExhausted, "run.environment");
  run = Valid();
  run.mutable_ops(0)->set_name(std::string(wire::kMaxOpNameBytes + 1, 'x'));
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.ops[0].name");
}

TEST(ValidateRun, RejectsControlCharactersAndBrokenUtf8) {
  auto run = Valid();
  run.mutable_identity()->set_model("rms\nnorm");
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.identity.model");
  run = Valid();
  run.mutable_identity()->set_workload(std::string("naive\xff", 6));
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.identity.workload");
  run = Valid();
  run.mutable_identity()->set_workload("naïve-Σ");  // valid multi-byte UTF-8
  EXPECT_TRUE(ValidateRun(run).ok());
}

TEST(ValidateRun, ChecksArtifactHash) {
  auto run = Valid();
  run.mutable_artifacts(0)->set_sha256("ABC");
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.artifacts[0].sha256");
  run.mutable_artifacts(0)->set_sha256(std::string(64, 'a'));
  EXPECT_TRUE(ValidateRun(run).ok());
}

// A run with every field issue 12 added, as a Neuron run with a system trace has them.
v1::RunSummary WithDeviceFields() {
  auto run = Valid();
  run.set_device_total_us(2'355.0);
  run.set_unattributed_device_us(12.5);
  auto* w = run.add_warnings();
  w->set_kind("neff_without_ntff");
  w->set_message("model.neff has no NTFF with hash abc");
  auto* k = run.add_kernels();
  k->set_name("nc_exec_running");
  k->set_calls(12);
  k->set_device_us(2'342.5);
  auto* join = run.mutable_device_join();
  join->set_method(v1::DEVICE_JOIN_METHOD_ORDER);
  join->set_by_order_executions(12);
  join->set_by_order_us(2'342.5);
  return run;
}

TEST(ValidateRun, AcceptsTheDeviceFieldsAndTheirAbsence) {
  EXPECT_TRUE(ValidateRun(WithDeviceFields()).ok());
  auto run = WithDeviceFields();
  run.clear_device_join();  // CUDA and CPU runs have no join
  EXPECT_TRUE(ValidateRun(run).ok());
}

TEST(ValidateRun, RejectsBadDeviceTotalsNamingTheField) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {nan, inf, -1.0}) {
    auto run = WithDeviceFields();
    run.set_device_total_us(bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.device_total_us");
    run = WithDeviceFields();
    run.set_unattributed_device_us(bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.unattributed_device_us");
    run = WithDeviceFields();
    run.mutable_kernels(0)->set_device_us(bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.kernels[0].device_us");
    run = WithDeviceFields();
    run.mutable_device_join()->set_by_order_us(bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.device_join.by_order_us");
    run = WithDeviceFields();
    run.mutable_device_join()->set_by_id_us(bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.device_join.by_id_us");
    run = WithDeviceFields();
    run.mutable_device_join()->set_unjoined_us(bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.device_join.unjoined_us");
  }
}

TEST(ValidateRun, DeviceTotalIncludesTheUnattributedTime) {
  auto run = WithDeviceFields();
  run.set_device_total_us(10);
  run.set_unattributed_device_us(10);
  EXPECT_TRUE(ValidateRun(run).ok());
  run.set_unattributed_device_us(10.5);
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.device_total_us");
}

TEST(ValidateRun, WarningsNeedASnakeCaseKindAndAPrintableMessage) {
  for (std::string bad_kind :
       {std::string(""), std::string("NeffWithoutNtff"), std::string("neff-without-ntff"),
        std::string("1st_warning"), std::string(wire::kMaxWarningKindBytes + 1, 'a')}) {
    auto run = WithDeviceFields();
    run.mutable_warnings(0)->set_kind(bad_kind);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.warnings[0].kind");
  }
  auto run = WithDeviceFields();
  run.mutable_warnings(0)->set_kind(std::string(wire::kMaxWarningKindBytes, 'a'));
  EXPECT_TRUE(ValidateRun(run).ok());
  for (std::string bad_message : {std::string(""), std::string("two\nlines"),
                                  std::string(wire::kMaxWarningMessageBytes + 1, 'x')}) {
    run = WithDeviceFields();
    run.mutable_warnings(0)->set_message(bad_message);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.warnings[0].message");
  }
  run = WithDeviceFields();
  run.mutable_warnings(0)->set_message(std::string(wire::kMaxWarningMessageBytes, 'x'));
  EXPECT_TRUE(ValidateRun(run).ok());
}

TEST(ValidateRun, KernelsNeedANameAndAtLeastOneCall) {
  auto run = WithDeviceFields();
  run.mutable_kernels(0)->set_name("");
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.kernels[0].name");
  run = WithDeviceFields();
  run.mutable_kernels(0)->set_name(std::string(wire::kMaxKernelNameBytes + 1, 'k'));
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.kernels[0].name");
  run = WithDeviceFields();
  run.mutable_kernels(0)->set_calls(0);
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.kernels[0].calls");
}

TEST(ValidateRun, DeviceJoinNeedsAKnownMethod) {
  auto run = WithDeviceFields();
  run.mutable_device_join()->set_method(v1::DEVICE_JOIN_METHOD_UNSPECIFIED);
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.device_join.method");
  run.mutable_device_join()->set_method(static_cast<v1::DeviceJoinMethod>(99));
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.device_join.method");
  run.mutable_device_join()->set_method(v1::DEVICE_JOIN_METHOD_NONE);
  EXPECT_TRUE(ValidateRun(run).ok());
}

TEST(ValidateRun, LimitsWarningsAndKernelsWithResourceExhausted) {
  auto run = WithDeviceFields();
  while (run.warnings_size() <= static_cast<int>(wire::kMaxWarnings)) {
    *run.add_warnings() = run.warnings(0);
  }
  ExpectRejected(run, absl::StatusCode::kResourceExhausted, "run.warnings");
  run = WithDeviceFields();
  while (run.kernels_size() < static_cast<int>(wire::kMaxKernels)) {
    *run.add_kernels() = run.kernels(0);
  }
  EXPECT_TRUE(ValidateRun(run).ok());
  *run.add_kernels() = run.kernels(0);
  ExpectRejected(run, absl::StatusCode::kResourceExhausted, "run.kernels");
}

}  // namespace
}  // namespace devtime::wire
