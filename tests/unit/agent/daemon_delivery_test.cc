// The daemon's delivery (daemon.h) against a collector on loopback that answers each upload
// as the test says: no run holds the queue, a run the collector keeps failing on is set aside
// and its slot says so, a run the store could not hold is never spooled, and a collector that
// is down loses nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "agents/daemon.h"
#include "agents/spool.h"
#include "grpcpp/grpcpp.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"
#include "tests/support/wait.h"

namespace devtime::agent {
namespace {

namespace fs = std::filesystem;
using devtime::testing::NaiveRmsNormRun;
using devtime::testing::TestRunId;
using devtime::testing::WaitUntil;
using ::testing::HasSubstr;

const std::string kTrace =
    std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/trace/kineto_cuda_basic.json";

// A collector that answers each upload with answer(run), records what it was sent, and
// hands the agent's session the jobs to run now.
class ScriptedCollector final : public v1::Collector::Service {
 public:
  using Answer = std::function<grpc::Status(const v1::RunSummary&)>;

  void AnswerWith(Answer answer) {
    std::lock_guard lock(mu_);
    answer_ = std::move(answer);
  }
  // Assigns `job` to the agent and asks it to run the job once now (on the next session).
  void RunNow(v1::JobSpec job) {
    std::lock_guard lock(mu_);
    run_now_.push_back(std::move(job));
  }

  int Attempts(const std::string& run_id) {
    std::lock_guard lock(mu_);
    return attempts_[run_id];
  }
  std::vector<std::string> Delivered() {
    std::lock_guard lock(mu_);
    return delivered_;
  }
  int Uploads() {
    std::lock_guard lock(mu_);
    int total = 0;
    for (const auto& [id, count] : attempts_) total += count;
    return total;
  }
  // The last report of a finished slot of `job` (outcome neither RUNNING nor unspecified).
  std::optional<v1::JobSlot> Finished(const std::string& job) {
    std::lock_guard lock(mu_);
    std::optional<v1::JobSlot> last;
    for (const auto& slot : slots_) {
      if (slot.job() == job && slot.outcome() != v1::SLOT_OUTCOME_RUNNING) last = slot;
    }
    return last;
  }
  std::vector<v1::SlotOutcome> Outcomes(const std::string& job) {
    std::lock_guard lock(mu_);
    std::vector<v1::SlotOutcome> outcomes;
    for (const auto& slot : slots_) {
      if (slot.job() == job) outcomes.push_back(slot.outcome());
    }
    return outcomes;
  }

  grpc::Status UploadRun(grpc::ServerContext*, const v1::UploadRunRequest* request,
                         v1::UploadRunResponse* response) override {
    std::lock_guard lock(mu_);
    const std::string& run_id = request->run().identity().run_id();
    ++attempts_[run_id];
    grpc::Status status = answer_(request->run());
    if (status.ok()) {
      delivered_.push_back(run_id);
      response->set_run_id(run_id);
    }
    return status;
  }

