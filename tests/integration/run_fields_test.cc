// The RunSummary fields issue 12 added, end to end: devtime-agent summarizes a Neuron capture
// (framework trace + system trace), the collector stores what was uploaded, and `devtimectl
// runs show` prints the device total with its unattributed part, how the NeuronCore
// executions were joined to operators, the kernels by device time and the capture warnings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "agents/cli/agent_commands.h"
#include "devtime/v1/run.pb.h"
#include "proto/wire/change.h"
#include "proto/wire/json.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"

namespace devtime {
namespace {

using devtime::testing::AgentCommand;
using devtime::testing::TestRunId;
using ::testing::HasSubstr;

// Times as devtimectl prints them (proto/wire/change.h): "4.710 ms", "0.0 µs".
using wire::ScaledTime;

std::string Fixture(const std::string& name) {
  return std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/trace/" + name;
}

class RunFieldsTest : public devtime::testing::CollectorFixture {
 protected:
  RunFieldsTest() : dir_(devtime::testing::MakeTempDir("run_fields")) {}

  // The agent's RunSummary JSON for `trace`, written to a file; fails the test on a non-zero
  // exit.
  std::string SummarizeToFile(const std::string& trace, const std::string& run_id) {
    auto json = AgentCommand(
        {"summarize", trace, "--format", "json", "--model", "rmsnorm", "--run-id", run_id});
    EXPECT_EQ(json.exit_code, 0) << json.err;
    return devtime::testing::WriteFile(dir_, run_id + ".json", json.out);
  }

