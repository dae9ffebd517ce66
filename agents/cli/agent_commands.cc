#include "agents/cli/agent_commands.h"

#include <pthread.h>

#include <csignal>
#include <cstring>
#include <iostream>

#include "agents/daemon/daemon.h"
#include "agents/daemon/files.h"
#include "agents/daemon/uploader.h"
#include "agents/trace/trace_summary.h"
#include "grpc/grpc.h"
#include "proto/wire/call_errors.h"
#include "proto/wire/channel.h"
#include "proto/wire/json.h"
#include "proto/wire/limits.h"
#include "proto/wire/validation.h"

namespace devtime::agent {
namespace {

namespace fs = std::filesystem;

int Fail(const absl::Status& status, int exit_code) {
  std::cerr << "devtime-agent: " << status.message() << "\n";
  return exit_code;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  auto content = ReadWholeFile(path);
  if (!content) return absl::NotFoundError(path + ": cannot open (" + std::strerror(errno) + ")");
  return *std::move(content);
}

// `devtime-agent summarize BEFORE --compare AFTER`: the op-by-op diff that explains a lost
// fusion (more calls of small ops, new ops, time moved between ops).
int Compare(const std::string& before_path, const std::string& after_path) {
  auto before = trace::Summarize(before_path);
  auto after = before.ok() ? trace::Summarize(after_path) : before;
  if (!after.ok()) return Fail(after.status(), 1);
  std::cout << trace::RenderComparison(*before, *after);
  return 0;
}

// What `upload` says while it retries one file: the error in full the first time (and when its
// code changes), then one short line per retry, so that a minute of retries is not a screen
// of the same long sentence.
class RetryNotes {
 public:
  explicit RetryNotes(const std::string& file, const std::string& collector)
      : file_(file), collector_(collector) {}

  void operator()(const grpc::Status& status, std::chrono::milliseconds wait) {
    ++retries_;
    if (retries_ == 1 || status.error_code() != last_code_) {
      std::cerr << "devtime-agent: " << file_ << ": " << wire::DescribeCallError(status, collector_)
                << "; retrying\n";
      last_code_ = status.error_code();
    } else {
      std::cerr << "devtime-agent: " << file_ << ": retry " << retries_
                << ", the same error; next in " << wait.count() << " ms\n";
    }
  }