  grpc::Status AgentSession(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::CollectorMessage, v1::AgentMessage>* stream) override {
    v1::AgentMessage message;
    if (!stream->Read(&message)) return grpc::Status::OK;  // the hello
    std::vector<v1::JobSpec> jobs;
    {
      std::lock_guard lock(mu_);
      jobs.swap(run_now_);
    }
    if (!jobs.empty()) {
      v1::CollectorMessage assignments;
      for (const auto& job : jobs) *assignments.mutable_assignments()->add_jobs() = job;
      stream->Write(assignments);
      for (const auto& job : jobs) {
        v1::CollectorMessage run_now;
        run_now.mutable_run_now()->set_job(job.name());
        stream->Write(run_now);
      }
    }
    while (stream->Read(&message)) {
      std::lock_guard lock(mu_);
      if (message.has_slot()) slots_.push_back(message.slot());
    }
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  Answer answer_ = [](const v1::RunSummary&) { return grpc::Status::OK; };  // guarded by mu_
  std::vector<v1::JobSpec> run_now_;                                        // guarded by mu_
  std::map<std::string, int> attempts_;                                     // guarded by mu_
  std::vector<std::string> delivered_;                                      // guarded by mu_
  std::vector<v1::JobSlot> slots_;                                          // guarded by mu_
};

grpc::Status AnswerFor(const std::string& bad_run_id, grpc::Status answer,
                       const v1::RunSummary& run) {
  return run.identity().run_id() == bad_run_id ? answer : grpc::Status::OK;
}

const grpc::Status kInternal(grpc::StatusCode::INTERNAL, "value out of range for type integer");

// A job run at once by a run-now: `command` leaves the profiler output in {output_dir}.
v1::JobSpec Job(const std::string& name, const std::string& command) {
  v1::JobSpec job;
  job.set_name(name);
  job.set_model("mlp");
  job.set_workload(name);
  job.set_command(command);
  job.mutable_schedule()->set_cron("0 0 1 1 *");  // not within the test
  job.set_timeout_seconds(60);
  return job;
}

class DaemonDeliveryTest : public ::testing::Test {
 protected:
  DaemonDeliveryTest() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&collector_);
    server_ = builder.BuildAndStart();
    config_.name = "agent-a";
    config_.host = "host-a";
    config_.collector = "127.0.0.1:" + std::to_string(port_);
    config_.work_dir = dir_ + "/work";
    config_.spool_dir = dir_ + "/spool";
    config_.state_dir = dir_ + "/state";
    // Short waits, so that a test sees many attempts quickly.
    policy_.first_backoff = std::chrono::milliseconds(10);
    policy_.max_backoff = std::chrono::milliseconds(50);
    policy_.max_server_error_backoff = std::chrono::milliseconds(50);
  }
  ~DaemonDeliveryTest() override {
    daemon_.reset();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

  void Spool(const std::vector<v1::RunSummary>& runs) {
    auto spool = *agent::Spool::Open(config_.spool_dir, 1 << 30);
    for (const auto& run : runs) ASSERT_TRUE(spool->Put(run).ok());
  }
  void StartAgent() {
    auto daemon = AgentDaemon::Start(config_, policy_);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = std::move(*daemon);
  }
  bool Spooled(const std::string& run_id) const {
    return fs::exists(config_.spool_dir / (run_id + ".pb"));
  }
  bool SetAside(const std::string& run_id) const {
    return fs::exists(config_.spool_dir / "rejected" / (run_id + ".pb"));
  }

  std::string dir_ = devtime::testing::MakeTempDir("daemon-delivery");
  ScriptedCollector collector_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  AgentConfig config_;
  RetryPolicy policy_;
  std::unique_ptr<AgentDaemon> daemon_;
};

TEST_F(DaemonDeliveryTest, RunsFlowPastARunTheCollectorKeepsFailingOn) {
  const std::string bad = TestRunId(1);  // the oldest in the spool: first in line
  collector_.AnswerWith([&](const v1::RunSummary& run) { return AnswerFor(bad, kInternal, run); });
  policy_.set_aside_after = 1'000'000;  // kept for the whole test
  std::vector<v1::RunSummary> runs;
  for (int n = 1; n <= 11; ++n) runs.push_back(NaiveRmsNormRun(TestRunId(n)));
  Spool(runs);
  StartAgent();

  ASSERT_TRUE(WaitUntil([&] { return collector_.Delivered().size() == 10; }))
      << collector_.Delivered().size() << " of the 10 good runs delivered";
  EXPECT_TRUE(Spooled(bad));
  EXPECT_GE(collector_.Attempts(bad), 1);
  for (int n = 2; n <= 11; ++n) EXPECT_FALSE(Spooled(TestRunId(n))) << n;
}

TEST_F(DaemonDeliveryTest, SetsARunAsideAfterTheBoundOfServerErrors) {
  const std::string bad = TestRunId(1);
  collector_.AnswerWith([&](const v1::RunSummary& run) { return AnswerFor(bad, kInternal, run); });
  policy_.set_aside_after = 3;
  Spool({NaiveRmsNormRun(bad), NaiveRmsNormRun(TestRunId(2))});
  StartAgent();

  ASSERT_TRUE(WaitUntil([&] { return SetAside(bad); }));
  EXPECT_FALSE(Spooled(bad));
  EXPECT_EQ(collector_.Attempts(bad), 3);
  EXPECT_THAT(collector_.Delivered(), ::testing::ElementsAre(TestRunId(2)));
}

TEST_F(DaemonDeliveryTest, NeverSetsARunAsideWhileTheCollectorIsUnavailable) {
  std::atomic<bool> down{true};
  collector_.AnswerWith([&](const v1::RunSummary&) {
    return down ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "database unreachable")
                : grpc::Status::OK;
  });
  policy_.set_aside_after = 2;
  const std::string run_id = TestRunId(1);
  Spool({NaiveRmsNormRun(run_id)});
  StartAgent();

