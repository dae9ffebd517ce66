#include "agents/cli/agent_cli.h"

#include <cstdlib>

#include "CLI/CLI.hpp"
#include "proto/wire/command_line.h"

namespace devtime::agent {
namespace {

void AddSummarize(CLI::App& app, SummarizeCommand& command, std::string& format_name) {
  auto* summarize = app.add_subcommand("summarize", "print a per-operator summary of a trace");
  summarize->footer(
      "Exit codes: 0 ok; 1 the capture is INVALID (the summary is still printed and the reason\n"
      "goes to stderr), the trace cannot be read, or (--format json) the run cannot be sent;\n"
      "2 usage. What the collector would refuse is repaired with a warning in the run.");
  summarize->add_option("TRACE", command.trace, "trace file or profiler output directory")
      ->required();
  summarize->add_option("--format", format_name, "table (key_averages-like) or json (RunSummary)")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  summarize->add_option("--compare", command.compare_with,
                        "print the op-by-op difference from TRACE (before) to this one (after)");
  RunLabels& labels = command.labels;
  summarize->add_option("--model", labels.model, "model name for --format json");
  summarize->add_option("--workload", labels.workload, "workload name for --format json");
  summarize->add_option("--job", labels.job, "job name for --format json");
  summarize->add_option("--run-id", labels.run_id, "run id (UUID) for --format json; default new");
  summarize->add_option("--instance-type", labels.instance_type, "instance type for --format json");
  summarize->add_option("--host", labels.host, "host name for --format json; default this host");
}

void AddUpload(CLI::App& app, UploadCommand& command) {
  const char* env_collector = std::getenv("DEVTIME_COLLECTOR");
  command.collector = env_collector ? env_collector : "127.0.0.1:50051";
  auto* upload = app.add_subcommand(
      "upload", "upload RunSummary JSON files; exits 0 only after every run is acknowledged");
  upload
      ->add_option(
          "--collector", command.collector,
          "collector gRPC address, or several (ipv4:A:P,B:P, dns:host:port, unix:/path; env\n"
          "DEVTIME_COLLECTOR); a token goes only to loopback addresses unless TLS is used")
      ->capture_default_str();
  upload
      ->add_option("--retry-for", command.retry_seconds,
                   "seconds to keep retrying while the collector or database is unreachable")
      ->capture_default_str();
  upload->add_option(
      "--token-file", command.token_file,
      "file with the agent's (or admin) token; else $DEVTIME_TOKEN / $DEVTIME_TOKEN_FILE");
  upload->add_option("--tls-ca", command.tls_ca,
                     "PEM CA of the collector's certificate: connect with TLS");
  upload->add_option("--tls-cert", command.tls_cert, "PEM client certificate (mutual TLS)");
  upload->add_option("--tls-key", command.tls_key, "PEM key of --tls-cert");
  upload
      ->add_option("FILE", command.files,
                   "RunSummary JSON files (devtime-agent summarize --format json)")
      ->required();
}

void AddRun(CLI::App& app, DaemonCommand& command) {
  auto* run = app.add_subcommand(
      "run", "the daemon: receive jobs from the collector, run them on schedule, upload runs");
  run->add_option("--config", command.config_path, "agent.yaml (see deploy/agent.example.yaml)")
      ->required();
  run->add_option("--collector", command.collector_override,
                  "collector address (overrides agent.yaml)");
}

}  // namespace

ParsedCommandLine ParseAgentCommandLine(int argc, const char* const* argv, std::ostream& out,
                                        std::ostream& err) {
  CLI::App app{
      "devtime-agent: reads torch.profiler output (Kineto JSON, legacy trace array, .json.gz\n"
      "or a harness output directory) and uploads device-time summaries to the collector."};
  app.require_subcommand(1);
  SummarizeCommand summarize;
  std::string format_name = "table";
  UploadCommand upload;
  DaemonCommand daemon;
  AddSummarize(app, summarize, format_name);
  AddUpload(app, upload);
  AddRun(app, daemon);
  wire::AddVersionFlag(app, "devtime-agent");

  ParsedCommandLine parsed;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version to `out` (exit 0), errors to `err` (exit 2, usage).
    parsed.exit_code = wire::ExitForParseError(app, e, "devtime-agent", out, err);
    return parsed;
  }
  if (*app.get_subcommand("summarize")) {
    summarize.format =
        format_name == "json" ? SummarizeCommand::Format::kJson : SummarizeCommand::Format::kTable;
    parsed.command = std::move(summarize);
  } else if (*app.get_subcommand("upload")) {
    parsed.command = std::move(upload);
  } else {
    parsed.command = std::move(daemon);
  }
  return parsed;
}

}  // namespace devtime::agent
