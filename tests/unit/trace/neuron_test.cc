// TorchNeuron output directories: the Neuron system trace in both JSON forms, the layers,
// per-step NeuronCore time, NEFF/NTFF artifacts (fixtures: tests/fixtures/trace/neuron_*).
#include <filesystem>
#include <string>
#include <vector>

#include "agents/trace/neuron/neuron_reader.h"
#include "agents/trace/neuron/system_trace_finder.h"
#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

namespace fs = std::filesystem;

double LayerUs(const TraceSummary& s, Layer layer) {
  for (const LayerTime& l : s.layers) {
    if (l.layer == layer) return l.time_us;
  }
  return -1;
}

const ArtifactRef* FindArtifact(const TraceSummary& s, const std::string& file) {
  for (const ArtifactRef& a : s.artifacts) {
    if (a.path.filename() == file) return &a;
  }
  return nullptr;
}

const fs::path kExplorerSession =
    "neuron_explorer/profile_output/i-0f207fb2a99bd2d08_pid_701/1729888380";
const fs::path kFetchSession = "neuron_fetch/i-012590440bb9fd263_pid_98399";

TEST(NeuronDir, ExplorerJsonFromTheOutputRoot) {
  // Given the profile_output root, devtime finds <instance>_pid_<pid>/<timestamp>/.
  TraceSummary s = MustSummarize(Fixture("neuron_explorer/profile_output"));
  ExpectValidCapture(s, "neuron-dir", DeviceKind::kNeuron);
  // exec 2 merged over two physical cores: [1.300, 2.020] ms = 720 us; exec 3: 800 us; the
  // warm-up exec before ProfilerStep#3 is not counted.
  EXPECT_DOUBLE_EQ(s.device_total_us, 1520.0);
  // Each step has one launch (aten::mul's neuron::submit) and one execution on one NeuronCore
  // queue: joined by order (issue 12 item 1; before, all 1520 us were unattributed).
  EXPECT_DOUBLE_EQ(s.unattributed_device_us, 0.0);
  ASSERT_TRUE(s.device_join);
  EXPECT_EQ(s.device_join->Method(), "order");
  EXPECT_EQ(s.device_join->by_order, 2u);
  EXPECT_DOUBLE_EQ(s.device_join->by_order_us, 1520.0);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].step, 3u);
  EXPECT_DOUBLE_EQ(s.steps[0].device_us, 720.0);
  EXPECT_DOUBLE_EQ(s.steps[1].device_us, 800.0);
  EXPECT_TRUE(HasWarning(s, "1 NeuronCore executions (100.000 us) lie outside"));
  EXPECT_FALSE(HasWarning(s, "not attributed to operators"));
  // The cpu_ops' self time per step: aten::mul 60 (100 − dispatch 40), aten::add 60,
  // synchronize 400; not ProfilerStep#N's own time nor the runtime/driver calls (run.proto).
  EXPECT_DOUBLE_EQ(LayerUs(s, Layer::kFrameworkDispatch), 2 * 520.0);
  EXPECT_DOUBLE_EQ(LayerUs(s, Layer::kRuntimeScheduling), 1837.094);
  EXPECT_DOUBLE_EQ(LayerUs(s, Layer::kDeviceExecution), 1520.0);
  EXPECT_DOUBLE_EQ(LayerUs(s, Layer::kIdle), 2480.0);
  EXPECT_EQ(s.environment.at("neuron.instance_id"), "i-0f207fb2a99bd2d08");
  EXPECT_EQ(s.environment.at("neuron.pid"), "701");
  // NEFF/model identity of the counted executions (model_id and model_name fields).
  EXPECT_EQ(s.environment.at("neuron.models"), "5");
  EXPECT_EQ(s.environment.at("neuron.model.5.executions"), "2");
  EXPECT_EQ(s.environment.at("neuron.model.5.neff"),
            "/var/tmp/neuron-compile-cache/compile_cache/MODULE_14382885777943380728/model.neff");
  EXPECT_EQ(s.capture.events_dropped, 0u);
  // aten::mul owns the NeuronCore time of its launches, per step.
  const OpStats& mul = Op(s, "aten::mul");
  EXPECT_EQ(mul.calls, 2u);
  EXPECT_DOUBLE_EQ(mul.self_device_us, 1520.0);
  EXPECT_EQ(std::vector<double>(mul.step_self_device_us.begin(), mul.step_self_device_us.end()),
            (std::vector<double>{720.0, 800.0}));
}

