#include "agents/daemon/daemon.h"

#include <sys/resource.h>

#include <iostream>
#include <random>

#include "absl/strings/numbers.h"
#include "agents/contract/run_summary_builder.h"
#include "agents/daemon/daemon_internal.h"
#include "agents/daemon/delivery_errors.h"
#include "agents/daemon/files.h"
#include "agents/daemon/job_runner.h"
#include "agents/daemon/pins.h"
#include "agents/daemon/trace_store.h"
#include "agents/daemon/uploader.h"
#include "proto/wire/channel.h"
#include "proto/wire/job_spec.h"
#include "proto/wire/limits.h"
#include "proto/wire/time.h"
#include "proto/wire/validation.h"

namespace devtime::agent {
namespace {

namespace fs = std::filesystem;

constexpr auto kSchedulerTick = std::chrono::milliseconds(200);
constexpr const char* kMarkerSuffix = ".slot";
constexpr const char* kRestarted = "agent restarted during the run";
constexpr std::size_t kMaxQueuedReports = 10'000;
constexpr std::size_t kMaxSlotReasonBytes = 1'000;

google::protobuf::Timestamp ToProto(absl::Time t) {
  return wire::ToTimestamp(absl::ToChronoTime(t));
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// A run for a job that produced nothing usable: history, never data.
v1::RunSummary FailedRun(const v1::JobSpec& job, const v1::AgentIdentity& agent,
                         const std::string& run_id, absl::Time started, absl::Time finished,
                         const std::string& reason) {
  v1::RunSummary run;
  auto* id = run.mutable_identity();
  id->set_run_id(run_id);
  id->set_job(job.name());
  id->set_model(job.model());
  id->set_workload(job.workload());
  id->set_host(agent.host());
  id->set_instance_type(agent.instance_type());
  *run.mutable_started_at() = ToProto(started);
  *run.mutable_finished_at() = ToProto(finished);
  run.set_status(v1::RUN_STATUS_FAILED);
  run.set_status_reason(wire::PrintableText(reason, 4'000));
  return run;
}

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

}  // namespace

// Jobs' pipes, traces, the spool and the session hold descriptors: the soft limit (often
// 1,024) up to the hard one, as the collector does (issue 26).
void RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &limit);  // best effort: the old limit still works
  }
}

// Where running jobs' process groups are recorded (job_runner.h, KillLeftoverJobs).
fs::path JobPidDir(const AgentConfig& config) { return config.state_dir / "jobs"; }

void DaemonLog(const std::string& message) {
  std::cerr << "devtime-agent: " << message << std::endl;
}

v1::JobSlot FailedSlot(v1::JobSlot slot, const std::string& why) {
  const std::string before = slot.reason().empty() ? "" : slot.reason() + "; ";
  slot.set_outcome(v1::SLOT_OUTCOME_FAILED);
  slot.set_reason(wire::PrintableText(before + why, kMaxSlotReasonBytes));
  return slot;
}

AgentDaemon::AgentDaemon(AgentConfig config, RetryPolicy retry, wire::Env& env)
    : config_(std::move(config)), retry_(retry), env_(env) {
  identity_.set_name(config_.name);
  identity_.set_host(config_.host);
  identity_.set_instance_type(config_.instance_type);
  for (const auto& [key, value] : config_.labels) (*identity_.mutable_labels())[key] = value;
  identity_.set_version("0.1.0");
}

absl::StatusOr<std::unique_ptr<AgentDaemon>> AgentDaemon::Start(const AgentConfig& config,
                                                                const RetryPolicy& retry,
                                                                wire::Env& env) {
  RaiseFileLimit();
  std::unique_ptr<AgentDaemon> daemon(new AgentDaemon(config, retry, env));
  auto spool = Spool::Open(config.spool_dir, config.spool_max_bytes, env);
  if (!spool.ok()) return spool.status();
  daemon->spool_ = std::move(*spool);
  if (!config.metrics_listen.empty()) {
    auto metrics = AgentMetrics::Start(config.metrics_listen);
    if (!metrics.ok()) return metrics.status();
    daemon->metrics_ = std::move(*metrics);
  }
  std::error_code ec;
  fs::create_directories(daemon->MarkerDir(), ec);
  fs::create_directories(config.work_dir, ec);
  if (ec)
    return absl::InternalError("cannot create " + config.work_dir.string() + ": " + ec.message());
  auto creds = wire::LoadClientCredentials(config.token_file, config.tls_ca, config.tls_cert,
                                           config.tls_key);
  if (!creds.ok()) return creds.status();
  auto channel = wire::ConnectCollector(config.collector, *creds);
  if (!channel.ok()) return channel.status();
  daemon->channel_ = *channel;
  // What a crash or a failed write left half-written is worth nothing and takes room.
  RemoveTempFiles(config.state_dir, env);
  RemoveTempFiles(daemon->MarkerDir(), env);
  daemon->LoadAssignments();
  // Before any slot is reported or retried: jobs a SIGKILLed agent left running (issue 26).
  if (int killed = KillLeftoverJobs(JobPidDir(config)); killed > 0) {
    DaemonLog("killed " + std::to_string(killed) + " job process group(s) left running by the " +
              "previous agent");
  }
  daemon->RecoverUnfinishedSlots();
  daemon->session_ = std::thread([d = daemon.get()] { d->SessionLoop(); });
  daemon->scheduler_ = std::thread([d = daemon.get()] { d->SchedulerLoop(); });
  daemon->uploader_ = std::thread([d = daemon.get()] { d->UploaderLoop(); });
  if (config.monitor.enabled) {
    if (auto monitor = daemon->StartMonitor(); !monitor.ok()) return monitor;
  }
  DaemonLog("agent " + config.name + " on " + config.host + " started; collector " +
            config.collector + ", " + std::to_string(daemon->spool_->Stats().runs) +
            " runs spooled");
  return daemon;
}

AgentDaemon::~AgentDaemon() {
  Stop();
  Wait();
}

void AgentDaemon::Stop() {
  stopping_ = true;
  if (monitor_) monitor_->Stop();  // its last windows are spooled or checkpointed
  std::lock_guard lock(mu_);
  if (session_context_) session_context_->TryCancel();
  changed_.notify_all();
}

void AgentDaemon::Wait() {
  std::lock_guard waiting(wait_mu_);  // a second caller waits for the first to finish
  for (auto* thread : {&session_, &scheduler_, &uploader_}) {
    if (thread->joinable()) thread->join();
  }
  // The scheduler, which starts runners, is gone: every runner thread is in runners_.
  std::map<int, std::thread> runners;
  {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return active_runners_ == 0; });
    runners.swap(runners_);
    finished_runners_.clear();
  }
  // Joined, not detached: a runner's last instructions (unlocking mu_, its closure's
  // destructors) must end before the daemon, and the process, do.
  for (auto& [id, thread] : runners) thread.join();
}

