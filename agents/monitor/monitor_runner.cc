#include "agents/monitor/monitor_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace devtime::agent::monitor {
namespace fs = std::filesystem;

MonitorRunner::MonitorRunner(MonitorConfig config, RunContext context, fs::path state_dir,
                             RunnerHooks hooks)
    : config_(std::move(config)),
      context_(std::move(context)),
      dir_(std::move(state_dir) / "monitor"),
      hooks_(std::move(hooks)) {
  const absl::Time start =
      config_.replay_start > 0 ? absl::FromUnixSeconds(config_.replay_start) : absl::Now();
  folder_ = std::make_unique<WindowFolder>(config_, start);
}

MonitorRunner::~MonitorRunner() { Stop(); }

absl::Status MonitorRunner::Start() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return absl::InternalError("cannot create " + dir_.string() + ": " + ec.message());
  // Continue what the last run of the agent left open.
  std::ifstream in(dir_ / "open.ckpt", std::ios::binary);
  if (in) {
    std::stringstream bytes;
    bytes << in.rdbuf();
    absl::Time stream_time;
    std::vector<WindowSummary> open;
    if (auto s = DecodeCheckpoint(bytes.str(), stream_time, open); s.ok()) {
      hooks_.log("monitor: continuing " + std::to_string(open.size()) +
                 " open windows from the checkpoint");
      folder_->Restore(std::move(open), stream_time);
    } else {
      hooks_.log("monitor: ignoring " + (dir_ / "open.ckpt").string() + ": " +
                 std::string(s.message()));
    }
  }
  config_path_ =
      config_.config_file.empty() ? dir_ / "neuron-monitor.json" : fs::path(config_.config_file);
  if (config_.config_file.empty()) {
    if (auto s = hooks_.write_file(config_path_, NeuronMonitorConfigJson(config_)); !s.ok()) {
      return s;
    }
  }
  thread_ = std::thread([this] { Supervise(); });
  return absl::OkStatus();
}

void MonitorRunner::Stop() {
  stopping_ = true;
  {
    std::lock_guard lock(child_mu_);
    if (child_pgid_ > 0) ::kill(-child_pgid_, SIGTERM);
  }
  if (thread_.joinable()) thread_.join();
}

void MonitorRunner::DeliverClosed(std::vector<WindowSummary> closed) {
  for (auto& w : closed) undelivered_.push_back(std::move(w));
  std::vector<WindowSummary> kept;
  for (auto& w : undelivered_) {
    auto status = hooks_.deliver(ToRunSummary(w, context_));
    if (!status.ok()) {
      hooks_.log("monitor: window " + w.model + "/" + w.tag +
                 " kept for later: " + std::string(status.message()));
      kept.push_back(std::move(w));
    } else if (hooks_.observer) {
      hooks_.observer->WindowClosed(w.model);
    }
  }
  const bool any = kept.size() != undelivered_.size();
  undelivered_ = std::move(kept);
  if (any) Checkpoint(true);
}

void MonitorRunner::Checkpoint(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_checkpoint_ < std::chrono::seconds(5)) return;
  last_checkpoint_ = now;
  std::vector<WindowSummary> open = folder_->Open();
  // Undelivered closed windows travel in the checkpoint too: a restart delivers them.
  for (const auto& w : undelivered_) open.push_back(w);
  auto status = hooks_.write_file(dir_ / "open.ckpt",
                                  EncodeCheckpoint(folder_->stream_time(), open, context_));
  if (!status.ok()) hooks_.log("monitor: checkpoint not written: " + std::string(status.message()));
}

void MonitorRunner::HandleLine(std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  auto report = ParseMonitorLine(line);
  if (!report.ok()) {
    hooks_.log("monitor: line not used: " + std::string(report.status().message()));
    if (hooks_.observer) hooks_.observer->Line("not_json", 1);
    return;
  }
  FoldStats stats;
  auto closed = folder_->Add(*report, stats);
  for (const auto& warning : stats.warnings) hooks_.log("monitor: " + warning);
  if (hooks_.observer) {
    hooks_.observer->Line("used", 1);
    if (stats.apps_unusable) hooks_.observer->Line("unusable_app", stats.apps_unusable);
    if (stats.apps_unmapped) hooks_.observer->Line("unmapped_app", stats.apps_unmapped);
    for (const auto& app : report->apps) {
      if (auto mapped = MapApplication(config_, app.tag)) {
        hooks_.observer->Period(mapped->first, app);
      }
    }
  }
  if (!closed.empty() || !undelivered_.empty()) DeliverClosed(std::move(closed));
  Checkpoint(false);
}

std::string MonitorRunner::RunChildOnce() {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return "pipe failed";
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return "pipe failed";
  }
  std::string command = config_.command;
  if (auto at = command.find("{config}"); at != std::string::npos) {
    command.replace(at, 8, config_path_.string());
  } else {
    command += " -c '" + config_path_.string() + "'";
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(err[0]);
    return "fork failed";
  }
  {
    std::lock_guard lock(child_mu_);
    child_pgid_ = pid;
    if (stopping_) ::kill(-pid, SIGTERM);
  }
  std::string out_buf, err_buf;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char chunk[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, 500) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, chunk, sizeof chunk);
      std::string& buf = i == 0 ? out_buf : err_buf;
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      buf.append(chunk, static_cast<std::size_t>(n));
      std::size_t start = 0;
      for (std::size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::string_view line(buf.data() + start, nl - start);
        if (i == 0) {
          HandleLine(line);
        } else {
          hooks_.log("neuron-monitor: " + std::string(line));
        }
      }
      buf.erase(0, start);
      if (buf.size() > (64u << 20)) {  // a line beyond 64 MiB is not a report
        hooks_.log("monitor: dropping a line over 64 MiB");
        if (hooks_.observer) hooks_.observer->Line("not_json", 1);
        buf.clear();
      }
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  {
    std::lock_guard lock(child_mu_);
    child_pgid_ = 0;
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended";
}

void MonitorRunner::Supervise() {
  double backoff = 1;
  while (!stopping_) {
    folder_->Resume(config_.replay_start > 0 ? absl::InfinitePast() : absl::Now());
    const auto started = std::chrono::steady_clock::now();
    hooks_.log("monitor: starting " + config_.command);
    const std::string how = RunChildOnce();
    Checkpoint(true);
    if (stopping_) break;
    if (hooks_.observer) hooks_.observer->ChildRestart();
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(60)) backoff = 1;
    std::ostringstream wait;  // "2 s", not std::to_string's "2.000000 s"
    wait << backoff;
    hooks_.log("monitor: neuron-monitor " + how + "; restarting in " + wait.str() + " s");
    for (int waited = 0; waited < backoff * 10 && !stopping_; ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    backoff = std::min(backoff * 2, config_.max_backoff_seconds);
  }
}

}  // namespace devtime::agent::monitor