TEST(NeuronDir, ExplorerArtifactsAndSessionModeNtff) {
  TraceSummary s = MustSummarize(Fixture(kExplorerSession));
  const ArtifactRef* neff = FindArtifact(s, "neff_14382885777943380728_vnc_0.neff");
  ASSERT_NE(neff, nullptr);
  EXPECT_EQ(neff->kind, "neff");
  EXPECT_EQ(neff->pair_key, "14382885777943380728");
  EXPECT_EQ(neff->size_bytes, 64u);
  ASSERT_NE(FindArtifact(s, "profile_nc_0_session_0.ntff"), nullptr);
  EXPECT_EQ(FindArtifact(s, "ntrace.pb")->kind, "system_trace");
  EXPECT_EQ(FindArtifact(s, "trace_info.pb")->kind, "system_trace_info");
  EXPECT_EQ(FindArtifact(s, "system_profile.json")->kind, "system_trace_json");
  EXPECT_EQ(FindArtifact(s, "trace.json")->kind, "framework_trace");
  // Session mode: one NTFF per core for every NEFF, so no NEFF lacks its NTFF.
  EXPECT_FALSE(HasWarning(s, "has no NTFF"));
}

TEST(NeuronDir, FetchApiFormWithClockAlignmentAndOlderLayout) {
  TraceSummary s = MustSummarize(Fixture(kFetchSession));
  EXPECT_EQ(s.source_format, "neuron-dir");
  EXPECT_TRUE(s.has_device_time);
  EXPECT_FALSE(s.invalid_reason) << *s.invalid_reason;
  EXPECT_DOUBLE_EQ(s.device_total_us, 5.0);  // exec 7 (two cores merged): 2 us, exec 8: 3 us
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(s.steps[0].device_us, 2.0);
  EXPECT_DOUBLE_EQ(s.steps[1].device_us, 3.0);
  EXPECT_DOUBLE_EQ(LayerUs(s, Layer::kRuntimeScheduling), 20.0);
  EXPECT_DOUBLE_EQ(LayerUs(s, Layer::kIdle), 3995.0);
  EXPECT_TRUE(HasWarning(s, "1 Neuron system trace start/stop events have no partner"));
  EXPECT_TRUE(HasWarning(s, "NEFF neff_555_vnc_0.neff has no NTFF with hash 555"));
  EXPECT_TRUE(HasWarning(s, "NTFF 14382885777943380728_instid_0_vnc_1.ntff is empty (0 bytes)"));
  EXPECT_FALSE(HasWarning(s, "neff_14382885777943380728.neff has no NTFF"));
  const ArtifactRef* ntff = FindArtifact(s, "14382885777943380728_instid_0_vnc_0.ntff");
  ASSERT_NE(ntff, nullptr);
  EXPECT_EQ(ntff->pair_key, "14382885777943380728");
  EXPECT_EQ(FindArtifact(s, "neff_14382885777943380728.neff")->pair_key, "14382885777943380728");
  EXPECT_EQ(FindArtifact(s, "neuron_framework_trace_rank_0.json")->kind, "framework_trace");
}

TEST(NeuronDir, FetchApiWithoutSyncPointKeepsDeviceClock) {
  TempDir dir;
  dir.Write("trace.json", ReadAll(Fixture(kFetchSession / "neuron_framework_trace_rank_0.json")));
  dir.Write("ntrace.json", R"({"events": [
    {"event_type": "nc_exec_running", "phase": "start", "tracking_id": 1, "nc_idx": 0,
     "data": {"exec_id": 7, "device_core_idx": 0, "nc_timestamp_ns": 100}},
    {"event_type": "nc_exec_running", "phase": "stop", "tracking_id": 1, "nc_idx": 0,
     "data": {"exec_id": 7, "device_core_idx": 0, "nc_timestamp_ns": 2100}}]})");
  TraceSummary s = MustSummarize(dir.path());
  EXPECT_TRUE(s.has_device_time);
  EXPECT_FALSE(s.invalid_reason) << *s.invalid_reason;
  EXPECT_DOUBLE_EQ(s.device_total_us, 2.0);
  EXPECT_DOUBLE_EQ(s.steps[0].device_us, 0.0);
  EXPECT_TRUE(HasWarning(s, "no timestamp_sync_point"));
  EXPECT_DOUBLE_EQ(LayerUs(s, Layer::kIdle), 0.0);
}