void AgentDaemon::JoinFinishedRunners() {
  std::vector<std::thread> finished;
  {
    std::lock_guard lock(mu_);
    for (int id : finished_runners_) {
      auto it = runners_.find(id);
      if (it == runners_.end()) continue;
      finished.push_back(std::move(it->second));
      runners_.erase(it);
    }
    finished_runners_.clear();
  }
  for (auto& thread : finished) thread.join();
}

void AgentDaemon::StartRunner(const std::string& job, std::function<void()> work) {
  const int id = next_runner_id_++;
  running_[job] = id;
  ++active_runners_;
  runners_[id] = std::thread([this, id, job, work = std::move(work)] {
    work();
    std::lock_guard lock(mu_);
    // Unless its last report freed the job already, and another runner of it may have started.
    if (auto it = running_.find(job); it != running_.end() && it->second == id) running_.erase(it);
    --active_runners_;
    finished_runners_.push_back(id);
    changed_.notify_all();
  });
}

bool AgentDaemon::SleepUnlessStopping(std::chrono::milliseconds duration) {
  std::unique_lock lock(mu_);
  return env_.SleepUnless(lock, changed_, duration, [&] { return stopping_.load(); });
}

// ---- assignments ----------------------------------------------------------------------------

void AgentDaemon::LoadAssignments() {
  auto bytes = ReadWholeFile(config_.state_dir / "assignments.pb");
  if (!bytes) return;  // none yet: the first start
  v1::Assignments assignments;
  if (!assignments.ParseFromString(*bytes)) {
    DaemonLog("ignoring unreadable " + (config_.state_dir / "assignments.pb").string());
    return;
  }
  UpdateAssignments(assignments);
  DaemonLog("running " + std::to_string(assignments.jobs_size()) +
            " jobs from the last known assignments until the collector answers");
}

