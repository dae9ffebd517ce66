// Real child processes for integration tests: the collector, the agent and devtimectl run
// as the user would run them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace devtime::testing {

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal or timed out
  std::string out;
  std::string err;
};

// Runs argv[0] with arguments, waits at most `timeout`, captures stdout and stderr.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         std::chrono::seconds timeout = std::chrono::seconds(120));

// A long-running child whose stdout and stderr go to `log_path`.
class Subprocess {
 public:
  Subprocess(const std::vector<std::string>& argv, const std::string& log_path);
  ~Subprocess();  // kills (SIGKILL) and reaps the child if still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signal);
  int Wait();  // exit code, or -signal when killed
  bool Running();

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// A devtime-collector process on loopback, started and waited for (ready file).
class CollectorProcess {
 public:
  // `grpc_port` 0 picks a free port once; Restart() keeps the port it got.
  // `extra_args` are passed to every start (e.g. "--session-poll-ms", "200").
  explicit CollectorProcess(std::string conninfo, int grpc_port = 0,
                            std::vector<std::string> extra_args = {});
  ~CollectorProcess();

  std::string address() const { return "127.0.0.1:" + std::to_string(grpc_port_); }
  // The collector runs with authentication on; this file holds its admin token.
  std::string admin_token_file() const { return dir_ + "/admin.token"; }
  std::string admin_token() const;
  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }
  std::string Log() const;

  void Kill();   // SIGKILL: no chance to clean up, as in a crash
  void Start();  // (re)starts on the same gRPC port and waits until it serves
  int Stop();    // SIGTERM and wait; the exit code

 private:
  std::string conninfo_;
  std::vector<std::string> extra_args_;
  std::string dir_;
  int grpc_port_;
  int metrics_port_ = 0;
  std::unique_ptr<Subprocess> process_;
};

// A loopback TCP port that was free a moment ago (bound and released).
int FreePort();

// GET http://127.0.0.1:port/path; the body ("" on failure).
std::string HttpGet(int port, const std::string& path);

// A fresh temporary directory (removed by the OS's tmp cleaning, not by the test, so a
// failing test leaves its evidence).
std::string MakeTempDir(const std::string& prefix);

}  // namespace devtime::testing
