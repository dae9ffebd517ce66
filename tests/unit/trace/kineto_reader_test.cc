// Kineto object-form traces (profiler-formats.md §1). Expected numbers are worked out by hand
// from the fixtures in tests/fixtures/trace/ (each fixture's "_source" says where its fields
// come from).
#include <filesystem>
#include <iterator>
#include <string>

#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

TEST(KinetoReader, ReadsObjectFormWithBaseTimeAndFloatTimestamps) {
  TraceSummary s = MustSummarize(Fixture("kineto_cuda_basic.json"));
  ExpectValidCapture(s, "kineto-json", DeviceKind::kCuda);
  // 21 complete events in the file (ignored categories included), 26 events in all.
  EXPECT_EQ(s.event_count, 21u);
}

TEST(KinetoReader, AttributesKernelToLaunchingOp) {
  TraceSummary s = MustSummarize(Fixture("kineto_cuda_basic.json"));
  const OpStats& addmm = Op(s, "aten::addmm");
  EXPECT_EQ(addmm.calls, 2u);
  EXPECT_DOUBLE_EQ(addmm.self_device_us, 101.0);  // 52.160 + 48.840
  EXPECT_DOUBLE_EQ(addmm.total_device_us, 101.0);
  // The runtime call itself carries no device time (torch: kernels belong to the op).
  const OpStats& launch = Op(s, "cudaLaunchKernel");
  EXPECT_EQ(launch.calls, 2u);
  EXPECT_DOUBLE_EQ(launch.self_device_us, 0.0);
  EXPECT_NEAR(launch.self_cpu_us, 10.763, 1e-9);
}

TEST(KinetoReader, AttributesMemcpyAndMemsetToLaunchingOp) {
  TraceSummary s = MustSummarize(Fixture("kineto_cuda_basic.json"));
  const OpStats& copy = Op(s, "aten::copy_");
  EXPECT_DOUBLE_EQ(copy.self_device_us, 10.0);
  EXPECT_DOUBLE_EQ(copy.self_cpu_us, 80.0);
  const OpStats& zero = Op(s, "aten::zero_");
  EXPECT_DOUBLE_EQ(zero.self_device_us, 1.5);
  EXPECT_DOUBLE_EQ(zero.self_cpu_us, 26.0);
}

TEST(KinetoReader, TotalDeviceTimeIncludesChildrenSelfDoesNot) {
  TraceSummary s = MustSummarize(Fixture("kineto_cuda_basic.json"));
  const OpStats& linear = Op(s, "aten::linear");
  EXPECT_EQ(linear.calls, 2u);
  EXPECT_DOUBLE_EQ(linear.self_device_us, 0.0);
  EXPECT_DOUBLE_EQ(linear.total_device_us, 101.0);
  EXPECT_NEAR(linear.self_cpu_us, 145.375, 1e-9);  // 300.5-5-200.125 + 200-150
  EXPECT_NEAR(linear.total_cpu_us, 500.5, 1e-9);
  const OpStats& step = Op(s, "ProfilerStep*");
  EXPECT_EQ(step.calls, 2u);
  EXPECT_NEAR(step.self_cpu_us, 969.5, 1e-9);
  EXPECT_NEAR(step.total_device_us, 112.5, 1e-9);  // all attributed device time
}

TEST(KinetoReader, ReportsUnattributedDeviceTimeInTotalAndWarning) {
  TraceSummary s = MustSummarize(Fixture("kineto_cuda_basic.json"));
  EXPECT_NEAR(s.device_total_us, 120.0, 1e-9);
  EXPECT_NEAR(s.unattributed_device_us, 7.5, 1e-9);
  ASSERT_FALSE(s.warnings.empty());
  EXPECT_NE(s.warnings[0].find("1 device events (7.500 us)"), std::string::npos) << s.warnings[0];
  double attributed = 0;
  for (const OpStats& op : s.ops) attributed += op.self_device_us;
  EXPECT_NEAR(attributed + s.unattributed_device_us, s.device_total_us, 1e-9);
}

