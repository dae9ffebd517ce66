// devtime-agent's command line: the subcommands and their flags, parsed into plain option
// structs (agent_commands.h runs them). Help texts, defaults, usage errors and their exit
// codes are CLI11's, as `devtime-agent --help` shows them.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "agents/contract/run_summary_builder.h"

namespace devtime::agent {

// `devtime-agent summarize TRACE [--format table|json] [--compare AFTER] [labels...]`
struct SummarizeCommand {
  enum class Format { kTable, kJson };
  std::string trace;
  Format format = Format::kTable;
  std::string compare_with;  // "": no comparison; else the "after" trace
  RunLabels labels;          // for --format json
};

// `devtime-agent upload [--collector ADDR] [--retry-for S] [credentials...] FILE...`
struct UploadCommand {
  std::string collector;  // default: $DEVTIME_COLLECTOR, else 127.0.0.1:50051
  int retry_seconds = 60;
  std::string token_file, tls_ca, tls_cert, tls_key;  // "" = not given
  std::vector<std::string> files;
};

// `devtime-agent run --config agent.yaml [--collector ADDR]`
struct DaemonCommand {
  std::string config_path;
  std::string collector_override;  // "": agent.yaml's
};

using AgentCommand = std::variant<SummarizeCommand, UploadCommand, DaemonCommand>;

// A command to run, or (for --help and usage errors, already printed to `out` / `err`) the
// exit code to end with: 0 after --help or --version, 2 (usage) after a refused command line.
struct ParsedCommandLine {
  std::optional<AgentCommand> command;
  int exit_code = 0;  // when there is no command
};

ParsedCommandLine ParseAgentCommandLine(int argc, const char* const* argv, std::ostream& out,
                                        std::ostream& err);

}  // namespace devtime::agent