 private:
  const std::string& file_;
  const std::string& collector_;
  grpc::StatusCode last_code_ = grpc::StatusCode::OK;
  int retries_ = 0;
};

// Reads and uploads one file's run; prints what was stored, or why not. The exit code of
// its outcome: 0 stored, 3 the collector could not be reached in time, 5 the token was
// refused, 1 the file or the run was refused (exit_codes.h).
int UploadFile(v1::Collector::StubInterface& stub, const std::string& file, UploadOptions options) {
  options.on_retry = RetryNotes(file, options.collector);
  v1::RunSummary run;
  auto content = ReadFile(file);
  absl::Status parsed = content.ok() ? wire::ParseJson(*content, file, &run) : content.status();
  if (!parsed.ok()) return Fail(parsed, wire::kExitFailed);
  auto ack = Upload(stub, run, options);
  if (!ack.ok()) {
    std::cerr << "devtime-agent: " << file << ": upload failed: " << ack.status().message() << "\n";
    const wire::ExitCode code = wire::ExitCodeFor(ack.status().code());
    return code == wire::kExitUnavailable || code == wire::kExitPermission ? code
                                                                           : wire::kExitFailed;
  }
  std::cout << (ack->duplicate() ? "already stored " : "stored ") << ack->run_id() << "  "
            << run.identity().model() << "/" << run.identity().workload() << "  (" << file << ")\n";
  return wire::kExitOk;
}

// The exit code of several files' outcomes: "could not ask" (3, then 5) says more than "some
// were refused" (1), which says more than success.
int WorstOutcome(int a, int b) {
  for (int code : {wire::kExitUnavailable, wire::kExitPermission, wire::kExitFailed}) {
    if (a == code || b == code) return code;
  }
  return wire::kExitOk;
}

}  // namespace

int RunSummarize(const SummarizeCommand& command) {
  if (!command.compare_with.empty()) return Compare(command.trace, command.compare_with);
  trace::SummarizeOptions options;
  // The RunSummary sums the operators past its limit into one row: the library does it as it
  // makes the rows, so a million distinct names are never a million rows (issue 23). The table
  // lists them all.
  if (command.format != SummarizeCommand::Format::kTable) options.max_op_rows = wire::kMaxOps;
  auto summary = trace::Summarize(command.trace, options);
  if (!summary.ok()) return Fail(summary.status(), 1);
  // The output is printed either way (it says what is wrong); the exit code lets a script
  // stop before uploading or comparing against a capture that cannot be trusted.
  const int exit_code = summary->invalid_reason ? kExitInvalidRun : 0;
  if (summary->invalid_reason) {
    std::cerr << "devtime-agent: the run is INVALID: " << *summary->invalid_reason << "\n";
  }
  if (command.format == SummarizeCommand::Format::kTable) {
    trace::RenderTable(*summary, std::cout);
    return exit_code;
  }
  RunLabels labels = command.labels;
  if (labels.fallback_workload.empty()) {
    labels.fallback_workload = fs::path(command.trace).stem().string();
  }
  // When the capture ran: the trace's clock (or the Neuron session's name, trace_summary.h
  // CaptureInfo); the file's modification time only when the files do not say.
  auto started = ModificationTime(command.trace);
  auto finished = started;
  if (summary->capture.started_unix_ns && summary->capture.finished_unix_ns) {
    started = std::chrono::system_clock::time_point(
        std::chrono::nanoseconds(*summary->capture.started_unix_ns));
    finished = std::chrono::system_clock::time_point(
        std::chrono::nanoseconds(*summary->capture.finished_unix_ns));
  } else {
    std::cerr << "devtime-agent: " << command.trace
              << ": the trace does not say when it was captured (relative timestamps); "
                 "started_at and finished_at are the file's modification time\n";
  }
  if (labels.started_at == std::chrono::system_clock::time_point{}) labels.started_at = started;
  labels.finished_at = std::max(finished, labels.started_at);
  v1::RunSummary run = BuildRunSummary(*summary, labels);
  // The collector's own rules, as the daemon applies them before spooling: what is printed
  // here is what `upload` can deliver, or the command says why not.
  if (absl::Status valid = wire::ValidateRun(run); !valid.ok()) {
    return Fail(absl::InvalidArgumentError(
                    command.trace + ": the run cannot be sent: " + std::string(valid.message())),
                wire::kExitFailed);
  }
  for (const auto& warning : run.warnings()) {
    if (IsRepairWarning(warning))
      std::cerr << "devtime-agent: repaired: " << warning.message() << "\n";
  }
  WriteRunJson(std::move(run), std::cout);
  std::cout << "\n";
  return exit_code;
}

int RunUpload(const UploadCommand& command) {
  auto creds = wire::LoadClientCredentials(command.token_file, command.tls_ca, command.tls_cert,
                                           command.tls_key);
  if (!creds.ok()) return Fail(creds.status(), 2);
  if (creds->token.empty()) creds->token = wire::TokenFromEnvironment();
  auto channel = wire::ConnectCollector(command.collector, *creds);
  if (!channel.ok()) return Fail(channel.status(), 2);
  auto stub = v1::Collector::NewStub(*channel);
  UploadOptions options;
  options.retry_for = std::chrono::seconds(command.retry_seconds);
  options.collector = command.collector;
  int exit_code = wire::kExitOk;
  for (const auto& file : command.files) {
    exit_code = WorstOutcome(exit_code, UploadFile(*stub, file, options));
  }
  return exit_code;
}

int RunDaemon(const DaemonCommand& command) {
  auto config = ReadAgentConfig(command.config_path);
  if (!config.ok()) return Fail(config.status(), 2);
  if (!command.collector_override.empty()) config->collector = command.collector_override;
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts
  // Our own reference to the gRPC library, released last with grpc_shutdown_blocking(): when
  // the last gRPC object's destructor drops the last reference, gRPC cleans up on a detached
  // thread that can still run while exit() destroys what it uses (a crash at SIGTERM).
  grpc_init();
  int exit_code = 0;
  {
    auto daemon = AgentDaemon::Start(*config);
    if (!daemon.ok()) {
      exit_code = Fail(daemon.status(), 1);
    } else {
      int signal = 0;
      sigwait(&signals, &signal);
      std::cerr << "devtime-agent: signal " << signal << ", stopping (running jobs are ended)"
                << std::endl;
      (*daemon)->Stop();
      (*daemon)->Wait();  // every thread the daemon started has ended
    }
  }  // the daemon, and with it every gRPC object, is gone
  grpc_shutdown_blocking();
  return exit_code;
}

int RunAgentCommand(const AgentCommand& command) {
  if (auto* summarize = std::get_if<SummarizeCommand>(&command)) return RunSummarize(*summarize);
  if (auto* upload = std::get_if<UploadCommand>(&command)) return RunUpload(*upload);
  return RunDaemon(std::get<DaemonCommand>(command));
}

}  // namespace devtime::agent
