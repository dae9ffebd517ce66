// A daemon (daemon.h) against a collector on loopback that answers each upload as the test
// says and records the slots the agent reports: the setup of the daemon's unit tests. Tests
// that drive time or inject disk faults run the daemon on fake_ (tests/support/fake_env.h).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agents/daemon/daemon.h"
#include "agents/daemon/files.h"
#include "agents/daemon/spool.h"
#include "grpcpp/grpcpp.h"
#include "tests/support/fake_env.h"
#include "tests/support/process.h"
#include "tests/support/wait.h"

namespace devtime::agent {

inline const std::string kTrace =
    std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/trace/kineto_cuda_basic.json";

// A collector that answers each upload with answer(run), records what it was sent, and
// hands the agent's session the jobs to run now.
class ScriptedCollector final : public v1::Collector::Service {
 public:
  using Answer = std::function<grpc::Status(const v1::RunSummary&)>;
  using Slots = std::vector<v1::JobSlot>;

  void AnswerWith(Answer answer) {
    std::lock_guard lock(mu_);
    answer_ = std::move(answer);
  }
  // Assigns `job` to the agent and asks it to run the job once now (on the next session).
  void RunNow(v1::JobSpec job) {
    std::lock_guard lock(mu_);
    run_now_.push_back(std::move(job));
  }
  // Every report of a finished slot, of any job, in order.
  Slots FinishedSlots() {
    std::lock_guard lock(mu_);
    Slots finished;
    for (const auto& slot : slots_) {
      if (slot.outcome() != v1::SLOT_OUTCOME_RUNNING) finished.push_back(slot);
    }
    return finished;
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
  // Every report of a slot of `job`, in order.
  Slots SlotsOf(const std::string& job) {
    std::lock_guard lock(mu_);
    Slots slots;
    for (const auto& slot : slots_) {
      if (slot.job() == job) slots.push_back(slot);
    }
    return slots;
  }
  std::vector<v1::SlotOutcome> Outcomes(const std::string& job) {
    std::vector<v1::SlotOutcome> outcomes;
    for (const auto& slot : SlotsOf(job)) outcomes.push_back(slot.outcome());
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

// A job run at once by a run-now: `command` leaves the profiler output in {output_dir}.
inline v1::JobSpec Job(const std::string& name, const std::string& command) {
  v1::JobSpec job;
  job.set_name(name);
  job.set_model("mlp");
  job.set_workload(name);
  job.set_command(command);
  job.mutable_schedule()->set_cron("0 0 1 1 *");  // not within the test
  job.set_timeout_seconds(60);
  return job;
}

class DaemonTest : public ::testing::Test {
 protected:
  DaemonTest() {
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
  ~DaemonTest() override {
    daemon_.reset();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

  void Spool(const std::vector<v1::RunSummary>& runs) {
    auto spool = *agent::Spool::Open(config_.spool_dir, 1 << 30);
    for (const auto& run : runs) ASSERT_TRUE(spool->Put(run).ok());
  }
  void StartAgent() {
    auto daemon = AgentDaemon::Start(config_, policy_, *env_);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = std::move(*daemon);
  }
  bool Spooled(const std::string& run_id) const {
    return std::filesystem::exists(config_.spool_dir / (run_id + ".pb"));
  }
  bool SetAside(const std::string& run_id) const {
    return std::filesystem::exists(config_.spool_dir / "rejected" / (run_id + ".pb"));
  }
  // Runs the daemon on the fake clock and filesystem.
  void UseFakeEnv() { env_ = &fake_; }
  // Moves the fake clock on by `step` at each poll until `done` holds (false if it never
  // does): time passes for the daemon only as fast as the test looks.
  bool AdvanceUntil(const std::function<bool()>& done,
                    std::chrono::milliseconds step = std::chrono::milliseconds(5)) {
    return devtime::testing::WaitUntil(
        [&] {
          if (done()) return true;
          fake_.Advance(step);
          return false;
        },
        std::chrono::seconds(15), std::chrono::milliseconds(5));
  }

  std::string dir_ = devtime::testing::MakeTempDir("daemon-delivery");
  ScriptedCollector collector_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  AgentConfig config_;
  RetryPolicy policy_;
  devtime::testing::FakeEnv fake_;
  wire::Env* env_ = wire::Env::Default();
  std::unique_ptr<AgentDaemon> daemon_;  // declared last: gone before what it uses
};

}  // namespace devtime::agent