TEST(NeuronDir, OnlyNtracePbIsInvalidWithAHowTo) {
  TempDir dir;
  dir.Write("trace.json", ReadAll(Fixture(kExplorerSession / "trace.json")));
  dir.Write("ntrace.pb", "x");
  TraceSummary s = MustSummarize(dir.path());
  ASSERT_TRUE(s.invalid_reason);
  EXPECT_NE(s.invalid_reason->find("device backend profiled but device time is empty: the Neuron "
                                   "system trace is only in ntrace.pb"),
            std::string::npos)
      << *s.invalid_reason;
  EXPECT_NE(s.invalid_reason->find("--output-format json"), std::string::npos);
}

TEST(NeuronDir, NoFrameworkTraceIsInvalid) {
  TempDir dir;
  dir.Write("system_profile.json", ReadAll(Fixture(kExplorerSession / "system_profile.json")));
  TraceSummary s = MustSummarize(dir.path());
  ASSERT_TRUE(s.invalid_reason);
  EXPECT_NE(s.invalid_reason->find("no framework trace"), std::string::npos) << *s.invalid_reason;
}

TEST(NeuronDir, ManyRanksAndSessionsPickOneAndSayWhich) {
  TempDir dir;
  for (const char* rank : {"i-1_pid_10", "i-1_pid_11"}) {
    for (const char* ts : {"100", "200"}) {
      fs::create_directories(dir.path() / rank / ts);
      dir.Write(std::string(rank) + "/" + ts + "/ntrace.pb", "x");
    }
  }
  TraceSummary s = MustSummarize(dir.path());
  EXPECT_TRUE(HasWarning(s, "2 rank directories"));
  EXPECT_TRUE(HasWarning(s, "summarized the newest by name, 200"));
  EXPECT_EQ(s.environment.at("neuron.pid"), "10");
}

TEST(NeuronReader, TraceEventsSpellingAndStringNumbers) {
  TempDir dir;
  const fs::path p = dir.Write("system_profile.json", R"({"warnings": [], "trace_events": [
    {"name": "nc_exec_running", "timestamp": "1729888381000000000", "duration": "2000",
     "lnc_idx": "0", "exec_id": "4", "process_id": "9"}]})");
  absl::StatusOr<NeuronSystemTrace> t = ReadNeuronSystemTrace(p);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->form, "explorer-json");
  ASSERT_EQ(t->device.size(), 1u);
  EXPECT_EQ(t->device[0].end_ns - t->device[0].start_ns, 2000);
}

TEST(NeuronReader, ErrorsNameTheFile) {
  TempDir dir;
  for (const std::string& bad :
       {std::string(""), std::string("[]"), std::string("{}"), std::string(R"({"events": {}})"),
        std::string(R"({"events": [1]})"),
        std::string(R"({"trace_event": [{"name": "x", "timestamp": 1,
                                   "duration": 1, "timestamp_unit": "us"}]})")}) {
    const fs::path p = dir.Write("system_profile.json", bad);
    absl::StatusOr<NeuronSystemTrace> t = ReadNeuronSystemTrace(p);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find(p.string()), std::string::npos) << t.status();
  }
}

TEST(NeuronReader, DroppedEventsWarningText) {
  EXPECT_EQ(DroppedEventsInWarning("WARN[0000] Warning: 1001 trace events were dropped during "
                                   "capture (stored 530560 out of 531561 total events)..."),
            1001u);
  EXPECT_FALSE(DroppedEventsInWarning("no events were dropped"));
  EXPECT_FALSE(DroppedEventsInWarning(" trace events were dropped"));
}

