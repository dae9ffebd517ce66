#include "services/collector/rpc/session_admission.h"

#include "absl/strings/str_cat.h"

namespace devtime::collector {

absl::Status SessionAdmission::Enter() {
  std::lock_guard lock(mu_);
  if (total_ >= max_total_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("agent sessions: this collector holds ", total_,
                     ", its limit (--max-agent-sessions); retry later or on another collector"));
  }
  ++total_;
  return absl::OkStatus();
}

absl::Status SessionAdmission::EnterAgent(const std::string& agent) {
  std::lock_guard lock(mu_);
  auto it = agents_.find(agent);
  std::size_t held = it == agents_.end() ? 0 : it->second;
  if (held >= max_per_agent_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "agent sessions: agent '", agent, "' holds ", held,
        " sessions on this collector, its limit (--max-sessions-per-agent); an old session "
        "ends when the collector notices its agent is gone"));
  }
  ++agents_[agent];
  return absl::OkStatus();
}

void SessionAdmission::Leave(const std::string& agent) {
  std::lock_guard lock(mu_);
  --total_;
  if (agent.empty()) return;
  auto it = agents_.find(agent);
  if (it != agents_.end() && --it->second == 0) agents_.erase(it);
}

std::size_t SessionAdmission::sessions() const {
  std::lock_guard lock(mu_);
  return total_;
}

}  // namespace devtime::collector