  std::string dir_;
};

TEST_F(RunFieldsTest, NeuronRunShowsDeviceTotalsJoinKernelsAndWarnings) {
  std::string file = SummarizeToFile(Fixture("neuron_rmsnorm/explorer"), TestRunId(31));
  v1::RunSummary sent;
  ASSERT_TRUE(wire::ParseJson(devtime::testing::ReadFile(file), file, &sent).ok());
  // What the agent put on the wire, before the collector sees it.
  ASSERT_TRUE(sent.has_device_join());
  EXPECT_EQ(sent.device_join().method(), v1::DEVICE_JOIN_METHOD_ORDER);
  EXPECT_GT(sent.device_join().by_order_executions(), 0u);
  ASSERT_GT(sent.kernels_size(), 0);
  EXPECT_GT(sent.device_total_us(), 0);

  // The fixture's capture is complete, so it has no warnings; one as the agent writes for a
  // NEFF without its NTFF shows how `runs show` prints them.
  auto* warning = sent.add_warnings();
  warning->set_kind("neff_without_ntff");
  warning->set_message("model_1.neff has no NTFF with hash 7f3a: no device profile for it");
  file = devtime::testing::WriteFile(dir_, "with_warning.json", wire::ToJson(sent));

  auto upload = AgentUpload({file});
  ASSERT_EQ(upload.exit_code, 0) << upload.err;

  // `--format json` is the stored message: every new field came back from the collector.
  auto json = Ctl({"runs", "show", TestRunId(31), "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  v1::GetRunResponse stored;
  ASSERT_TRUE(wire::ParseJson(json.out, "runs show", &stored).ok()) << json.out;
  EXPECT_EQ(stored.run().device_total_us(), sent.device_total_us());
  EXPECT_EQ(stored.run().unattributed_device_us(), sent.unattributed_device_us());
  EXPECT_EQ(stored.run().kernels_size(), sent.kernels_size());
  EXPECT_EQ(stored.run().warnings_size(), sent.warnings_size());
  EXPECT_EQ(stored.run().device_join().by_order_us(), sent.device_join().by_order_us());

  auto show = Ctl({"runs", "show", TestRunId(31)});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_THAT(show.out,
              HasSubstr("device time total " + ScaledTime(sent.device_total_us()) +
                        " (unattributed " + ScaledTime(sent.unattributed_device_us()) + ")"));
  EXPECT_THAT(show.out,
              HasSubstr("NeuronCore join: order, " +
                        std::to_string(sent.device_join().by_order_executions()) + " executions " +
                        ScaledTime(sent.device_join().by_order_us()) + "; " +
                        std::to_string(sent.device_join().unjoined_executions()) + " unjoined"));
  // The numbers of the RMSNorm fixture: 12 NeuronCore executions (2 steps x 6 launches), all
  // joined by order on their queue, none left unattributed.
  EXPECT_THAT(show.out, HasSubstr("device time total 4.710 ms (unattributed 0.0 µs)"));
  EXPECT_THAT(show.out, HasSubstr("NeuronCore join: order, 12 executions 4.710 ms; 0 unjoined"));
  EXPECT_THAT(show.out, HasSubstr("top kernels"));
  EXPECT_THAT(show.out, ::testing::ContainsRegex("nc_exec_running +12 +4.710 ms"));
  EXPECT_THAT(show.out, HasSubstr("warnings\n  [neff_without_ntff] model_1.neff has no NTFF"));
}

TEST_F(RunFieldsTest, CpuRunShowsNoDeviceLines) {
  std::string file = SummarizeToFile(Fixture("legacy_mlp"), TestRunId(32));
  ASSERT_EQ(AgentUpload({file}).exit_code, 0);
  auto show = Ctl({"runs", "show", TestRunId(32)});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_THAT(show.out, ::testing::Not(HasSubstr("device time total")));
  EXPECT_THAT(show.out, ::testing::Not(HasSubstr("NeuronCore join")));
}

TEST(SummarizeExitCode, InvalidRunExitsWithTheDocumentedCodeAndStillPrints) {
  std::string invalid = Fixture("kineto_neuron_no_device.json");
  auto json = AgentCommand({"summarize", invalid, "--format", "json"});
  EXPECT_EQ(json.exit_code, agent::kExitInvalidRun) << json.err;
  EXPECT_THAT(json.out, HasSubstr("RUN_STATUS_INVALID"));
  EXPECT_THAT(json.err, HasSubstr("device backend profiled but device time is empty"));
  auto table = AgentCommand({"summarize", invalid});
  EXPECT_EQ(table.exit_code, agent::kExitInvalidRun) << table.err;
  EXPECT_THAT(table.out, HasSubstr("Source:"));
  // A trustworthy capture still exits 0.
  auto ok = AgentCommand({"summarize", Fixture("legacy_mlp")});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// Issue 23: started_at / finished_at are when the capture ran, from the trace's clock
// (kineto_collectives.json: baseTimeNanoseconds 1719853884 s + ts 1212075.549 s, 1 ms of host
// events), not the file's modification time; a trace with relative timestamps falls back to it
// and says so.
TEST(SummarizeCaptureTime, ComesFromTheTraceClockAndTheFileTimeOnlyAsALastResort) {
  auto json = AgentCommand({"summarize", Fixture("kineto_collectives.json"), "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  v1::RunSummary sent;
  ASSERT_TRUE(wire::ParseJson(json.out, "summarize", &sent).ok()) << json.out;
  EXPECT_EQ(sent.started_at().seconds(), 1719853884 + 1212075);
  EXPECT_EQ(sent.started_at().nanos(), 549000000);
  EXPECT_EQ(sent.finished_at().seconds(), 1719853884 + 1212075);
  EXPECT_EQ(sent.finished_at().nanos(), 550000000);
  EXPECT_THAT(json.err, ::testing::Not(HasSubstr("modification time")));

  auto relative = AgentCommand({"summarize", Fixture("legacy_mlp"), "--format", "json"});
  ASSERT_EQ(relative.exit_code, 0) << relative.err;
  EXPECT_THAT(relative.err, HasSubstr("started_at and finished_at are the file's modification"));
}

}  // namespace
}  // namespace devtime
