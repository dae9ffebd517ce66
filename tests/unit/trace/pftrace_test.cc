// Neuron Explorer's Perfetto system profile (issue 12 item 3): the same per-op NeuronCore
// times from system_profile.pftrace as from the JSON forms, with the traps of the format —
// interned and plain names, two sequences out of time order, a sequence that lost its
// incremental state, compressed packets, unknown fields, a truncated last packet, gzip.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "agents/trace/neuron/neuron_reader.h"
#include "agents/trace/perfetto/pftrace_reader.h"
#include "gtest/gtest.h"
#include "tests/unit/trace/pftrace_writer.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kRmsSession = "neuron_rmsnorm/explorer/i-0aa11bb22cc33dd44_pid_4242/1730000000";

constexpr uint32_t kRuntimeSeq = 1;  // interned names
constexpr uint32_t kDeviceSeq = 2;   // plain names, default track
constexpr uint64_t kRuntimeTrack = 11;
constexpr uint64_t kDeviceTrack = 22;
constexpr char kDeviceProfile[] = "device_profile_model_10001.pftrace";

// The RMSNorm capture of the explorer JSON fixture, rewritten as Neuron Explorer's Perfetto
// system profile: runtime nrt_execute slices on sequence 1 (names interned), NeuronCore
// executions on sequence 2 (plain names, `nc_exec_running <neff>`), written after sequence 1
// so packets are out of time order across sequences.
std::string RmsNormPftrace(std::string_view device_profile = kDeviceProfile) {
  absl::StatusOr<NeuronSystemTrace> json =
      ReadNeuronSystemTrace(Fixture(kRmsSession / "system_profile.json"));
  EXPECT_TRUE(json.ok()) << json.status();
  std::string out;
  // Sequence 3 starts without clearing its state: its packets are skipped (lost state).
  out += Record(Proto().Varint(8, 1).Varint(10, 3).Varint(13, 2).Msg(
      11, Proto().Varint(9, 1).Varint(11, kRuntimeTrack).Varint(10, 7)));
  // Sequence 1: clear + intern, then slices referencing iid 1.
  out += Record(Proto()
                    .Varint(10, kRuntimeSeq)
                    .Varint(13, 3)
                    .Msg(12, Proto()
                                 .Msg(2, Proto().Varint(1, 1).Bytes(2, "nrt_execute"))
                                 .Msg(3, Proto().Varint(1, 5).Bytes(2, "trace_event_source"))
                                 .Msg(29, Proto().Varint(1, 9).Bytes(2, "neuron_rt"))));
  for (const NsInterval& r : json->runtime) {
    const Proto source = Proto().Varint(1, 5).Varint(17, 9);
    out += Record(
        Proto()
            .Varint(8, static_cast<uint64_t>(r.start_ns))
            .Varint(10, kRuntimeSeq)
            .Varint(13, 2)
            .Fixed32(999, 7)  // an unknown field (wire type 5)
            .Msg(11, Proto().Varint(9, 1).Varint(11, kRuntimeTrack).Varint(10, 1).Msg(4, source)));
    out += Record(Proto()
                      .Varint(8, static_cast<uint64_t>(r.end_ns))
                      .Varint(10, kRuntimeSeq)
                      .Varint(13, 2)
                      .Msg(11, Proto().Varint(9, 2).Varint(11, kRuntimeTrack)));
  }
  // Sequence 2: a default track, then the executions; half of them inside compressed_packets.
  out += Record(Proto()
                    .Varint(10, kDeviceSeq)
                    .Varint(13, 1)
                    .Msg(59, Proto().Msg(11, Proto().Varint(11, kDeviceTrack))));
  std::string compressed;
  for (size_t i = 0; i < json->executions.size(); ++i) {
    const NeuronExecution& x = json->executions[i];
    Proto args_event = Proto()
                           .Varint(9, 1)
                           .Bytes(23, "nc_exec_running /var/tmp/model.neff")
                           .Msg(4, IntArg("exec_id", x.exec_id))
                           .Msg(4, IntArg("process_id", 4242))
                           .Msg(4, IntArg("lnc_idx", 0))
                           .Msg(4, StringArg("trace_event_source", "neuron_hw"))
                           .Msg(4, StringArg("device_profile", device_profile));
    std::string pair = Record(Proto()
                                  .Varint(8, static_cast<uint64_t>(x.start_ns))
                                  .Varint(10, kDeviceSeq)
                                  .Msg(11, args_event)) +
                       Record(Proto()
                                  .Varint(8, static_cast<uint64_t>(x.end_ns))
                                  .Varint(10, kDeviceSeq)
                                  .Msg(11, Proto().Varint(9, 2)));
    (i % 2 == 0 ? out : compressed) += pair;
  }
  out += Record(Proto().Varint(10, kDeviceSeq).Bytes(50, Zlib(compressed)));
  // A truncated last packet (the writer was still running).
  const std::string last = Record(Proto().Varint(8, 1).Varint(10, kDeviceSeq).Bytes(23, "cut"));
  out += last.substr(0, last.size() - 2);
  return out;
}

