// What daemon.cc and daemon_uploads.cc, the two halves of AgentDaemon, share.
#pragma once

#include <string>

#include "devtime/v1/jobs.pb.h"

namespace devtime::agent {

// One line on stderr, "devtime-agent: <message>".
void DaemonLog(const std::string& message);

// `slot` failed after all: `why` follows what its reason said (cut to a printable length).
v1::JobSlot FailedSlot(v1::JobSlot slot, const std::string& why);

}  // namespace devtime::agent
