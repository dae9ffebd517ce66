// What each devtime-agent subcommand does once its command line is parsed (agent_cli.h):
// the exit code, with results on stdout and problems on stderr ("devtime-agent: ...").
//
//   0  done (upload: every run acknowledged, i.e. committed)
//   1  a trace or file could not be read, a run was not stored, the daemon failed to start
//   2  the setup is wrong: credentials, collector address, agent.yaml
//   3  summarize: the capture is INVALID (quality gate, e.g. no ProfilerStep window); the
//      table or RunSummary JSON is still printed, and the reason goes to stderr
// (A usage error ends before any of these, with CLI11's exit code: agent_cli.h.)
#pragma once

#include "agents/agent_cli.h"

namespace devtime::agent {

inline constexpr int kExitInvalidRun = 3;

// `summarize`: a trace's per-operator table, its RunSummary JSON, or (--compare) the op-by-op
// difference between two traces.
int RunSummarize(const SummarizeCommand& command);

// `upload`: sends each file's run and waits for its acknowledgement, retrying passing failures
// for --retry-for seconds.
int RunUpload(const UploadCommand& command);

// `run`: the daemon (daemon.h) until SIGTERM or SIGINT.
int RunDaemon(const DaemonCommand& command);

// Whichever of the above `command` holds.
int RunAgentCommand(const AgentCommand& command);

}  // namespace devtime::agent