fs::path PerfettoSession(const TempDir& dir, const std::string& name, const std::string& bytes) {
  dir.Write("trace.json", ReadAll(Fixture(kRmsSession / "trace.json")));
  dir.Write(name, bytes);
  return dir.path();
}

TEST(PerfettoReader, RmsNormPerOpNeuronCoreTimeFromSystemProfilePftrace) {
  TempDir dir;
  TraceSummary s = MustSummarize(PerfettoSession(dir, "system_profile.pftrace", RmsNormPftrace()));
  EXPECT_FALSE(s.invalid_reason) << *s.invalid_reason;
  EXPECT_EQ(s.source_format, "neuron-dir");
  EXPECT_NEAR(s.device_total_us, 2 * 2354.9, 1e-6);
  EXPECT_DOUBLE_EQ(s.unattributed_device_us, 0.0);
  const OpStats& mul = Op(s, "aten::mul");
  ASSERT_EQ(mul.step_self_device_us.size(), 2u);
  EXPECT_NEAR(mul.step_self_device_us[0], 1164.5, 1e-6);
  EXPECT_NEAR(mul.step_self_device_us[1], 1164.5, 1e-6);
  EXPECT_NEAR(100 * mul.self_device_us / s.device_total_us, 49.45, 0.005);
  ASSERT_TRUE(s.device_join);
  EXPECT_EQ(s.device_join->Method(), "order");  // trace.json carries no exec ids
  // NEFF/model identity: the device_profile arg's model id, the NEFF path of the slice name.
  EXPECT_EQ(s.environment["neuron.models"], "10001");
  EXPECT_EQ(s.environment["neuron.model.10001.neff"], "/var/tmp/model.neff");
  EXPECT_EQ(s.environment["neuron.model.10001.executions"], "12");  // 6 ops x 2 steps
  EXPECT_TRUE(HasWarning(s, "1 Perfetto packets skipped"));
  EXPECT_TRUE(HasWarning(s, "last Perfetto packet is cut short"));
  // The layers match the JSON form's.
  TraceSummary from_json = MustSummarize(Fixture("neuron_rmsnorm/explorer"));
  ASSERT_EQ(s.layers.size(), from_json.layers.size());
  for (size_t i = 0; i < s.layers.size(); ++i) {
    EXPECT_NEAR(s.layers[i].time_us, from_json.layers[i].time_us, 1e-6) << i;
  }
}

// The same two executions in Neuron Explorer's JSON and Perfetto forms give the same NEFF/model
// identity: model_name + device_profile at the top level (JSON) or as args (Perfetto, names
// interned there), and a NEFF path only in the event name with device_profile under args.
TEST(PerfettoReader, ModelIdentityIsTheJsonFormsFromArgsOrName) {
  TempDir dir;
  dir.Write("system_profile.json", R"({"trace_events": [
    {"name": "nc_exec_running", "timestamp": 1000, "duration": 500, "process_id": "7",
     "lnc_idx": "0", "exec_id": 1, "model_name": "/tmp/a/neff_10001.neff",
     "device_profile": "device_profile_model_10001.pftrace"},
    {"name": "nc_exec_running /tmp/b/model.MODULE_x.neff", "timestamp": 2000, "duration": 500,
     "process_id": "7", "lnc_idx": "1",
     "args": {"exec_id": 2, "device_profile": "device_profile_model_10002.pftrace"}}]})");
  std::string pf = Record(Proto().Varint(10, 1).Varint(13, 1).Msg(
      12, Proto()
              .Msg(3, Proto().Varint(1, 1).Bytes(2, "model_name"))
              .Msg(3, Proto().Varint(1, 2).Bytes(2, "device_profile"))
              .Msg(29, Proto().Varint(1, 3).Bytes(2, "device_profile_model_10001.pftrace"))));
  auto slice = [&](int64_t start, const std::string& name, int64_t exec, int64_t core,
                   const Proto& identity) {
    pf += Record(Proto()
                     .Varint(8, static_cast<uint64_t>(start))
                     .Varint(10, 1)
                     .Varint(13, 2)
                     .Msg(11, Proto()
                                  .Varint(9, 1)
                                  .Varint(11, 5)
                                  .Bytes(23, name)
                                  .Msg(4, IntArg("exec_id", exec))
                                  .Msg(4, IntArg("process_id", 7))
                                  .Msg(4, IntArg("lnc_idx", core))
                                  .Append(identity)));
    pf += Record(Proto()
                     .Varint(8, static_cast<uint64_t>(start + 500))
                     .Varint(10, 1)
                     .Varint(13, 2)
                     .Msg(11, Proto().Varint(9, 2).Varint(11, 5)));
  };
  slice(1000, "nc_exec_running", 1, 0,
        Proto()
            .Msg(4, Proto().Varint(1, 1).Bytes(6, "/tmp/a/neff_10001.neff"))
            .Msg(4, Proto().Varint(1, 2).Varint(17, 3)));
  slice(2000, "nc_exec_running /tmp/b/model.MODULE_x.neff", 2, 1,
        Proto().Msg(4, Proto().Varint(1, 2).Bytes(6, "device_profile_model_10002.pftrace")));
  absl::StatusOr<NeuronSystemTrace> json =
      ReadNeuronSystemTrace(dir.path() / "system_profile.json");
  absl::StatusOr<NeuronSystemTrace> perfetto = ParsePerfettoSystemTrace(pf, "p");
  ASSERT_TRUE(json.ok()) << json.status();
  ASSERT_TRUE(perfetto.ok()) << perfetto.status();
  for (const NeuronSystemTrace* t : {&*json, &*perfetto}) {
    ASSERT_EQ(t->executions.size(), 2u) << t->form;
    EXPECT_EQ(t->executions[0].neff, "/tmp/a/neff_10001.neff") << t->form;
    EXPECT_EQ(t->executions[0].model_id, "10001") << t->form;
    EXPECT_EQ(t->executions[1].neff, "/tmp/b/model.MODULE_x.neff") << t->form;
    EXPECT_EQ(t->executions[1].model_id, "10002") << t->form;
  }
}