TEST(SystemTraceFinder, RecognisesBothJsonFormsByTheirTopLevelKeys) {
  EXPECT_EQ(SniffSystemTrace(R"({"trace_event": [{"name": "nc_exec_running"}]})"),
            SystemTraceForm::kExplorerJson);
  EXPECT_EQ(SniffSystemTrace(R"({"warnings": ["a", {"x": [1]}], "trace_events": [)"),
            SystemTraceForm::kExplorerJson);  // cut inside the array: the key is enough
  EXPECT_EQ(SniffSystemTrace(R"( {"events": [ {"event_type": "nrt_execute", "phase": "start"})"),
            SystemTraceForm::kFetchApi);
  EXPECT_EQ(SniffSystemTrace(R"({"events_dropped": 7, "events": []})"), SystemTraceForm::kFetchApi);
  // Not system traces: Kineto, an `events` array of something else, a nested key, an array.
  EXPECT_EQ(SniffSystemTrace(R"({"traceEvents": [{"ph": "X"}]})"), SystemTraceForm::kNone);
  EXPECT_EQ(SniffSystemTrace(R"({"events": [{"name": "click"}]})"), SystemTraceForm::kNone);
  EXPECT_EQ(SniffSystemTrace(R"({"meta": {"trace_event": []}})"), SystemTraceForm::kNone);
  EXPECT_EQ(SniffSystemTrace(R"([{"trace_event": []}])"), SystemTraceForm::kNone);
  EXPECT_EQ(SniffSystemTrace(R"({"a\"b": "}", "trace_event": [])"),
            SystemTraceForm::kExplorerJson);  // escapes and brackets inside strings
}

TEST(NeuronDir, FetchApiTraceUnderAnyNameAnywhereInTheSessionIsRead) {
  // The fetch-API fixture saved as runtime_dump_0001.json.gz two levels down: before issue 12
  // only ntrace*/system_trace*/sys_trace* names were read and this run was INVALID.
  TempDir dir;
  fs::create_directories(dir.path() / "dumps" / "nc0");
  dir.Write("trace.json", ReadAll(Fixture(kFetchSession / "neuron_framework_trace_rank_0.json")));
  dir.Write("dumps/nc0/runtime_dump_0001.json.gz",
            Gzip(ReadAll(Fixture(kFetchSession / "ntrace.json"))));
  dir.Write("ntrace.pb", "x");
  TraceSummary s = MustSummarize(dir.path());
  EXPECT_FALSE(s.invalid_reason) << *s.invalid_reason;
  EXPECT_TRUE(s.has_device_time);
  EXPECT_DOUBLE_EQ(s.device_total_us, MustSummarize(Fixture(kFetchSession)).device_total_us);
  const ArtifactRef* json = FindArtifact(s, "runtime_dump_0001.json.gz");
  ASSERT_NE(json, nullptr);
  EXPECT_EQ(json->kind, "system_trace_json");
}

TEST(NeuronDir, SystemTraceNextToTheSessionDirectoryIsRead) {
  // <out>/<instance>_pid_<pid>/<timestamp>/ with the converted JSON one level up.
  TempDir dir;
  const fs::path session = dir.path() / "i-1_pid_7" / "1729888380";
  fs::create_directories(session);
  dir.Write("i-1_pid_7/1729888380/trace.json", ReadAll(Fixture(kExplorerSession / "trace.json")));
  dir.Write("i-1_pid_7/1729888380/ntrace.pb", "x");
  dir.Write("i-1_pid_7/converted.json", ReadAll(Fixture(kExplorerSession / "system_profile.json")));
  TraceSummary s = MustSummarize(dir.path());
  EXPECT_FALSE(s.invalid_reason) << *s.invalid_reason;
  EXPECT_DOUBLE_EQ(s.device_total_us, 1520.0);
}

TEST(NeuronDir, TwoRenderingsOfOneCaptureAgree) {
  TempDir dir;
  dir.Write("trace.json", ReadAll(Fixture(kExplorerSession / "trace.json")));
  const std::string system = ReadAll(Fixture(kExplorerSession / "system_profile.json"));
  dir.Write("system_profile.json", system);
  dir.Write("copy_of_profile.json", system);
  TraceSummary s = MustSummarize(dir.path());
  EXPECT_FALSE(s.invalid_reason) << *s.invalid_reason;
  EXPECT_TRUE(HasWarning(s, "2 Neuron system traces of the same capture"));
  EXPECT_DOUBLE_EQ(s.device_total_us, 1520.0);
}