TEST(KinetoReader, IgnoresPythonFunctionSpansAndUnknownCategories) {
  TraceSummary s = MustSummarize(Fixture("kineto_cuda_basic.json"));
  EXPECT_EQ(FindOp(s, "nn.Module: Linear_0"), nullptr);
  EXPECT_EQ(FindOp(s, "mystery"), nullptr);
  EXPECT_EQ(FindOp(s, "PyTorch Profiler (0)"), nullptr);
  EXPECT_EQ(s.ops.size(), 9u);
}

TEST(KinetoReader, SplitsProfilerStepWindows) {
  TraceSummary s = MustSummarize(Fixture("kineto_cuda_basic.json"));
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].step, 1u);
  EXPECT_EQ(s.steps[1].step, 2u);
  EXPECT_NEAR(s.steps[0].device_us, 63.66, 1e-9);
  EXPECT_NEAR(s.steps[1].device_us, 48.84, 1e-9);
  EXPECT_NEAR(s.steps[0].cpu_us, 1000.0, 1e-9);  // one thread: self CPU sums to the window
  EXPECT_NEAR(s.steps[1].cpu_us, 600.0, 1e-9);
  EXPECT_EQ(s.capture.active_steps, 2u);
  const OpStats& addmm = Op(s, "aten::addmm");
  ASSERT_EQ(addmm.step_self_device_us.size(), 2u);
  EXPECT_NEAR(addmm.step_self_device_us[0], 52.16, 1e-9);
  EXPECT_NEAR(addmm.step_self_device_us[1], 48.84, 1e-9);
}

TEST(KinetoReader, SortsOpsBySelfDeviceThenSelfCpu) {
  TraceSummary s = MustSummarize(Fixture("kineto_cuda_basic.json"));
  ASSERT_GE(s.ops.size(), 5u);
  const std::string first[] = {"aten::addmm", "aten::copy_", "aten::zero_", "ProfilerStep*",
                               "aten::linear"};
  for (size_t i = 0; i < std::size(first); ++i) EXPECT_EQ(s.ops[i].name, first[i]) << i;
}

TEST(KinetoReader, DeviceCategoriesAreConfigurable) {
  SummarizeOptions options;
  options.device_categories = {"kernel"};  // memcpy/memset no longer device work
  TraceSummary s = MustSummarize(Fixture("kineto_cuda_basic.json"), options);
  EXPECT_NEAR(s.device_total_us, 108.5, 1e-9);  // 52.16 + 48.84 + 7.5
  EXPECT_DOUBLE_EQ(Op(s, "aten::copy_").self_device_us, 0.0);
}

TEST(KinetoReader, ReadsGzipByMagicBytesWhateverTheName) {
  TraceSummary plain = MustSummarize(Fixture("kineto_cuda_basic.json"));
  TraceSummary gz = MustSummarize(Fixture("kineto_cuda_basic.json.gz"));
  EXPECT_EQ(gz.ops.size(), plain.ops.size());
  EXPECT_DOUBLE_EQ(gz.device_total_us, plain.device_total_us);
  TempDir dir;
  const auto renamed =
      dir.Write("no_gz_suffix.json", ReadAll(Fixture("kineto_cuda_basic.json.gz")));
  TraceSummary again = MustSummarize(renamed);
  EXPECT_DOUBLE_EQ(again.device_total_us, plain.device_total_us);
}

TEST(KinetoReader, ReadsIntegerTimestampsWithoutBaseTime) {
  TraceSummary s = MustSummarize(Fixture("kineto_int_ts.json"));
  EXPECT_EQ(s.source_format, "kineto-json");
  EXPECT_FALSE(s.invalid_reason) << *s.invalid_reason;
  // 1000 - aten::mm 100 - aten::add 50
  EXPECT_DOUBLE_EQ(Op(s, "ProfilerStep*").self_cpu_us, 850.0);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].step, 5u);
  EXPECT_DOUBLE_EQ(s.steps[0].cpu_us, 1030.0);  // includes the tid -5 sync call
}

