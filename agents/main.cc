// devtime-agent: summarizes torch.profiler output and uploads runs to the collector.
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "CLI/CLI.hpp"
#include "agents/daemon.h"
#include "agents/run_summary_builder.h"
#include "agents/uploader.h"
#include "proto/wire/channel.h"
#include "proto/wire/json.h"

namespace {

namespace fs = std::filesystem;
using devtime::v1::RunSummary;

enum class Format { kTable, kJson };

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::chrono::system_clock::time_point ModificationTime(const fs::path& path) {
  std::error_code ec;
  auto t = fs::last_write_time(path, ec);
  if (ec) return std::chrono::system_clock::now();
  return std::chrono::time_point_cast<std::chrono::system_clock::duration>(
      std::chrono::file_clock::to_sys(t));
}

// `devtime-agent summarize BEFORE --compare AFTER`: the op-by-op diff that explains a lost
// fusion (more calls of small ops, new ops, time moved between ops).
int Compare(const std::string& before_path, const std::string& after_path) {
  auto before = devtime::trace::Summarize(before_path);
  auto after = before.ok() ? devtime::trace::Summarize(after_path) : before;
  if (!after.ok()) {
    std::cerr << "devtime-agent: " << after.status().message() << "\n";
    return 1;
  }
  std::cout << devtime::trace::RenderComparison(*before, *after);
  return 0;
}

int Summarize(const std::string& path, Format format, devtime::agent::RunLabels labels) {
  auto summary = devtime::trace::Summarize(path);
  if (!summary.ok()) {
    std::cerr << "devtime-agent: " << summary.status().message() << "\n";
    return 1;
  }
  if (format == Format::kTable) {
    std::cout << devtime::trace::RenderTable(*summary);
    return 0;
  }
  if (labels.fallback_workload.empty()) labels.fallback_workload = fs::path(path).stem().string();
  auto when = ModificationTime(path);
  if (labels.started_at == std::chrono::system_clock::time_point{}) labels.started_at = when;
  labels.finished_at = std::max(when, labels.started_at);
  std::cout << devtime::wire::ToJson(devtime::agent::BuildRunSummary(*summary, labels)) << "\n";
  return 0;
}

int UploadFiles(const std::string& collector, const devtime::wire::ClientCredentials& creds,
                const std::vector<std::string>& files, int retry_seconds) {
  auto channel = devtime::wire::ConnectCollector(collector, creds);
  if (!channel.ok()) {
    std::cerr << "devtime-agent: " << channel.status().message() << "\n";
    return 2;
  }
  auto stub = devtime::v1::Collector::NewStub(*channel);
  devtime::agent::UploadOptions options;
  options.retry_for = std::chrono::seconds(retry_seconds);
  int failures = 0;
  for (const auto& file : files) {
    options.on_retry = [&](const grpc::Status& status, std::chrono::milliseconds wait) {
      std::cerr << "devtime-agent: " << file << ": " << devtime::wire::Describe(status)
                << "; retrying in " << wait.count() << " ms\n";
    };
    RunSummary run;
    auto content = ReadFile(file);
    absl::Status parsed =
        content.ok() ? devtime::wire::ParseJson(*content, file, &run) : content.status();
    if (!parsed.ok()) {
      std::cerr << "devtime-agent: " << parsed.message() << "\n";
      ++failures;
      continue;
    }
    auto ack = devtime::agent::Upload(*stub, run, options);
    if (!ack.ok()) {
      std::cerr << "devtime-agent: " << file << ": upload failed: " << ack.status().message()
                << "\n";
      ++failures;
      continue;
    }
    std::cout << (ack->duplicate() ? "already stored " : "stored ") << ack->run_id() << "  "
              << run.identity().model() << "/" << run.identity().workload() << "  (" << file
              << ")\n";
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

// `devtime-agent run`: the daemon, until SIGTERM/SIGINT.
int RunDaemon(const std::string& config_path, const std::string& collector_override) {
  auto config = devtime::agent::ReadAgentConfig(config_path);
  if (!config.ok()) {
    std::cerr << "devtime-agent: " << config.status().message() << "\n";
    return 2;
  }
  if (!collector_override.empty()) config->collector = collector_override;
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts
  auto daemon = devtime::agent::AgentDaemon::Start(*config);
  if (!daemon.ok()) {
    std::cerr << "devtime-agent: " << daemon.status().message() << "\n";
    return 1;
  }
  int signal = 0;
  sigwait(&signals, &signal);
  std::cerr << "devtime-agent: signal " << signal << ", stopping (running jobs are ended)"
            << std::endl;
  (*daemon)->Stop();
  (*daemon)->Wait();
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{
      "devtime-agent: reads torch.profiler output (Kineto JSON, legacy trace array, .json.gz\n"
      "or a harness output directory) and uploads device-time summaries to the collector."};
  app.require_subcommand(1);

  std::string path;
  std::string format_name = "table";
  devtime::agent::RunLabels labels;
  auto* summarize = app.add_subcommand("summarize", "print a per-operator summary of a trace");
  summarize->add_option("TRACE", path, "trace file or profiler output directory")->required();
  summarize->add_option("--format", format_name, "table (key_averages-like) or json (RunSummary)")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  std::string compare_with;
  summarize->add_option("--compare", compare_with,
                        "print the op-by-op difference from TRACE (before) to this one (after)");
  summarize->add_option("--model", labels.model, "model name for --format json");
  summarize->add_option("--workload", labels.workload, "workload name for --format json");
  summarize->add_option("--job", labels.job, "job name for --format json");
  summarize->add_option("--run-id", labels.run_id, "run id (UUID) for --format json; default new");
  summarize->add_option("--instance-type", labels.instance_type, "instance type for --format json");
  summarize->add_option("--host", labels.host, "host name for --format json; default this host");

  const char* env_collector = std::getenv("DEVTIME_COLLECTOR");
  std::string collector = env_collector ? env_collector : "127.0.0.1:50051";
  std::vector<std::string> files;
  int retry_seconds = 60;
  auto* upload = app.add_subcommand(
      "upload", "upload RunSummary JSON files; exits 0 only after every run is acknowledged");
  upload->add_option("--collector", collector, "collector gRPC address (env DEVTIME_COLLECTOR)")
      ->capture_default_str();
  upload
      ->add_option("--retry-for", retry_seconds,
                   "seconds to keep retrying while the collector or database is unreachable")
      ->capture_default_str();
  std::string token_file, tls_ca, tls_cert, tls_key;
  upload->add_option(
      "--token-file", token_file,
      "file with the agent's (or admin) token; else $DEVTIME_TOKEN / $DEVTIME_TOKEN_FILE");
  upload->add_option("--tls-ca", tls_ca, "PEM CA of the collector's certificate: connect with TLS");
  upload->add_option("--tls-cert", tls_cert, "PEM client certificate (mutual TLS)");
  upload->add_option("--tls-key", tls_key, "PEM key of --tls-cert");
  upload->add_option("FILE", files, "RunSummary JSON files (devtime-agent summarize --format json)")
      ->required();

  std::string config_path, run_collector;
  auto* run = app.add_subcommand(
      "run", "the daemon: receive jobs from the collector, run them on schedule, upload runs");
  run->add_option("--config", config_path, "agent.yaml (see deploy/agent.example.yaml)")
      ->required();
  run->add_option("--collector", run_collector, "collector address (overrides agent.yaml)");

  CLI11_PARSE(app, argc, argv);
  if (*run) return RunDaemon(config_path, run_collector);
  if (*summarize && !compare_with.empty()) return Compare(path, compare_with);
  if (*summarize) {
    return Summarize(path, format_name == "json" ? Format::kJson : Format::kTable, labels);
  }
  auto creds = devtime::wire::LoadClientCredentials(token_file, tls_ca, tls_cert, tls_key);
  if (!creds.ok()) {
    std::cerr << "devtime-agent: " << creds.status().message() << "\n";
    return 2;
  }
  if (creds->token.empty()) creds->token = devtime::wire::TokenFromEnvironment();
  return UploadFiles(collector, *creds, files, retry_seconds);
}