TEST(NeuronDir, SystemTracesThatDisagreeMakeTheRunInvalidAndNameEach) {
  TempDir dir;
  dir.Write("trace.json", ReadAll(Fixture(kExplorerSession / "trace.json")));
  dir.Write("system_profile.json", ReadAll(Fixture(kExplorerSession / "system_profile.json")));
  dir.Write("other_run.json", R"({"trace_event": [{"name": "nc_exec_running",
    "timestamp": 1729888381300000000, "duration": 5000, "exec_id": 9, "lnc_idx": "0"}]})");
  TraceSummary s = MustSummarize(dir.path());
  ASSERT_TRUE(s.invalid_reason);
  EXPECT_NE(s.invalid_reason->find("2 Neuron system traces in the output directory disagree"),
            std::string::npos)
      << *s.invalid_reason;
  EXPECT_NE(s.invalid_reason->find("other_run.json (explorer-json, 1 NeuronCore executions, "
                                   "5.000 us)"),
            std::string::npos)
      << *s.invalid_reason;
  EXPECT_NE(s.invalid_reason->find("system_profile.json (explorer-json, 3 NeuronCore executions"),
            std::string::npos)
      << *s.invalid_reason;
}

TEST(NeuronDir, AnEventsArrayOfSomethingElseIsNotASystemTrace) {
  // A CUDA harness directory with an unrelated events.json stays a plain trace directory.
  TempDir dir;
  dir.Write("trace.json", ReadAll(Fixture("kineto_cuda_basic.json")));
  dir.Write("events.json", R"({"events": [{"name": "epoch_end", "value": 3}]})");
  TraceSummary s = MustSummarize(dir.path());
  EXPECT_EQ(s.source_format, "kineto-json");
  EXPECT_EQ(s.device_kind, DeviceKind::kCuda);
}

// The naive RMSNorm (tests/fixtures/trace/make_neuron_fixtures.py): per step aten::pow 310.2,
// aten::mean 420.6, aten::add 150.0, aten::rsqrt 309.6 and two aten::mul 600.0 + 564.5 us of
// NeuronCore time, 2,354.9 us in all.
void ExpectRmsNormPerOpNeuronCoreTime(const TraceSummary& s) {
  EXPECT_FALSE(s.invalid_reason) << *s.invalid_reason;
  EXPECT_NEAR(s.device_total_us, 2 * 2354.9, 1e-6);
  EXPECT_DOUBLE_EQ(s.unattributed_device_us, 0.0);
  const OpStats& mul = Op(s, "aten::mul");
  EXPECT_EQ(mul.calls, 4u);
  ASSERT_EQ(mul.step_self_device_us.size(), 2u);
  EXPECT_NEAR(mul.step_self_device_us[0], 1164.5, 1e-6);
  EXPECT_NEAR(mul.step_self_device_us[1], 1164.5, 1e-6);
  EXPECT_NEAR(mul.self_device_us, 2329.0, 1e-6);
  EXPECT_NEAR(100 * mul.self_device_us / s.device_total_us, 49.45, 0.005);
  EXPECT_EQ(s.ops.front().name, "aten::mul");  // the largest NeuronCore time first
  EXPECT_NEAR(Op(s, "aten::mean").self_device_us, 841.2, 1e-6);
  // Everything ran inside the steps.
  EXPECT_NEAR(Op(s, "ProfilerStep*").total_device_us, 2 * 2354.9, 1e-6);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_NEAR(s.steps[0].device_us, 2354.9, 1e-6);
  EXPECT_NE(RenderTable(s).find("49.45%"), std::string::npos) << RenderTable(s);
}

// How the executions of the RMSNorm session `fixture` were joined to ops, once its per-op
// NeuronCore time is as expected.
DeviceJoin RmsNormJoin(const std::string& fixture) {
  TraceSummary s = MustSummarize(Fixture(fixture));
  ExpectRmsNormPerOpNeuronCoreTime(s);
  EXPECT_TRUE(s.device_join) << fixture << " has no device join";
  return s.device_join.value_or(DeviceJoin());
}

