// devtime::collector — how many agent sessions a collector holds: at most max_total at once
// (from a session's start, before its token is checked, to its end, so unauthenticated or
// silent streams count too) and at most max_per_agent of one agent (from its hello). Beyond
// either, a session is refused with RESOURCE_EXHAUSTED naming the limit and its flag.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"

namespace devtime::collector {

class SessionAdmission {
 public:
  SessionAdmission(std::size_t max_total, std::size_t max_per_agent)
      : max_total_(max_total), max_per_agent_(max_per_agent) {}

  // A place for a new session, or RESOURCE_EXHAUSTED when max_total are held.
  absl::Status Enter();
  // A place of `agent` for a session that entered, or RESOURCE_EXHAUSTED when the agent
  // holds max_per_agent.
  absl::Status EnterAgent(const std::string& agent);
  // A session that entered ended: gives back its place, and its agent's when `agent` is not
  // "" (the name EnterAgent accepted).
  void Leave(const std::string& agent);

  std::size_t sessions() const;

 private:
  const std::size_t max_total_;
  const std::size_t max_per_agent_;
  mutable std::mutex mu_;
  std::size_t total_ = 0;                      // guarded by mu_
  std::map<std::string, std::size_t> agents_;  // guarded by mu_; no zero counts
};

}  // namespace devtime::collector