void AgentDaemon::SaveAssignments(const v1::Assignments& assignments) {
  fs::path path = config_.state_dir / "assignments.pb";
  auto saved = ReplaceFileDurably(path, assignments.SerializeAsString(), env_);
  if (!saved.ok()) DaemonLog("cannot save assignments: " + std::string(saved.message()));
}

void AgentDaemon::UpdateAssignments(const v1::Assignments& assignments) {
  absl::Time now = env_.Now();
  std::lock_guard lock(mu_);
  std::map<std::string, ScheduledJob> jobs;
  for (const auto& spec : assignments.jobs()) {
    auto old = jobs_.find(spec.name());
    bool same =
        old != jobs_.end() && old->second.spec.SerializeAsString() == spec.SerializeAsString();
    absl::Time next =
        same ? old->second.next_slot : wire::NextSlot(spec, now).value_or(absl::InfiniteFuture());
    jobs[spec.name()] = ScheduledJob{spec, next};
    if (metrics_) metrics_->DeclareJob(spec.name());
  }
  jobs_ = std::move(jobs);
}

// ---- the session with the collector ----------------------------------------------------------

void AgentDaemon::SessionLoop() {
  auto backoff = std::chrono::milliseconds(500);
  std::mt19937 jitter(std::random_device{}());
  while (!stopping_) {
    auto stub = v1::Collector::NewStub(channel_);
    grpc::ClientContext context;
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
      session_context_ = &context;
    }
    auto stream = stub->AgentSession(&context);
    v1::AgentMessage hello;
    *hello.mutable_hello()->mutable_identity() = identity_;
    bool up = stream->Write(hello);
    std::atomic<bool> session_over{false};
    std::thread writer;
    if (up) {
      if (metrics_) metrics_->Connected(true);
      // Slot reports go out as they come; one that cannot be written stays queued.
      writer = std::thread([&] {
        std::unique_lock lock(mu_);
        while (true) {
          changed_.wait(lock, [&] { return stopping_ || session_over || !reports_.empty(); });
          if (stopping_ || session_over) break;
          v1::AgentMessage message;
          *message.mutable_slot() = reports_.front();
          lock.unlock();
          bool written = stream->Write(message);
          lock.lock();
          if (!written) break;
          SlotReported(reports_.front());
          reports_.pop_front();
        }
      });
      v1::CollectorMessage message;
      while (stream->Read(&message)) {
        backoff = std::chrono::milliseconds(500);
        if (message.has_assignments()) {
          SaveAssignments(message.assignments());
          UpdateAssignments(message.assignments());
        } else if (message.has_run_now() && !message.run_now().hunt_tag().empty()) {
          std::lock_guard lock(mu_);
          hunt_runs_.push_back(message.run_now());
          changed_.notify_all();
        } else if (message.has_run_now()) {
          std::lock_guard lock(mu_);
          run_now_.push_back(message.run_now().job());
          changed_.notify_all();
        }
      }
    }
    {
      std::lock_guard lock(mu_);
      session_over = true;
      changed_.notify_all();
    }
    if (writer.joinable()) writer.join();
    grpc::Status status = stream->Finish();
    {
      std::lock_guard lock(mu_);
      session_context_ = nullptr;
    }
    if (metrics_) metrics_->Connected(false);
    if (stopping_) break;
    auto wait = std::chrono::milliseconds(
        std::uniform_int_distribution<long long>(backoff.count() / 2, backoff.count())(jitter));
    DaemonLog("session with collector " + config_.collector + " ended (" + wire::Describe(status) +
              "); reconnecting in " + std::to_string(wait.count()) + " ms");
    SleepUnlessStopping(wait);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(30'000));
  }
}

