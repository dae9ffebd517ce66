#include "agents/daemon/job_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "agents/daemon/spawn.h"

extern char** environ;  // Environment() starts from the agent's own

namespace devtime::agent {
namespace {

constexpr std::size_t kTailBytes = 4096;

std::string Tail(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  auto size = static_cast<std::size_t>(in.tellg());
  std::size_t start = size > kTailBytes ? size - kTailBytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string tail(size - start, '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  return tail;
}

std::string LastLine(const std::string& text) {
  std::size_t end = text.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "";
  std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// The agent's environment with `overrides` applied, as "KEY=VALUE" strings.
std::vector<std::string> Environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    if (!overrides.count(key)) env.push_back(entry);
  }
  for (const auto& [key, value] : overrides) env.push_back(key + "=" + value);
  return env;
}

// Field 22 of /proc/PID/stat (start time in clock ticks since boot): with the pid, names
// one process (pids are reused, start times of a reused pid differ). "" when it is gone.
std::string StartTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  auto after_name = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (after_name == std::string::npos) return "";
  std::istringstream fields(stat.substr(after_name + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  return field;
}

std::filesystem::path PidFile(const std::filesystem::path& dir, pid_t pid) {
  return dir / (std::to_string(pid) + ".pgid");
}

// Records job group `pid` (its leader's pid and start time), written whole or not at all.
void RecordJob(const std::filesystem::path& dir, pid_t pid) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  auto path = PidFile(dir, pid);
  auto temp = path;
  temp += ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << pid << " " << StartTime(pid) << "\n";
  }
  std::filesystem::rename(temp, path, ec);
}

bool GroupAlive(pid_t pgid) { return kill(-pgid, 0) == 0 || errno == EPERM; }

}  // namespace

int KillLeftoverJobs(const std::filesystem::path& pid_dir, std::chrono::milliseconds wait) {
  std::error_code ec;
  std::vector<pid_t> killed;
  for (const auto& entry : std::filesystem::directory_iterator(pid_dir, ec)) {
    std::ifstream in(entry.path());
    pid_t pid = 0;
    std::string started;
    in >> pid >> started;
    if (pid > 1 && entry.path().extension() == ".pgid") {
      // A pid is not reused while a process group of that id exists; so the group is the job's
      // when its leader is the one recorded, or when the leader is gone but the group is not.
      const std::string now = StartTime(pid);
      if ((now.empty() || now == started) && GroupAlive(pid)) {
        kill(-pid, SIGKILL);
        killed.push_back(pid);
      }
    }
    std::filesystem::remove(entry.path(), ec);
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (pid_t pgid : killed) {
    // Not our children (their parent died): init reaps them; wait until it has.
    while (GroupAlive(pgid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return static_cast<int>(killed.size());
}

std::string JobOutcome::Describe() const {
  std::string text;
  if (timed_out) {
    text = "timed out after " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(elapsed).count()) +
           " s (killed)";
  } else if (signal != 0) {
    text = "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  } else {
    text = "exit code " + std::to_string(exit_code);
  }
  std::string last = LastLine(stderr_tail);
  if (!succeeded() && !last.empty()) text += ": " + last.substr(0, 300);
  return text;
}

absl::StatusOr<JobOutcome> RunJobProcess(const JobProcessSpec& spec) {
  std::error_code ec;
  std::filesystem::create_directories(spec.work_dir, ec);
  if (ec) {
    return absl::InternalError("cannot create job folder " + spec.work_dir.string() + ": " +
                               ec.message());
  }
  auto out_log = spec.work_dir / "stdout.log";
  auto err_log = spec.work_dir / "stderr.log";

  SpawnSpec child;
  child.argv = {"/bin/sh", "-c", spec.command};
  child.stdout_path = out_log;
  child.stderr_path = err_log;
  child.truncate_output = true;
  child.work_dir = spec.work_dir;
  child.own_process_group = true;  // so the timeout reaches everything the command started
  child.env = Environment(spec.env);

  wire::Env& env = *spec.clock;
  const auto start = env.SteadyNow();
  auto spawned = Spawn(child);
  if (!spawned.ok()) {
    return absl::InternalError("cannot start job: " + std::string(spawned.status().message()));
  }
  pid_t pid = *spawned;
  if (!spec.pid_dir.empty()) RecordJob(spec.pid_dir, pid);

  JobOutcome outcome;
  int status = 0;
  bool terminated = false, killed = false;
  std::chrono::steady_clock::duration terminated_at{};
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    auto elapsed = env.SteadyNow() - start;
    bool cancelled = spec.cancel != nullptr && spec.cancel->load();
    if (!terminated && (elapsed >= spec.timeout || cancelled)) {
      kill(-pid, SIGTERM);
      terminated = true;
      outcome.timed_out = !cancelled;
      terminated_at = elapsed;
    } else if (terminated && !killed && elapsed >= terminated_at + spec.kill_grace) {
      kill(-pid, SIGKILL);
      killed = true;
    }
    // Real time, not the env's: this polls the child, which runs on the real clock whatever
    // time the env says it is.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid, SIGKILL);  // whatever the command left behind in its group goes too
  if (!spec.pid_dir.empty()) std::filesystem::remove(PidFile(spec.pid_dir, pid), ec);
  outcome.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(env.SteadyNow() - start);
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  outcome.stdout_tail = Tail(out_log);
  outcome.stderr_tail = Tail(err_log);
  return outcome;
}

}  // namespace devtime::agent