TEST(KinetoReader, PrefersCorrelationOverExternalIdOfTheKernel) {
  // §7.1: the sgemm kernel's External id (555) is its own correlation; aten::add also has
  // External id 555, but the kernel was launched by aten::mm.
  TraceSummary s = MustSummarize(Fixture("kineto_int_ts.json"));
  const OpStats& mm = Op(s, "aten::mm");
  // 40 via correlation 555 + 10 via the External id fallback (correlation 600 has no launch).
  EXPECT_DOUBLE_EQ(mm.self_device_us, 50.0);
  EXPECT_DOUBLE_EQ(mm.self_cpu_us, 92.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::add").self_device_us, 0.0);
  EXPECT_DOUBLE_EQ(s.unattributed_device_us, 0.0);
}

TEST(KinetoReader, TreatsStringAndIntegerThreadIdsAlike) {
  // aten::mm has tid "2000", its cudaLaunchKernel tid 2000: same thread, so nested.
  TraceSummary s = MustSummarize(Fixture("kineto_int_ts.json"));
  const OpStats& sync = Op(s, "cudaDeviceSynchronize");  // negative tid is just another thread
  EXPECT_DOUBLE_EQ(sync.self_cpu_us, 30.0);
  const OpStats& mm = Op(s, "aten::mm");
  EXPECT_DOUBLE_EQ(mm.total_cpu_us - mm.self_cpu_us, 8.0);
}

TEST(KinetoReader, ParsesTimestampsExactlySoNestingSurvives) {
  TraceSummary s = MustSummarize(Fixture("kineto_precision.json"));
  EXPECT_NEAR(Op(s, "aten::parent").self_cpu_us, 9.999, 1e-9);
  EXPECT_NEAR(Op(s, "aten::child").self_cpu_us, 0.001, 1e-9);
  EXPECT_NEAR(Op(s, "aten::short_decimals").total_cpu_us, 7.25, 1e-9);
  EXPECT_NEAR(Op(s, "ProfilerStep*").self_cpu_us, 82.75, 1e-9);
  EXPECT_EQ(s.device_kind, DeviceKind::kCpu);
  EXPECT_FALSE(s.has_device_time);
}

TEST(KinetoReader, MarksPrivateUse1TraceWithoutDeviceEventsInvalid) {
  TraceSummary s = MustSummarize(Fixture("kineto_neuron_no_device.json"));
  EXPECT_EQ(s.device_kind, DeviceKind::kNeuron);
  EXPECT_FALSE(s.has_device_time);
  ASSERT_TRUE(s.invalid_reason);
  EXPECT_EQ(*s.invalid_reason, "device backend profiled but device time is empty");
  // PrivateUse1 runtime/driver events are host time in torch's model (§1.9).
  EXPECT_DOUBLE_EQ(Op(s, "neuron::dispatch").self_cpu_us, 50.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::matmul").self_cpu_us, 150.0);
}

TEST(KinetoReader, RecordsTheTraceFileAsArtifact) {
  TraceSummary s = MustSummarize(Fixture("kineto_int_ts.json"));
  ASSERT_EQ(s.artifacts.size(), 1u);
  EXPECT_EQ(s.artifacts[0].kind, "framework_trace");
  EXPECT_EQ(s.artifacts[0].size_bytes, std::filesystem::file_size(Fixture("kineto_int_ts.json")));
}

// kineto_collectives.json: ProfilerStep#7 holds aten::mm (sgemm 40 us), nccl:all_reduce around
// record_param_comms and the NCCL launch (500 us), a FusedAdam launch outside every cpu_op
// (30 us) and aten::foo > my_region > a launch without External id (20 us).
TEST(KinetoReader, CollectiveKernelGoesToTheOpWhoseExternalIdItsLaunchCarries) {
  TraceSummary s = MustSummarize(Fixture("kineto_collectives.json"));
  const OpStats& all_reduce = Op(s, "nccl:all_reduce");
  EXPECT_DOUBLE_EQ(Op(s, "record_param_comms").self_device_us, 500.0);
  // The annotation encloses the launch but does not own it; its total includes its child's.
  EXPECT_DOUBLE_EQ(all_reduce.self_device_us, 0.0);
  EXPECT_DOUBLE_EQ(all_reduce.total_device_us, 500.0);
}

TEST(KinetoReader, LaunchOutsideEveryCpuOpIsUnattributedNotTheAnnotations) {
  TraceSummary s = MustSummarize(Fixture("kineto_collectives.json"));
  EXPECT_DOUBLE_EQ(Op(s, "Optimizer.step#FusedAdam.step").self_device_us, 0.0);
  EXPECT_DOUBLE_EQ(s.unattributed_device_us, 30.0);
  EXPECT_DOUBLE_EQ(s.device_total_us, 590.0);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("1 device events (30.000 us)"), std::string::npos) << s.warnings[0];
}

TEST(KinetoReader, LaunchWithoutExternalIdGoesToTheEnclosingCpuOpPastAnnotations) {
  TraceSummary s = MustSummarize(Fixture("kineto_collectives.json"));
  const OpStats& step = Op(s, "ProfilerStep*");
  EXPECT_DOUBLE_EQ(Op(s, "aten::foo").self_device_us, 20.0);
  EXPECT_DOUBLE_EQ(Op(s, "my_region").self_device_us, 0.0);
  EXPECT_DOUBLE_EQ(step.self_device_us, 0.0);
  EXPECT_DOUBLE_EQ(step.total_device_us, 560.0);  // 40 + 500 + 20: all but the unattributed
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(s.steps[0].device_us, 560.0);
}

// kineto_alexnet_2023.json: a 2023 trace whose launches carry their own correlation as
// External id, colliding with other ops' ids. Torch gives each device event to the op that
// launched it, the innermost cpu_op enclosing the launch (by hand, from the fixture):
//   memcpy 230 us: cudaMemcpyAsync inside aten::copy_ (its id 4 names aten::empty_strided)
//   implicit_convolve_sgemm 300 + winograd 120 us: launches inside aten::cudnn_convolution
//     (ids 2 and 3 name aten::to and aten::_to_copy)
//   clamp_min 15 us: inside aten::relu_ (id 20 is relu_'s own: it encloses the launch)
//   volta_sgemm 40 us: inside aten::addmm (id 5 names aten::copy_)
//   7 us launched before the capture (no launch; id 10 is its own correlation): unattributed
TEST(KinetoReader, AlexnetStyleExternalIdCollisionsGoToTheEnclosingOp) {
  TraceSummary s = MustSummarize(Fixture("kineto_alexnet_2023.json"));
  ExpectValidCapture(s, "kineto-json", DeviceKind::kCuda);
  EXPECT_DOUBLE_EQ(Op(s, "aten::copy_").self_device_us, 230.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::empty_strided").self_device_us, 0.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::empty_strided").total_device_us, 0.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::to").self_device_us, 0.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::to").total_device_us, 230.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::_to_copy").self_device_us, 0.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::cudnn_convolution").self_device_us, 420.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::conv2d").self_device_us, 0.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::conv2d").total_device_us, 420.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::relu_").self_device_us, 15.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::addmm").self_device_us, 40.0);
  EXPECT_DOUBLE_EQ(Op(s, "aten::linear").total_device_us, 40.0);
  EXPECT_DOUBLE_EQ(s.unattributed_device_us, 7.0);
  EXPECT_DOUBLE_EQ(s.device_total_us, 712.0);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(s.steps[0].device_us, 705.0);
}

// The collective rule (an id naming an op that ran just before the launch in the same range)
// needs the id to be an op's: a launch whose External id is its own correlation, outside every
// op, is unattributed even when an op before it in the same range has that id.
TEST(KinetoReader, LaunchOutsideEveryOpWithItsOwnCorrelationAsIdIsUnattributed) {
  TempDir dir;
  const auto path = dir.Write("trace.json", R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
     "ts": 1690000000000000, "dur": 100, "args": {"External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1,
     "ts": 1690000000000010, "dur": 5, "args": {"External id": 9}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
     "ts": 1690000000000020, "dur": 5, "args": {"External id": 9, "correlation": 9}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
     "ts": 1690000000000030, "dur": 10, "args": {"External id": 9, "correlation": 9}}]})");
  TraceSummary s = MustSummarize(path);
  EXPECT_DOUBLE_EQ(Op(s, "aten::empty").self_device_us, 0.0);
  EXPECT_DOUBLE_EQ(s.unattributed_device_us, 10.0);
}

}  // namespace
}  // namespace devtime::trace::testing