TEST(PerfettoReader, ModelIdsARunCannotCarryAreLeftOut) {
  // A model id with a space and a control byte would make the RunSummary invalid.
  TempDir dir;
  TraceSummary s = MustSummarize(PerfettoSession(
      dir, "system_profile.pftrace", RmsNormPftrace("device_profile_model_bad id\x01.pftrace")));
  EXPECT_FALSE(s.invalid_reason) << *s.invalid_reason;
  EXPECT_FALSE(s.environment.contains("neuron.models"));
  EXPECT_NEAR(s.device_total_us, 2 * 2354.9, 1e-6);  // the executions still count
}

TEST(PerfettoReader, GzipFileAndExecutionsOfPhysicalCoresMerged) {
  // Two physical-core rows of exec 7 (LNC=2) become one execution.
  std::string bytes;
  for (const auto& [core, start, end] :
       std::vector<std::tuple<int, int64_t, int64_t>>{{0, 1000, 3000}, {1, 1100, 3200}}) {
    bytes += Record(Proto()
                        .Varint(8, static_cast<uint64_t>(start))
                        .Msg(11, Proto()
                                     .Varint(9, 1)
                                     .Varint(11, 40 + static_cast<uint64_t>(core))
                                     .Bytes(23, "nc_exec_running")
                                     .Msg(4, IntArg("exec_id", 7))
                                     .Msg(4, IntArg("lnc_idx", 0))));
    bytes +=
        Record(Proto()
                   .Varint(8, static_cast<uint64_t>(end))
                   .Msg(11, Proto().Varint(9, 2).Varint(11, 40 + static_cast<uint64_t>(core))));
  }
  absl::StatusOr<NeuronSystemTrace> t = ParsePerfettoSystemTrace(Gzip(bytes), "g");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->form, "perfetto");
  ASSERT_EQ(t->executions.size(), 1u);
  EXPECT_EQ(t->executions[0].start_ns, 1000);
  EXPECT_EQ(t->executions[0].end_ns, 3200);
  EXPECT_EQ(t->executions[0].exec_id, 7);
  EXPECT_EQ(t->executions[0].queue, "/0");
}

TEST(PerfettoReader, DroppedPacketsMakeTheRunInvalid) {
  TempDir dir;
  // The writer reports a lost packet on the device sequence (before the file's cut last record).
  const std::string bytes = Record(Proto().Varint(10, kDeviceSeq).Varint(42, 1)) + RmsNormPftrace();
  TraceSummary s = MustSummarize(PerfettoSession(dir, "system_profile.pftrace", bytes));
  ASSERT_TRUE(s.invalid_reason);
  EXPECT_NE(s.invalid_reason->find("dropped"), std::string::npos) << *s.invalid_reason;
}

TEST(PerfettoReader, DeviceProfilesAreNotSystemTraces) {
  for (const char* name : {"system_profile.pftrace", "run3.pftrace.gz"}) {
    EXPECT_TRUE(IsPerfettoSystemTraceName(name)) << name;
  }
  for (const char* name :
       {"device_profile_model_10001.pftrace", "ntff.pftrace", "system_profile.json"}) {
    EXPECT_FALSE(IsPerfettoSystemTraceName(name)) << name;
  }
}