void AgentDaemon::Report(v1::JobSlot slot, bool frees_job) {
  slot.set_host(config_.host);
  std::lock_guard lock(mu_);
  if (frees_job) running_.erase(slot.job());
  if (reports_.size() >= kMaxQueuedReports) reports_.pop_front();  // the collector infers "missed"
  reports_.push_back(std::move(slot));
  changed_.notify_all();
}

// ---- scheduling and running -------------------------------------------------------------------

void AgentDaemon::SchedulerLoop() {
  while (true) {
    {
      // Woken early by a run-now (or by a fake clock moving): the loop re-checks every slot.
      std::unique_lock lock(mu_);
      env_.WaitFor(lock, changed_, kSchedulerTick, [&] {
        return stopping_.load() || !run_now_.empty() ||
               (!hunt_runs_.empty() && !running_.count(hunt_runs_.front().job()));
      });
      if (stopping_) break;
    }
    JoinFinishedRunners();
    absl::Time now = env_.Now();
    std::lock_guard lock(mu_);
    for (auto& [name, job] : jobs_) {
      if (job.next_slot + wire::JitterFor(job.spec, config_.host) > now) continue;
      StartSlot(job.spec, job.next_slot, false);
      job.next_slot = wire::NextSlot(job.spec, job.next_slot).value_or(absl::InfiniteFuture());
    }
    while (!run_now_.empty()) {
      std::string name = run_now_.front();
      run_now_.pop_front();
      auto it = jobs_.find(name);
      if (it == jobs_.end()) {
        DaemonLog("run-now for job " + name + ", which is not assigned to this agent: ignored");
        continue;
      }
      StartSlot(it->second.spec, now, true);
    }
    // Culprit runs wait for their job instead of being skipped: the hunt waits for each.
    while (!hunt_runs_.empty() && !running_.count(hunt_runs_.front().job())) {
      v1::RunNowRequest request = hunt_runs_.front();
      hunt_runs_.pop_front();
      auto it = jobs_.find(request.job());
      if (it == jobs_.end()) {
        DaemonLog("culprit run of job " + request.job() + ", which is not assigned: ignored");
        continue;
      }
      StartRunner(request.job(),
                  [this, job = it->second.spec, request] { RunHuntSlot(job, request); });
    }
  }
}

void AgentDaemon::RunHuntSlot(const v1::JobSpec& spec, const v1::RunNowRequest& request) {
  const v1::JobSpec job = wire::WithDefaults(spec);
  std::map<std::string, std::string> recorded = HuntEnvironment(request);
  auto pinned = ApplyPins(job, {request.pins().begin(), request.pins().end()});
  absl::Status resolved = pinned.status();
  if (resolved.ok() && request.resolve_size() > 0) {
    auto values = ResolveSources(job, request, config_.work_dir / job.name() / "pin-sources",
                                 std::chrono::seconds(job.timeout_seconds()));
    resolved = values.status();
    if (values.ok()) recorded.insert(values->begin(), values->end());
  }
  if (resolved.ok()) {
    v1::JobSpec once = *pinned;
    once.set_retries(0);  // the hunt re-queues a failed run itself
    RunSlot(once, env_.Now(), true, 0, recorded);
  } else {
    v1::JobSlot slot;
    slot.set_job(job.name());
    *slot.mutable_slot_time() = ToProto(env_.Now());
    slot.set_run_id(NewRunId());
    slot.set_run_now(true);
    *slot.mutable_started_at() = ToProto(env_.Now());
    slot.mutable_hunt_environment()->insert(recorded.begin(), recorded.end());
    FinishAttempt(job, std::move(slot), std::string(resolved.message()), env_.Now(), true);
  }
}

