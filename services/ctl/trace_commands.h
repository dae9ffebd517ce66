// devtimectl runs traces RUN: where a run's trace files are kept and the command that opens
// each (proto/wire/trace_links.h); and the same for the two runs of a regression, as
// `regressions show` prints it. The files are the run's artifacts, which the agent points at
// its trace store (agents/daemon/trace_store.h) when agent.yaml sets trace_store.
#pragma once

#include <ostream>
#include <string>

#include "devtime/v1/regressions.pb.h"
#include "services/ctl/cli.h"
#include "services/ctl/commands.h"
#include "services/ctl/session.h"

namespace devtime::ctl {

// Every file of the run (kind, bytes, sha256, uri), then how to open its trace files; with
// Format::kJson {"run_id", "files": [{kind, uri, size_bytes, sha256, viewer, command, then}]}.
int RunsTraces(const Session& session, const std::string& run, const RunScope& scope,
               Format format);

// "traces      last good: <opening>\n            first bad: <opening>\n", or a line saying
// that neither run has trace files kept.
void PrintRegressionTraces(std::ostream& out, const v1::Regression& regression);

// Registers `traces` on the `runs` command.
void AddRunTracesCommand(CLI::App* runs, CommandContext& context);

}  // namespace devtime::ctl
