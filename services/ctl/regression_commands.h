// devtimectl regressions list|show|ack|resolve|invalid: triage of the regressions the
// collector detected. Exit codes as in session.h; a transition the regression's state does
// not allow (e.g. resolving an invalid one) is the collector's FAILED_PRECONDITION: exit 1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "services/ctl/cli.h"
#include "services/ctl/session.h"

namespace devtime::ctl {

struct RegressionsListOptions {
  std::vector<std::string> states;  // names; empty = suspected, open, acknowledged
  bool all = false;                 // every state
  std::string model;
  std::string workload;
  unsigned limit = 100;  // newest first; 0 = every one (the collector's pages are followed)
  Format format = Format::kTable;
};

int RegressionsList(const Session& session, const RegressionsListOptions& options);
// What an ID argument may be: a regression's id (a number), or a run (collector.proto
// ResolveRun: an id, a prefix of one, in any case, or latest) naming the regression it opened
// (else the one it confirmed, or the newest run of a drift). *id = the regression's id;
// returns the exit code of a failure (reported on session.err), nullopt on success.
std::optional<int> ResolveRegressionId(const Session& session, const std::string& text,
                                       int64_t* id);

int RegressionsShow(const Session& session, const std::string& id, Format format);

struct TriageOptions {
  std::string id;          // as ResolveRegressionId takes it
  std::string to;          // "acknowledged", "resolved" or "invalid"
  std::string resolution;  // with resolved: "fixed" (default) or "accepted_baseline"
  std::string by;          // who; "" = $USER
  std::string reason;
};
int RegressionsTriage(const Session& session, const TriageOptions& options);

// Registers `regressions list|show|ack|resolve|invalid` on `app`.
void AddRegressionCommands(CLI::App& app, CommandContext& context);

}  // namespace devtime::ctl