void AgentDaemon::StartSlot(const v1::JobSpec& job, absl::Time slot_time, bool run_now) {
  if (running_.count(job.name())) {
    v1::JobSlot slot;
    slot.set_job(job.name());
    *slot.mutable_slot_time() = ToProto(slot_time);
    slot.set_outcome(v1::SLOT_OUTCOME_SKIPPED_STILL_RUNNING);
    slot.set_reason("the previous run of this job was still running");
    slot.set_run_now(run_now);
    slot.set_host(config_.host);
    reports_.push_back(slot);
    changed_.notify_all();
    if (metrics_) metrics_->JobFinished(job.name(), "skipped_still_running", 0);
    return;
  }
  StartRunner(job.name(), [this, job, slot_time, run_now] { RunSlot(job, slot_time, run_now, 0); });
}

void AgentDaemon::RunSlot(v1::JobSpec job, absl::Time slot_time, bool run_now,
                          uint32_t first_attempt,
                          const std::map<std::string, std::string>& hunt_environment) {
  job = wire::WithDefaults(job);
  // A normal run's {pin:KEY} take the pins' defaults (a culprit run's are already replaced).
  auto pinned = ApplyPins(job, {});
  if (pinned.ok()) job = *pinned;
  for (uint32_t attempt = first_attempt; attempt <= job.retries() && !stopping_; ++attempt) {
    const std::string run_id = NewRunId();  // fixed before the job starts: retries of the
                                            // upload are the same run
    fs::path dir = config_.work_dir / job.name() / run_id;
    fs::path output = dir / "output";
    absl::Time started = env_.Now();
    v1::JobSlot slot;
    slot.set_job(job.name());
    *slot.mutable_slot_time() = ToProto(slot_time);
    slot.set_run_id(run_id);
    slot.set_run_now(run_now);
    *slot.mutable_started_at() = ToProto(started);
    slot.set_outcome(v1::SLOT_OUTCOME_RUNNING);
    slot.mutable_hunt_environment()->insert(hunt_environment.begin(), hunt_environment.end());
    MarkInFlight(slot, attempt);
    Report(slot);
    if (!pinned.ok()) {
      FinishAttempt(job, std::move(slot), std::string(pinned.status().message()), env_.Now(), true);
      break;
    }

    std::error_code ec;
    fs::create_directories(output, ec);
    JobProcessSpec process;
    std::string steps = std::to_string(job.capture_steps());
    process.command = Replace(
        Replace(Replace(Replace(job.command(), "{output_dir}", output.string()), "{steps}", steps),
                "{run_id}", run_id),
        "{python}", config_.harness_python);
    process.command = Replace(process.command, "{harness}", config_.harness.string());
    process.env = {job.env().begin(), job.env().end()};
    process.env["DEVTIME_OUTPUT_DIR"] = output.string();
    process.env["DEVTIME_RUN_ID"] = run_id;
    process.env["DEVTIME_JOB"] = job.name();
    process.env["DEVTIME_STEPS"] = steps;
    process.env["DEVTIME_MODEL"] = job.model();
    process.env["DEVTIME_WORKLOAD"] = job.workload();
    process.work_dir = dir;
    process.timeout = std::chrono::seconds(job.timeout_seconds());
    process.cancel = &stopping_;
    process.clock = &env_;
    process.pid_dir = JobPidDir(config_);
    auto outcome = RunJobProcess(process);

    std::string failure;
    if (!outcome.ok()) {
      failure = std::string(outcome.status().message());
    } else if (!outcome->succeeded() && stopping_) {
      // Ended by the stop: its marker stays, and the next start reports the slot from what
      // the job left (one run per run id, whichever way the agent went down).
      DaemonLog(job.name() + " run " + run_id + ": the agent stopped while the job ran; the next " +
                "start reports it");
      return;
    } else if (!outcome->succeeded()) {
      failure = outcome->Describe();
    }
    if (FinishAttempt(job, std::move(slot), failure, env_.Now(), attempt >= job.retries())) break;
  }
}

