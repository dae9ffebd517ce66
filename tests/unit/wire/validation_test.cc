#include "proto/wire/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

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

// One change that makes a valid run invalid, and the field its rejection must name.
struct BadValue {
  std::string field;
  std::function<void(v1::RunSummary&)> change;
};

// Expects each change, made to its own copy of `valid`, to be rejected naming its field.
void ExpectEachRejected(const v1::RunSummary& valid, const std::vector<BadValue>& bad_values,
                        absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  for (const BadValue& bad : bad_values) {
    SCOPED_TRACE(bad.field);
    auto run = valid;
    bad.change(run);
    ExpectRejected(run, code, bad.field);
  }
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
  ExpectEachRejected(
      Valid(), {{"run.ops[0].calls", [](v1::RunSummary& run) { run.mutable_ops(0)->set_calls(0); }},
                {"run.started_at", [](v1::RunSummary& run) { run.clear_started_at(); }},
                {"run.finished_at", [](v1::RunSummary& run) {
                   run.mutable_finished_at()->set_seconds(run.started_at().seconds() - 1);
                 }}});
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
  ExpectEachRejected(
      WithDeviceFields(),
      {{"run.kernels[0].name", [](v1::RunSummary& run) { run.mutable_kernels(0)->set_name(""); }},
       {"run.kernels[0].name",
        [](v1::RunSummary& run) {
          run.mutable_kernels(0)->set_name(std::string(wire::kMaxKernelNameBytes + 1, 'k'));
        }},
       {"run.kernels[0].calls",
        [](v1::RunSummary& run) { run.mutable_kernels(0)->set_calls(0); }}});
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

// ---- values the store could not hold, or that would corrupt what it computes (issue 11) ----

TEST(ValidateRun, StepNumbersAndStepCountsFitAPostgresInteger) {
  auto at_the_bound = Valid();
  at_the_bound.mutable_steps(0)->set_step(kMaxStepNumber);
  at_the_bound.mutable_capture()->set_active_steps(kMaxStepNumber);
  EXPECT_TRUE(ValidateRun(at_the_bound).ok()) << ValidateRun(at_the_bound);
  ExpectEachRejected(
      Valid(),
      {{"run.steps[0].step",
        [](v1::RunSummary& run) { run.mutable_steps(0)->set_step(3'000'000'000u); }},
       {"run.steps[1].step",
        [](v1::RunSummary& run) { run.mutable_steps(1)->set_step(kMaxStepNumber + 1u); }},
       {"run.capture.active_steps",
        [](v1::RunSummary& run) { run.mutable_capture()->set_active_steps(UINT32_MAX); }},
       {"run.capture.wait_steps",
        [](v1::RunSummary& run) { run.mutable_capture()->set_wait_steps(kMaxStepNumber + 1u); }},
       {"run.capture.warmup_steps",
        [](v1::RunSummary& run) { run.mutable_capture()->set_warmup_steps(UINT32_MAX); }}});
}

TEST(ValidateRun, TimesAreBetween1970AndTheYear10000) {
  auto at_the_bound = Valid();
  at_the_bound.mutable_finished_at()->set_seconds(kMaxTimeSeconds);
  at_the_bound.mutable_finished_at()->set_nanos(999'999'999);
  EXPECT_TRUE(ValidateRun(at_the_bound).ok()) << ValidateRun(at_the_bound);
  const int64_t year_11476 = 300'000'000'000;
  ExpectEachRejected(
      Valid(),
      {{"run.started_at",
        [&](v1::RunSummary& run) {
          run.mutable_started_at()->set_seconds(year_11476);
          run.mutable_finished_at()->set_seconds(year_11476 + 60);
        }},
       {"run.started_at", [](v1::RunSummary& run) { run.mutable_started_at()->set_seconds(0); }},
       {"run.started_at", [](v1::RunSummary& run) { run.mutable_started_at()->set_nanos(-1); }},
       {"run.finished_at",
        [](v1::RunSummary& run) {
          run.mutable_finished_at()->set_seconds(std::numeric_limits<int64_t>::max());
        }},
       {"run.finished_at",
        [](v1::RunSummary& run) { run.mutable_finished_at()->set_seconds(kMaxTimeSeconds + 1); }},
       {"run.finished_at",
        [](v1::RunSummary& run) { run.mutable_finished_at()->set_nanos(1'000'000'000); }}});
}

TEST(ValidateRun, CountsFitASigned64BitInteger) {
  auto at_the_bound = WithDeviceFields();
  at_the_bound.mutable_ops(0)->set_calls(kMaxCount);
  at_the_bound.mutable_kernels(0)->set_calls(kMaxCount);
  EXPECT_TRUE(ValidateRun(at_the_bound).ok()) << ValidateRun(at_the_bound);
  const uint64_t two_to_the_63 = uint64_t{1} << 63;
  ExpectEachRejected(
      WithDeviceFields(),
      {{"run.ops[0].calls", [](v1::RunSummary& run) { run.mutable_ops(0)->set_calls(UINT64_MAX); }},
       {"run.ops[1].calls",
        [&](v1::RunSummary& run) { run.mutable_ops(1)->set_calls(two_to_the_63); }},
       {"run.kernels[0].calls",
        [](v1::RunSummary& run) { run.mutable_kernels(0)->set_calls(UINT64_MAX); }},
       {"run.artifacts[0].size_bytes",
        [](v1::RunSummary& run) { run.mutable_artifacts(0)->set_size_bytes(UINT64_MAX); }},
       {"run.capture.events_dropped",
        [&](v1::RunSummary& run) { run.mutable_capture()->set_events_dropped(two_to_the_63); }},
       {"run.device_join.by_order_executions", [](v1::RunSummary& run) {
          run.mutable_device_join()->set_by_order_executions(UINT64_MAX);
        }}});
}

TEST(ValidateRun, DurationsAreBoundedSoThatNoSumIsInfinite) {
  auto at_the_bound = Valid();
  at_the_bound.mutable_ops(0)->set_self_device_us(kMaxDurationUs);
  at_the_bound.mutable_ops(0)->set_total_device_us(kMaxDurationUs);
  EXPECT_TRUE(ValidateRun(at_the_bound).ok()) << ValidateRun(at_the_bound);
  // Two operators of 1.7e308 each: finite alone, an infinite series point together.
  ExpectEachRejected(
      Valid(),
      {{"run.ops[0].self_device_us",
        [](v1::RunSummary& run) {
          for (int i : {0, 1}) {
            run.mutable_ops(i)->set_self_device_us(1.7e308);
            run.mutable_ops(i)->set_total_device_us(1.7e308);
          }
        }},
       {"run.ops[0].step_self_device_us[0]",
        [](v1::RunSummary& run) { run.mutable_ops(0)->set_step_self_device_us(0, 1.7e308); }},
       {"run.steps[0].device_us",
        [](v1::RunSummary& run) { run.mutable_steps(0)->set_device_us(kMaxDurationUs * 2); }},
       {"run.layers[0].time_us",
        [](v1::RunSummary& run) { run.mutable_layers(0)->set_time_us(1e300); }},
       {"run.device_total_us",
        [](v1::RunSummary& run) { run.set_device_total_us(std::numeric_limits<double>::max()); }}});
}

TEST(ValidateRun, TotalTimesIncludeTheSelfTimes) {
  auto at_the_bound = Valid();
  at_the_bound.mutable_ops(0)->set_total_cpu_us(at_the_bound.ops(0).self_cpu_us());
  at_the_bound.mutable_ops(0)->set_total_device_us(at_the_bound.ops(0).self_device_us());
  EXPECT_TRUE(ValidateRun(at_the_bound).ok()) << ValidateRun(at_the_bound);
  ExpectEachRejected(Valid(),
                     {{"run.ops[0].total_cpu_us",
                       [](v1::RunSummary& run) {
                         run.mutable_ops(0)->set_total_cpu_us(run.ops(0).self_cpu_us() - 0.5);
                       }},
                      {"run.ops[2].total_device_us", [](v1::RunSummary& run) {
                         run.mutable_ops(2)->set_total_device_us(run.ops(2).self_device_us() / 2);
                       }}});
}

TEST(ValidateRun, RejectsC1ControlsAndBidiFormattingInEveryTextField) {
  for (const char* bad : {"\u0080", "\u009f", "\u202a", "\u202e", "\u2066", "\u2069"}) {
    SCOPED_TRACE(bad);
    const std::string text = std::string("rms") + bad + "norm";
    ExpectEachRejected(
        WithDeviceFields(),
        {{"run.identity.model",
          [&](v1::RunSummary& run) { run.mutable_identity()->set_model(text); }},
         {"run.ops[1].name", [&](v1::RunSummary& run) { run.mutable_ops(1)->set_name(text); }},
         {"run.kernels[0].name",
          [&](v1::RunSummary& run) { run.mutable_kernels(0)->set_name(text); }},
         {"run.environment[\"torch\"]",
          [&](v1::RunSummary& run) { (*run.mutable_environment())["torch"] = text; }},
         {"run.capture.profiler",
          [&](v1::RunSummary& run) { run.mutable_capture()->set_profiler(text); }}});
  }
  auto run = Valid();
  run.mutable_ops(1)->set_name("aten::add\u00a0\u200f\u05d0");  // no-break space, RLM, alef
  EXPECT_TRUE(ValidateRun(run).ok()) << ValidateRun(run);
  run.mutable_ops(1)->set_name("aten::add\u202e");
  EXPECT_THAT(std::string(ValidateRun(run).message()), HasSubstr("U+202E at byte 9"));
}

TEST(ValidateRun, CaptureTextHoldsNoNulCharacter) {
  auto run = Valid();
  run.mutable_capture()->set_trace_format(std::string("kineto\0json", 11));
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.capture.trace_format");
  run.mutable_capture()->set_trace_format("kineto-json");
  run.mutable_capture()->set_profiler("torch.profiler 2.5.1 (legacy trace)");
  EXPECT_TRUE(ValidateRun(run).ok()) << ValidateRun(run);
}

TEST(ValidateRun, RejectsUtf8ThatIsNotWellFormed) {
  for (std::string bad :
       {std::string("\xc0\xaf"), std::string("\xe0\x80\xaf"),  // overlong '/'
        std::string("\xed\xa0\x80"),                           // a surrogate
        std::string("\xf4\x90\x80\x80"),                       // past U+10FFFF
        std::string("\xf5\x80\x80\x80"), std::string("\xe2\x82"), std::string("\x80")}) {
    auto run = Valid();
    run.mutable_ops(0)->set_name("aten::" + bad);
    ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.ops[0].name");
  }
  EXPECT_TRUE(IsPrintableText("\xf4\x8f\xbf\xbd naïve ∑ 😀"));
}

TEST(PrintableText, MakesAnyBytesATextFieldAccepts) {
  EXPECT_EQ(PrintableText("Traceback:\n\tKeyError: 'x'\r\n", 100), "Traceback:  KeyError: 'x'  ");
  EXPECT_EQ(PrintableText("a\x1b[31mb\u202ec\xff", 100), "a\ufffd[31mb\ufffdc\ufffd");
  EXPECT_EQ(PrintableText("naïve", 3), "na");  // never half a character
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte += static_cast<char>(b);
  for (std::size_t limit : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4096}}) {
    std::string printable = PrintableText(every_byte + every_byte, limit);
    EXPECT_TRUE(IsPrintableText(printable)) << limit;
    EXPECT_LE(printable.size(), limit);
  }
}

// Issue 22: the agent sends a run of more steps than the limit as buckets of contiguous steps
// (StepTotal.steps); the collector accepts exactly that shape.
v1::RunSummary Bucketed() {
  auto run = Valid();  // 3 steps, and 3 samples per op
  for (auto& step : *run.mutable_steps()) step.set_steps(4);
  return run;
}

TEST(ValidateRun, AcceptsBucketedStepsWithOneSamplePerBucketOrNone) {
  auto run = Bucketed();
  EXPECT_TRUE(ValidateRun(run).ok()) << ValidateRun(run);
  run.mutable_ops(0)->clear_step_self_device_us();
  EXPECT_TRUE(ValidateRun(run).ok()) << ValidateRun(run);
}

TEST(ValidateRun, BucketedSamplesMatchTheBuckets) {
  auto run = Bucketed();
  run.mutable_ops(1)->add_step_self_device_us(1.0);  // 4 samples for 3 buckets
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.ops[1].step_self_device_us");
  EXPECT_THAT(std::string(ValidateRun(run).message()), HasSubstr("one sample per bucket"));
  // Issue 26: unbucketed runs too, one sample per step (a mismatch was stored before).
  auto unbucketed = Valid();
  unbucketed.mutable_ops(1)->add_step_self_device_us(1.0);
  ExpectRejected(unbucketed, absl::StatusCode::kInvalidArgument, "run.ops[1].step_self_device_us");
  EXPECT_THAT(std::string(ValidateRun(unbucketed).message()), HasSubstr("one sample per step"));
}

TEST(ValidateRun, StepsCoverAtMostAPostgresIntegerOfSteps) {
  auto run = Bucketed();
  run.mutable_steps(1)->set_steps(kMaxStepNumber + 1u);
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.steps[1].steps");
  run.mutable_steps(1)->set_steps(kMaxStepNumber);
  ExpectRejected(run, absl::StatusCode::kInvalidArgument, "run.steps");
}

TEST(ValidateRun, ARunLargerThanOneMessageIsRefusedBeforeTheTransportDoes) {
  auto run = Valid();
  // 10,000 samples on each of 220 operators: 17.6 MB of doubles, within every count.
  for (int i = 0; i < 220; ++i) {
    auto* op = run.add_ops();
    *op = run.ops(0);
    op->set_name("op_" + std::to_string(i));
    op->clear_step_self_device_us();
    for (int k = 0; k < 10'000; ++k) op->add_step_self_device_us(1.0);
  }
  auto status = ValidateRun(run);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("more than the message limit"));
}

TEST(EscapedText, WritesForbiddenCharactersAsVisibleEscapes) {
  EXPECT_EQ(EscapedText("aten::mul"), "aten::mul");
  EXPECT_EQ(EscapedText("\xc3\xa9"), "\xc3\xa9");  // é is printable
  EXPECT_EQ(EscapedText("a\x1b[31m"), "a\\x1b[31m");
  EXPECT_EQ(EscapedText(std::string("n\0l", 3)), "n\\x00l");
  EXPECT_EQ(EscapedText("c1\xc2\x85"), "c1\\x85");
  EXPECT_EQ(EscapedText("r\xe2\x80\xaeo"), "r\\u202eo");
  EXPECT_EQ(EscapedText("bad\xff"), "bad\\xff");
  EXPECT_TRUE(IsPrintableText(EscapedText("\x01\x7f\xc2\x9f\xe2\x81\xa6\xed\xa0\x80")));
}

}  // namespace
}  // namespace devtime::wire