TEST(PerfettoReader, GarbageIsAnErrorNamingTheFile) {
  for (const std::string& bad : {std::string(""), std::string(64, '\xff')}) {
    absl::StatusOr<NeuronSystemTrace> t = ParsePerfettoSystemTrace(bad, "x.pftrace");
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("x.pftrace"), std::string::npos) << t.status();
  }
}

// `summarize system_profile.pftrace` (issue 23): a lone system trace is read as one, plain or
// gzip'd, not as JSON — its NeuronCore time is summarized and the run says what it lacks.
TEST(PerfettoReader, ALoneSystemProfileIsSummarizedAndSaysWhatItNeeds) {
  TempDir dir;
  for (const auto& [name, bytes] :
       {std::pair{"system_profile.pftrace", RmsNormPftrace()},
        std::pair{"system_profile.pftrace.gz", Gzip(RmsNormPftrace())}}) {
    absl::StatusOr<TraceSummary> s = Summarize(dir.Write(name, bytes));
    ASSERT_TRUE(s.ok()) << name << ": " << s.status();
    EXPECT_EQ(s->source_format, "neuron-system-trace");
    EXPECT_EQ(s->device_kind, DeviceKind::kNeuron);
    EXPECT_NEAR(s->device_total_us, 2 * 2354.9, 1e-6) << name;
    EXPECT_EQ(s->environment["neuron.model.10001.executions"], "12") << name;
    ASSERT_TRUE(s->invalid_reason) << name;
    EXPECT_NE(s->invalid_reason->find(std::string(name) + " is a Neuron system trace only"),
              std::string::npos)
        << *s->invalid_reason;
    EXPECT_NE(s->invalid_reason->find("framework trace (trace.json"), std::string::npos);
    // No framework events to measure dispatch by: the layer is absent, not 0.
    EXPECT_FALSE(FindLayerUs(*s, Layer::kFrameworkDispatch));
    EXPECT_TRUE(FindLayerUs(*s, Layer::kDeviceExecution));
  }
}

// model_name on the runtime slice (nrt_execute) that ran an execution names its NEFF when the
// execution's own slice does not (perfetto-neuron-monitor.md A4.4): by exec_id on the queue.
TEST(PerfettoReader, ModelNameOnRuntimeSlicesNamesTheExecutionsModel) {
  auto slice = [](uint64_t begin, uint64_t end, const char* name, int64_t exec_id,
                  const char* model_name) {
    Proto event = Proto()
                      .Varint(9, 1)
                      .Varint(11, 5)
                      .Bytes(23, name)
                      .Msg(4, IntArg("exec_id", exec_id))
                      .Msg(4, IntArg("process_id", 77))
                      .Msg(4, IntArg("lnc_idx", 0));
    if (model_name) event.Msg(4, StringArg("model_name", model_name));
    return Record(Proto().Varint(8, begin).Varint(10, 1).Varint(13, 1).Msg(11, event)) +
           Record(Proto().Varint(8, end).Varint(10, 1).Msg(11, Proto().Varint(9, 2).Varint(11, 5)));
  };
  const std::string bytes = slice(1000, 9000, "nrt_execute", 1, "/models/a/model.neff") +
                            slice(2000, 8000, "nc_exec_running", 1, nullptr) +
                            slice(10000, 19000, "nrt_execute", 2, "/models/b/neff_4242.neff") +
                            slice(11000, 18000, "nc_exec_running", 2, nullptr);
  absl::StatusOr<NeuronSystemTrace> t = ParsePerfettoSystemTrace(bytes, "m.pftrace");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->executions.size(), 2u);
  EXPECT_EQ(t->executions[0].neff, "/models/a/model.neff");
  EXPECT_EQ(t->executions[1].neff, "/models/b/neff_4242.neff");
  EXPECT_EQ(t->runtime.size(), 2u);
}

// A system_profile.json that is not JSON is an error naming it, not skipped in silence (which
// left the run blaming ntrace.pb).
TEST(PerfettoReader, ANonJsonSystemProfileJsonIsAnErrorNamingIt) {
  TempDir dir;
  dir.Write("trace.json", ReadAll(Fixture(kRmsSession / "trace.json")));
  dir.Write("ntrace.pb", "x");
  dir.Write("system_profile.json", RmsNormPftrace());  // Perfetto bytes under the JSON name
  absl::StatusOr<TraceSummary> s = Summarize(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("system_profile.json"), std::string::npos) << s.status();
  EXPECT_EQ(s.status().message().find("ntrace.pb"), std::string::npos) << s.status();
}

}  // namespace
}  // namespace devtime::trace::testing
