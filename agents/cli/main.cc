// devtime-agent: summarizes torch.profiler output and uploads runs to the collector.
// The subcommands and flags are in agents/cli/agent_cli.h, what each does in agent_commands.h.
#include <iostream>

#include "agents/cli/agent_cli.h"
#include "agents/cli/agent_commands.h"

int main(int argc, char** argv) {
  auto parsed = devtime::agent::ParseAgentCommandLine(argc, argv, std::cout, std::cerr);
  if (!parsed.command) return parsed.exit_code;
  return devtime::agent::RunAgentCommand(*parsed.command);
}