bool AgentDaemon::FinishAttempt(const v1::JobSpec& job, v1::JobSlot slot, std::string failure,
                                absl::Time finished, bool last_attempt) {
  const std::string& run_id = slot.run_id();
  const absl::Time started = FromProto(slot.started_at());
  const fs::path output = config_.work_dir / job.name() / run_id / "output";
  v1::RunSummary run;
  // The RunSummary sums the operators past its limit into one row; the library does it as it
  // builds the rows, so a job with a million distinct names never holds a million (issue 23).
  trace::SummarizeOptions options;
  options.max_op_rows = wire::kMaxOps;
  auto summary =
      failure.empty() ? trace::Summarize(output, options) : absl::CancelledError(failure);
  if (failure.empty() && !summary.ok()) {
    failure = "no usable profiler output in " + output.string() + ": " +
              std::string(summary.status().message());
  } else if (failure.empty()) {
    RunLabels labels;
    labels.run_id = run_id;
    labels.job = job.name();
    labels.model = job.model();
    labels.workload = job.workload();
    labels.host = config_.host;
    labels.instance_type = config_.instance_type;
    labels.started_at = absl::ToChronoTime(started);
    labels.finished_at = absl::ToChronoTime(finished);
    run = BuildRunSummary(*summary, labels);
    if (auto kept = KeepRunTraces(config_, output, &run, env_);
        !kept.ok()) {  // links stay in work_dir
      DaemonLog(job.name() + " run " + run_id +
                ": trace files not kept: " + std::string(kept.message()));
    }
  }
  if (!failure.empty()) run = FailedRun(job, identity_, run_id, started, finished, failure);
  // A culprit run says so, and what it pinned: the collector keeps it out of its series.
  for (const auto& [key, value] : slot.hunt_environment()) {
    (*run.mutable_environment())[key] = value;
  }
  if (failure.empty() && run.status() == v1::RUN_STATUS_INVALID) {
    failure = "invalid capture: " + run.status_reason();
  }
  slot.set_outcome(failure.empty() ? v1::SLOT_OUTCOME_SUCCEEDED : v1::SLOT_OUTCOME_FAILED);
  slot.set_reason(wire::PrintableText(failure, kMaxSlotReasonBytes));
  *slot.mutable_finished_at() = ToProto(finished);
  if (auto spooled = SpoolAndReport(run, slot, last_attempt); !spooled.ok()) {
    failure = std::string(spooled.message());
  }
  if (metrics_) {
    metrics_->JobFinished(job.name(), failure.empty() ? "succeeded" : "failed",
                          absl::ToDoubleSeconds(finished - started));
  }
  DaemonLog(job.name() + " run " + run_id + ": " + (failure.empty() ? "succeeded" : failure));
  return failure.empty();
}

// ---- slots in flight across a restart ----------------------------------------------------

fs::path AgentDaemon::MarkerDir() const { return config_.state_dir / "in_flight"; }

void AgentDaemon::MarkInFlight(const v1::JobSlot& slot, uint32_t attempt) {
  // <run id>.<attempt>.slot: the attempt says how many of the job's retries are left.
  fs::path marker = MarkerDir() / (slot.run_id() + "." + std::to_string(attempt) + kMarkerSuffix);
  auto written = ReplaceFileDurably(marker, slot.SerializeAsString(), env_);
  if (!written.ok()) {
    DaemonLog("run " + slot.run_id() + " is not recoverable if the agent stops during it: " +
              std::string(written.message()));
    return;
  }
  std::lock_guard lock(mu_);
  markers_[slot.run_id()] = marker;
}

void AgentDaemon::SlotReported(const v1::JobSlot& slot) {
  if (slot.outcome() == v1::SLOT_OUTCOME_RUNNING) return;
  auto it = markers_.find(slot.run_id());
  if (it == markers_.end()) return;
  (void)env_.Remove(it->second);
  markers_.erase(it);
}