TEST(NeuronJoin, RmsNormFromExplorerJsonJoinsByOrderPerQueue) {
  const DeviceJoin join = RmsNormJoin("neuron_rmsnorm/explorer");
  EXPECT_EQ(join.Method(), "order");
  EXPECT_EQ(join.by_order, 12u);
  EXPECT_EQ(join.unjoined, 0u);
}

TEST(NeuronJoin, RmsNormFromAFetchApiTraceUnderAnUnusualNameJoinsByExecId) {
  const DeviceJoin join = RmsNormJoin("neuron_rmsnorm/fetch");
  EXPECT_EQ(join.Method(), "id");
  EXPECT_EQ(join.by_id, 12u);
  EXPECT_NEAR(join.by_id_us, 2 * 2354.9, 1e-6);
}

// Issue 23 "case3": a fetch-API buffer without timestamp_sync_point keeps NeuronCore times on
// the device clock, so executions cannot be placed in steps by time; joined by exec_id, each
// step carries the NeuronCore time of the ops that launched in it (2,354.9 us), as a CUDA
// trace's steps do. It has no runtime software events: runtime scheduling is absent, not 0.
TEST(NeuronJoin, FetchApiOnTheDeviceClockGivesStepsTheirJoinedDeviceTime) {
  const DeviceJoin join = RmsNormJoin("neuron_rmsnorm/fetch_device_clock");
  EXPECT_EQ(join.Method(), "id");
  TraceSummary s = MustSummarize(Fixture("neuron_rmsnorm/fetch_device_clock"));
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_NEAR(s.steps[1].device_us, 2354.9, 1e-6);
  EXPECT_TRUE(HasWarning(s, "in the launching op's step")) << RenderTable(s);
  EXPECT_FALSE(FindLayerUs(s, Layer::kRuntimeScheduling));
  EXPECT_NE(RenderTable(s).find("Device time per step (mean of 2): 2.355 ms"), std::string::npos)
      << RenderTable(s);
}

TEST(NeuronDir, RuntimeSchedulingIsAbsentWhenTheSystemTraceHasNoRuntimeEvents) {
  TraceSummary s = MustSummarize(Fixture("neuron_rmsnorm/fetch"));
  EXPECT_FALSE(FindLayerUs(s, Layer::kRuntimeScheduling));
  EXPECT_TRUE(FindLayerUs(s, Layer::kDeviceExecution));
}

TEST(NeuronJoin, ExecutionsThatCannotBeJoinedAreUnattributedAndSaySo) {
  // One launch too many: order is ambiguous, no id: nothing is guessed.
  TempDir dir;
  std::string trace =
      ReadAll(Fixture("neuron_rmsnorm/explorer/i-0aa11bb22cc33dd44_pid_4242/"
                      "1730000000/trace.json"));
  const std::string extra =
      R"({"ph": "X", "cat": "privateuse1_driver", "name": "neuron::submit", "pid": 4242, )"
      R"("tid": 3, "ts": 888380001000.100, "dur": 1.000, "args": {}},)";
  trace.insert(trace.find("{\"ph\""), extra + "\n  ");
  dir.Write("trace.json", trace);
  dir.Write("system_profile.json",
            ReadAll(Fixture("neuron_rmsnorm/explorer/i-0aa11bb22cc33dd44_pid_4242/1730000000/"
                            "system_profile.json")));
  TraceSummary s = MustSummarize(dir.path());
  ASSERT_TRUE(s.device_join);
  EXPECT_EQ(s.device_join->unjoined, 12u);
  EXPECT_NEAR(s.unattributed_device_us, 2 * 2354.9, 1e-6);
  EXPECT_TRUE(HasWarning(s, "12 NeuronCore executions (4709.800 us) are not joined"));
  EXPECT_TRUE(HasWarning(s, "12 executions but 13 privateuse1_driver launches"));
  EXPECT_TRUE(HasWarning(s, "not attributed to operators"));
}

}  // namespace
}  // namespace devtime::trace::testing