  ASSERT_TRUE(WaitUntil([&] { return collector_.Attempts(run_id) >= 10; }));
  EXPECT_TRUE(Spooled(run_id));
  EXPECT_FALSE(SetAside(run_id));
  down = false;  // the collector is back: the run is delivered, nothing was lost
  ASSERT_TRUE(WaitUntil([&] { return !collector_.Delivered().empty(); }));
  EXPECT_FALSE(Spooled(run_id));
  EXPECT_FALSE(SetAside(run_id));
}

TEST_F(DaemonDeliveryTest, ARunTheStoreCannotHoldIsNotSpooledAndItsSlotNamesTheField) {
  // ProfilerStep#3000000001: a step number beyond run_steps.step, a PostgreSQL integer.
  collector_.RunNow(Job("huge-steps", "sed 's/ProfilerStep#/ProfilerStep#300000000/g' " + kTrace +
                                          " > {output_dir}/trace.json"));
  StartAgent();

  ASSERT_TRUE(WaitUntil([&] { return collector_.Finished("huge-steps").has_value(); }));
  auto slot = *collector_.Finished("huge-steps");
  EXPECT_EQ(slot.outcome(), v1::SLOT_OUTCOME_FAILED);
  EXPECT_THAT(slot.reason(), HasSubstr("not spooled: run.steps[0].step: must be <= 2147483647"));
  EXPECT_FALSE(Spooled(slot.run_id()));
  EXPECT_EQ(collector_.Uploads(), 0);
}

TEST_F(DaemonDeliveryTest, ASetAsideRunFailsItsSlotAfterItSucceeded) {
  collector_.AnswerWith([](const v1::RunSummary& run) {
    return run.identity().job() == "poison" ? kInternal : grpc::Status::OK;
  });
  policy_.set_aside_after = 2;
  collector_.RunNow(Job("poison", "cp " + kTrace + " {output_dir}/trace.json"));
  StartAgent();

  ASSERT_TRUE(WaitUntil([&] {
    auto slot = collector_.Finished("poison");
    return slot && slot->outcome() == v1::SLOT_OUTCOME_FAILED;
  }));
  auto slot = *collector_.Finished("poison");
  EXPECT_THAT(collector_.Outcomes("poison"),
              ::testing::ElementsAre(v1::SLOT_OUTCOME_RUNNING, v1::SLOT_OUTCOME_SUCCEEDED,
                                     v1::SLOT_OUTCOME_FAILED));
  EXPECT_THAT(slot.reason(), HasSubstr("run " + slot.run_id() + " was set aside"));
  EXPECT_THAT(slot.reason(), HasSubstr("INTERNAL: value out of range for type integer"));
  EXPECT_TRUE(SetAside(slot.run_id()));
  EXPECT_EQ(collector_.Attempts(slot.run_id()), 2);
}

}  // namespace
}  // namespace devtime::agent
