// devtimectl's job and agent commands (jobs apply|list|show|delete|run-now|history,
// agents list|add|revoke). Exit codes as in session.h; 2 also for a jobs file that does not
// validate.
#pragma once

#include <string>

#include "services/ctl/cli.h"
#include "services/ctl/session.h"

namespace devtime::ctl {

int JobsApply(const Session& session, const std::string& file);
int JobsList(const Session& session, Format format);
int JobsShow(const Session& session, const std::string& name, Format format);
int JobsDelete(const Session& session, const std::string& name);
int JobsRunNow(const Session& session, const std::string& name, const std::string& host);
int JobsHistory(const Session& session, const std::string& name, unsigned limit, Format format);
int AgentsList(const Session& session, Format format);
int AgentsAdd(const Session& session, const std::string& name, const std::string& host);
int AgentsRevoke(const Session& session, const std::string& name);

// Register `jobs ...` and `agents ...` on `app`.
void AddJobCommands(CLI::App& app, CommandContext& context);
void AddAgentCommands(CLI::App& app, CommandContext& context);

}  // namespace devtime::ctl
