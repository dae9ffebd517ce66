// devtime-collector: stores profiling runs in PostgreSQL and serves them over gRPC.
// Everything it does is in services/collector/rpc/ (collector_cli.h, server.h).
#include <cstdlib>
#include <iostream>

#include "services/collector/rpc/collector_cli.h"
#include "services/collector/rpc/front_door.h"

int main(int argc, char** argv) {
  // Every agent session is a descriptor: the soft limit (often 1,024) up to the hard one.
  devtime::collector::RaiseFileLimit();
  auto parsed = devtime::collector::ParseCommandLine(argc, argv, std::getenv("DEVTIME_DATABASE"),
                                                     std::cout, std::cerr);
  if (!parsed.command) return parsed.exit_code;
  if (auto loaded = devtime::collector::LoadCredentials(*parsed.command, std::cerr); !loaded.ok()) {
    std::cerr << "devtime-collector: " << loaded.message() << "\n";
    return 2;
  }
  return devtime::collector::ServeUntilSignalled(*parsed.command);
}
