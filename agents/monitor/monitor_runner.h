// Runs neuron-monitor as a supervised child and turns its stream into window runs.
//
// The child runs through /bin/sh -c in its own process group; its stdout is read line by line
// (NDJSON, B1), its stderr logged line by line. When it exits it is restarted after a backoff
// (1 s, doubling to max_backoff_seconds; back to 1 s after it ran for a minute). Each line is
// parsed (monitor_report.h) and folded (window_folder.h); a line it cannot use is a warning
// and a counted problem, never a stop. Closed windows go to `deliver` (the daemon spools
// them); the open windows are checkpointed to `state_dir`/monitor/open.ckpt (durably, at most
// every 5 s of wall time and after each closed window), so a restarted agent continues them:
// nothing counted twice, nothing lost beyond the last few seconds.
//
// Thread-safety: Start/Stop from one thread; callbacks come from the reader thread.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "agents/monitor/monitor_config.h"
#include "agents/monitor/monitor_report.h"
#include "agents/monitor/window_folder.h"
#include "agents/monitor/window_run.h"
#include "devtime/v1/run.pb.h"

namespace devtime::agent::monitor {

// What the runner saw, for the agent's metrics (bounded labels: model comes from the
// mapping in agent.yaml, kinds from the fixed sets in the format).
class MonitorObserver {
 public:
  virtual ~MonitorObserver() = default;
  // outcome: "used", "not_json", "unusable_app", "unmapped_app"
  virtual void Line(const std::string& outcome, int count) = 0;
  virtual void Period(const std::string& model, const AppReport& app) = 0;
  virtual void ChildRestart() = 0;
  virtual void WindowClosed(const std::string& model) = 0;
};

struct RunnerHooks {
  // Stores a closed window's run durably (the spool); an error is logged and the window kept
  // in the checkpoint to be tried again at the next line.
  std::function<absl::Status(const v1::RunSummary&)> deliver;
  std::function<void(const std::string&)> log;
  // Durable file replacement (the daemon's ReplaceFileDurably).
  std::function<absl::Status(const std::filesystem::path&, const std::string&)> write_file;
  MonitorObserver* observer = nullptr;  // may be null
};

class MonitorRunner {
 public:
  MonitorRunner(MonitorConfig config, RunContext context, std::filesystem::path state_dir,
                RunnerHooks hooks);
  ~MonitorRunner();
  absl::Status Start();
  void Stop();

  // Folds one line (the reader calls this; tests and benchmarks call it directly).
  void HandleLine(std::string_view line);

 private:
  void Supervise();
  // Runs the child once, reading until it exits or Stop; its exit status, described.
  std::string RunChildOnce();
  void Checkpoint(bool force);
  void DeliverClosed(std::vector<WindowSummary> closed);

  const MonitorConfig config_;
  const RunContext context_;
  const std::filesystem::path dir_;
  RunnerHooks hooks_;
  std::filesystem::path config_path_;
  std::unique_ptr<WindowFolder> folder_;
  std::vector<WindowSummary> undelivered_;
  std::chrono::steady_clock::time_point last_checkpoint_{};
  std::atomic<bool> stopping_{false};
  std::mutex child_mu_;
  int child_pgid_ = 0;  // guarded by child_mu_
  std::thread thread_;
};

}  // namespace devtime::agent::monitor
