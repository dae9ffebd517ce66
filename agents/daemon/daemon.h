// devtime-agent run: the daemon on an accelerator host.
//
// It holds a long-lived AgentSession with the collector (reconnecting with backoff), from
// which it learns its assigned jobs and run-now requests; it keeps the last assignments on
// disk and goes on running them while the collector is unreachable. Each slot runs in its own
// process group with its timeout enforced (job_runner.h); the run id is made before the job
// starts; the profiler output is summarized (agents/trace) into a RunSummary that goes into
// the fsync'd spool (spool.h) before upload, if it passes the collector's own validation
// (proto/wire/validation.h; else the slot fails, naming the field); a spooled run is deleted
// only after the collector's ack. Each run is retried on its own schedule (RetrySchedule in
// uploader.h), so a failing run never holds the others back; a run the collector refuses, or
// keeps failing on, is set aside in the spool's rejected/ folder, logged, and its slot
// reported failed. A job never runs twice at once on a host: a slot that comes while the
// previous run is still going is reported as skipped. A run goes on until its slot's last
// report (its last attempt's) is queued: a slot the collector has seen finish never makes the
// next one "still running". Every slot is reported to the collector.
//
// Nothing is lost at the edges. A run that finds the spool or the disk full waits, with
// backoff, for room (counted in devtime_agent_spool_full_total), its output kept. Each
// running slot has an fsync'd marker in <state_dir>/in_flight/, removed once its final report
// is written to the collector; a start finds the markers an agent killed mid-job left and
// reports each slot: summarized and spooled if its output is complete (run.json, which the
// harness writes last), else failed ("agent restarted during the run") and retried when the
// job's retries allow. Temporary files left by a crash or a failed write are removed at start.
//
// Time is the env's (proto/wire/env.h): slots are computed on its wall clock (a clock that
// jumps forward fires the slots it passed, late, once each; one that goes back fires nothing
// twice: a job's next slot only moves forward), and every wait, timeout and backoff is
// measured on its steady clock.
//
// Thread-safety: Start/Stop/Wait may be called from different threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agents/daemon/agent_config.h"
#include "agents/daemon/agent_metrics.h"
#include "agents/daemon/files.h"
#include "agents/daemon/spool.h"
#include "agents/daemon/uploader.h"
#include "agents/monitor/monitor_runner.h"
#include "devtime/v1/collector.grpc.pb.h"
#include "proto/wire/env.h"

namespace devtime::agent {

class AgentDaemon {
 public:
  // `retry`: how spooled runs are retried and when one is set aside (the defaults in
  // production; tests shorten them).
  // `env`: the clocks the slots, timeouts and backoffs follow, and the filesystem the spool,
  // the assignments and the markers are written to (tests pass a FakeEnv); it must outlive
  // the daemon.
  static absl::StatusOr<std::unique_ptr<AgentDaemon>> Start(const AgentConfig& config,
                                                            const RetryPolicy& retry = {},
                                                            wire::Env& env = *wire::Env::Default());
  ~AgentDaemon();
  AgentDaemon(const AgentDaemon&) = delete;
  AgentDaemon& operator=(const AgentDaemon&) = delete;

  // Ends the session, ends running jobs (as at a timeout; the next start reports their slots)
  // and stops. Spooled runs stay for the next start. Safe to call more than once.
  void Stop();
  // Until Stop, and until every thread the daemon started has ended (joined: none of them
  // touches the daemon after Wait returns).
  void Wait();

  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }

 private:
  struct ScheduledJob {
    v1::JobSpec spec;
    absl::Time next_slot;  // before jitter
  };

  AgentDaemon(AgentConfig config, RetryPolicy retry, wire::Env& env);
  void LoadAssignments();
  void SaveAssignments(const v1::Assignments& assignments);
  void UpdateAssignments(const v1::Assignments& assignments);

