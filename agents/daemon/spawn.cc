#include "agents/daemon/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>

#include <cstring>

extern char** environ;

namespace devtime::agent {
namespace {

// Pointers into `strings` (which must outlive them), ending with the nullptr exec expects.
std::vector<char*> NullTerminated(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

absl::StatusOr<pid_t> Spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("no program to start");
  int output_flags = O_WRONLY | O_CREAT | (spec.truncate_output ? O_TRUNC : O_APPEND);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, spec.stdout_path.c_str(), output_flags, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, spec.stderr_path.c_str(), output_flags, 0644);
  if (!spec.work_dir.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, spec.work_dir.c_str());
  }
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // The daemon blocks SIGINT/SIGTERM for sigwait, and posix_spawn keeps the mask: without an
  // empty one a job would ignore the SIGTERM of its timeout or of the agent's stop until the
  // SIGKILL 10 s later.
  sigset_t no_signals;
  sigemptyset(&no_signals);
  posix_spawnattr_setsigmask(&attributes, &no_signals);
  short flags = POSIX_SPAWN_SETSIGMASK;
  if (spec.own_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attributes, 0);
  }
  posix_spawnattr_setflags(&attributes, flags);

  std::vector<std::string> args = spec.argv;
  std::vector<char*> argv = NullTerminated(args);
  std::vector<std::string> env = spec.env.value_or(std::vector<std::string>{});
  std::vector<char*> envp = NullTerminated(env);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(),
                        spec.env ? envp.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) return absl::Status(absl::ErrnoToStatusCode(rc), std::strerror(rc));
  return pid;
}

}  // namespace devtime::agent
