// What each devtime-agent subcommand does once its command line is parsed (agent_cli.h):
// the exit code, with results on stdout and problems on stderr ("devtime-agent: ...").
//
// The numbers are proto/wire/exit_codes.h's, shared with devtimectl and the collector:
//   0  done (upload: every run acknowledged, i.e. committed)
//   1  summarize: the capture is INVALID (quality gate, e.g. no ProfilerStep window; the
//      table or RunSummary JSON is still printed, the reason goes to stderr); a trace or
//      file could not be read, a run was refused (summarize --format json: it could not be
//      sent; upload: the collector refused it), the daemon failed to start
//   2  usage: bad flags, or the setup is wrong: credentials, collector address, agent.yaml
//   3  upload: the collector (or its database) could not be reached within --retry-for
//   5  upload: the token was refused
// With several files `upload` exits with the first of 3, 5, 1 that any file ended with.
#pragma once

#include "agents/cli/agent_cli.h"
#include "proto/wire/exit_codes.h"

namespace devtime::agent {

inline constexpr int kExitInvalidRun = wire::kExitFailed;

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