  void SessionLoop();
  void SchedulerLoop();
  void UploaderLoop();
  // Validates and spools a finished slot's run, then reports the slot: failed, saying why,
  // when the run could not be spooled (the error returned). The report frees the job when the
  // slot succeeded or `last_attempt` is its last.
  absl::Status SpoolAndReport(const v1::RunSummary& run, v1::JobSlot slot, bool last_attempt);
  // Takes an undeliverable run out of the upload queue, keeping it (spool.h), saying why in
  // the log and in its slot's outcome.
  void SetAside(const std::string& run_id, const std::string& why);
  void Delivered(const std::string& run_id);
  // Starts a slot unless the job is already running (then reports it skipped). Needs mu_.
  void StartSlot(const v1::JobSpec& job, absl::Time slot_time, bool run_now);
  // Runs `work` on a runner thread with `job` marked running. Needs mu_.
  void StartRunner(const std::string& job, std::function<void()> work);
  void JoinFinishedRunners();
  // Runs attempts first_attempt.. of the slot until one succeeds or the job's retries are used.
  // A culprit run's slot carries `hunt_environment` (what it pinned and resolved).
  void RunSlot(v1::JobSpec job, absl::Time slot_time, bool run_now, uint32_t first_attempt,
               const std::map<std::string, std::string>& hunt_environment = {});
  // A culprit run (issue 25): the job with the request's pins, once, its run tagged; a pin
  // or value source that cannot be resolved fails the slot saying why (pins.h).
  void RunHuntSlot(const v1::JobSpec& job, const v1::RunNowRequest& request);
  // Makes the run of an attempt that ended (with `failure`, "" when the job succeeded) from
  // its output, spools it and reports its RUNNING `slot` finished. True when it succeeded.
  // `last_attempt`: no retry follows a failure, so the report frees the job (Report).
  bool FinishAttempt(const v1::JobSpec& job, v1::JobSlot slot, std::string failure,
                     absl::Time finished, bool last_attempt);
  std::filesystem::path MarkerDir() const;
  void MarkInFlight(const v1::JobSlot& slot, uint32_t attempt);
  // `slot` was written to the collector: a finished slot's marker goes. Needs mu_.
  void SlotReported(const v1::JobSlot& slot);
  // Reports the slots the last run of the agent left in flight (their markers). Before the
  // scheduler starts.
  void RecoverUnfinishedSlots();
  // Queues `slot` for the collector. `frees_job`: it is the last report of its job's runner,
  // which from now on is not "still running": whoever sees the slot finished (a test, an
  // operator's run-now) can start the job again at once, though the runner thread still ends.
  void Report(v1::JobSlot slot, bool frees_job = false);
  // Waits `duration` on the env's steady clock; false when the daemon stops first.
  bool SleepUnlessStopping(std::chrono::milliseconds duration);
  // neuron-monitor (daemon_monitor.cc): starts the runner when agent.yaml has `monitor:`;
  // a closed window is validated and spooled like a job's run (no slot to report).
  absl::Status StartMonitor();
  absl::Status SpoolMonitorWindow(const v1::RunSummary& run);

  const AgentConfig config_;
  const RetryPolicy retry_;
  wire::Env& env_;
  v1::AgentIdentity identity_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Spool> spool_;
  std::unique_ptr<AgentMetrics> metrics_;

  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable changed_;           // stop, reports, run-now, finished runs
  std::map<std::string, ScheduledJob> jobs_;  // guarded by mu_
  std::map<std::string, int> running_;        // runner id by job; guarded by mu_
  std::deque<std::string> run_now_;           // guarded by mu_
  // Culprit runs, in order; one waits while its job runs (never skipped). Guarded by mu_.
  std::deque<v1::RunNowRequest> hunt_runs_;
  std::deque<v1::JobSlot> reports_;                       // guarded by mu_
  grpc::ClientContext* session_context_ = nullptr;        // guarded by mu_
  int active_runners_ = 0;                                // guarded by mu_
  std::map<int, std::thread> runners_;                    // by id; guarded by mu_
  std::vector<int> finished_runners_;                     // to join; guarded by mu_
  int next_runner_id_ = 0;                                // guarded by mu_
  std::map<std::string, std::filesystem::path> markers_;  // by run id; guarded by mu_
  std::mutex wait_mu_;                                    // one Wait at a time
  bool spooled_ = false;  // a run entered the spool since the uploader last looked; guarded by mu_
  // The slots of spooled runs, by run id, until their run is delivered or set aside. Held
  // from spooling to reporting, so a slot's report never overtakes its run's set-aside.
  std::mutex delivery_mu_;
  std::map<std::string, v1::JobSlot> awaiting_;  // guarded by delivery_mu_

  std::thread session_, scheduler_, uploader_;
  std::unique_ptr<monitor::MonitorObserver> monitor_observer_;
  std::unique_ptr<monitor::MonitorRunner> monitor_;
};

}  // namespace devtime::agent
