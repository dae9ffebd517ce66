#include "tests/support/process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "agents/daemon/spawn.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_database.h"

namespace devtime::testing {
namespace {

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_path,
            const std::string& err_path) {
  agent::SpawnSpec spec;
  spec.argv = argv;
  spec.stdout_path = out_path;
  spec.stderr_path = err_path;
  auto pid = agent::Spawn(spec);
  if (!pid.ok()) {
    throw std::runtime_error("cannot start " + (argv.empty() ? "" : argv[0]) + ": " +
                             std::string(pid.status().message()));
  }
  return *pid;
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

}  // namespace

std::string MakeTempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

CommandResult RunCommand(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  std::string dir = MakeTempDir("devtime-cmd");
  std::string out = dir + "/stdout", err = dir + "/stderr";
  pid_t pid = Spawn(argv, out, err);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  CommandResult result;
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.exit_code = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  result.out = ReadWhole(out);
  result.err = ReadWhole(err);
  std::filesystem::remove_all(dir);
  return result;
}

Subprocess::Subprocess(const std::vector<std::string>& argv, const std::string& log_path)
    : pid_(Spawn(argv, log_path, log_path)) {}

Subprocess::~Subprocess() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    Wait();
  }
}

void Subprocess::Signal(int signal) {
  if (!reaped_) kill(pid_, signal);
}

int Subprocess::Wait() {
  if (!reaped_) {
    waitpid(pid_, &status_, 0);
    reaped_ = true;
  }
  return DecodeStatus(status_);
}

bool Subprocess::Running() {
  if (reaped_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

CollectorProcess::CollectorProcess(std::string conninfo, int grpc_port,
                                   std::vector<std::string> extra_args)
    : conninfo_(std::move(conninfo)),
      extra_args_(std::move(extra_args)),
      dir_(MakeTempDir("devtime-collector")),
      grpc_port_(grpc_port) {
  Start();
}

CollectorProcess::~CollectorProcess() {
  if (process_ && process_->Running()) Stop();
}

void CollectorProcess::Start() {
  std::string ready = dir_ + "/ready.json";
  std::filesystem::remove(ready);
  std::vector<std::string> args{BinaryPath("devtime-collector"),
                                "--database",
                                conninfo_,
                                "--listen",
                                "127.0.0.1:" + std::to_string(grpc_port_),
                                "--metrics-listen",
                                "127.0.0.1:0",
                                "--ready-file",
                                ready,
                                "--admin-token-file",
                                admin_token_file()};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  process_ = std::make_unique<Subprocess>(args, dir_ + "/collector.log");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(ready)) {
    if (!process_->Running() || std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("collector did not start; its log:\n" + Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto info = nlohmann::json::parse(ReadWhole(ready));
  grpc_port_ = info.at("grpc_port").get<int>();
  metrics_port_ = info.at("metrics_port").get<int>();
}

void CollectorProcess::Kill() {
  process_->Signal(SIGKILL);
  process_->Wait();
}

int CollectorProcess::Stop() {
  process_->Signal(SIGTERM);
  return process_->Wait();
}

std::string CollectorProcess::admin_token() const {
  std::string token = ReadWhole(admin_token_file());
  return token.substr(0, token.find('\n'));
}

std::string CollectorProcess::Log() const { return ReadWhole(dir_ + "/collector.log"); }

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return "";
  }
  std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (write(fd, request.data(), request.size()) < 0) {
    close(fd);
    return "";
  }
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) response.append(buffer, static_cast<size_t>(n));
  close(fd);
  auto body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

}  // namespace devtime::testing