void AgentDaemon::RecoverUnfinishedSlots() {
  std::vector<fs::path> markers = env_.ListDirectory(MarkerDir());
  std::erase_if(markers, [](const fs::path& path) { return path.extension() != kMarkerSuffix; });
  std::lock_guard lock(mu_);
  for (const fs::path& marker : markers) {
    v1::JobSlot slot;
    auto bytes = ReadWholeFile(marker);
    const std::string attempt_text = marker.stem().extension().string();  // ".<attempt>"
    uint32_t attempt = 0;
    if (!bytes || !slot.ParseFromString(*bytes) || slot.run_id().empty() ||
        !absl::SimpleAtoi(attempt_text.substr(std::min<std::size_t>(1, attempt_text.size())),
                          &attempt)) {
      DaemonLog("ignoring unreadable " + marker.string());
      (void)env_.Remove(marker);
      continue;
    }
    markers_[slot.run_id()] = marker;
    v1::JobSpec job;
    job.set_name(slot.job());
    auto assigned = jobs_.find(slot.job());
    if (assigned != jobs_.end()) job = wire::WithDefaults(assigned->second.spec);
    // The same job may have left two markers only if a marker outlived its report; its
    // retries then start from the last one.
    const bool retry = assigned != jobs_.end() && !running_.count(slot.job());
    StartRunner(slot.job(), [this, job, slot, attempt, retry] {
      const fs::path output = config_.work_dir / slot.job() / slot.run_id() / "output";
      // The harness writes run.json last: with it, the run finished while the agent was away.
      const fs::path run_json = output / "run.json";
      const bool complete = fs::exists(run_json);
      DaemonLog("run " + slot.run_id() + " of " + slot.job() +
                " was running when the agent stopped; " +
                (complete ? "its output is complete" : "it is reported failed"));
      const bool retries_left = retry && slot.hunt_environment().empty() && attempt < job.retries();
      bool succeeded = FinishAttempt(
          job, slot, complete ? "" : kRestarted,
          complete ? absl::FromChrono(ModificationTime(run_json)) : env_.Now(), !retries_left);
      if (!succeeded && retries_left) {
        RunSlot(job, FromProto(slot.slot_time()), slot.run_now(), attempt + 1);
      }
    });
  }
}

// ---- delivery ------------------------------------------------------------------------------

absl::Status AgentDaemon::SpoolAndReport(const v1::RunSummary& run, v1::JobSlot slot,
                                         bool last_attempt) {
  // The collector's own rules: a run it would refuse never enters the spool.
  absl::Status spooled = wire::ValidateRun(run);
  if (!spooled.ok()) {
    spooled = absl::InvalidArgumentError("the run is not valid and was not spooled: " +
                                         std::string(spooled.message()));
  }
  // A full spool or disk is waited out with backoff (uploads, or the operator, make room):
  // the run and the job's output stay until then.
  bool waited = false;
  for (auto backoff = retry_.first_backoff; spooled.ok();
       backoff = std::min(backoff * 2, retry_.max_backoff)) {
    {
      std::lock_guard delivery(delivery_mu_);  // from spooling to reporting: see awaiting_
      spooled = spool_->Put(run);
      if (spooled.ok()) {
        // An older attempt's run of the same slot no longer speaks for it.
        std::erase_if(awaiting_, [&](const auto& entry) {
          return entry.second.job() == slot.job() && entry.second.slot_time().SerializeAsString() ==
                                                         slot.slot_time().SerializeAsString();
        });
        awaiting_[run.identity().run_id()] = slot;
        Report(slot, last_attempt || slot.outcome() == v1::SLOT_OUTCOME_SUCCEEDED);
        break;
      }
    }
    if (!absl::IsResourceExhausted(spooled)) break;
    if (stopping_) return spooled;  // not reported: the slot's marker brings it back at start
    if (!waited) {
      waited = true;
      if (metrics_) metrics_->SpoolFull();
      DaemonLog("run " + run.identity().run_id() +
                " waits for room in the spool, the job's output " +
                "kept: " + std::string(spooled.message()));
    }
    SleepUnlessStopping(backoff);
    spooled = absl::OkStatus();
  }
  if (!spooled.ok()) {
    Report(FailedSlot(std::move(slot), std::string(spooled.message())), last_attempt);
  }
  std::lock_guard lock(mu_);
  spooled_ = true;  // wake the uploader
  changed_.notify_all();
  return spooled;
}

}  // namespace devtime::agent
