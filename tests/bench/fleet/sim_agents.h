// N simulated agents in one process: each holds an AgentSession stream (gRPC's callback
// API, so N streams cost no thread each here), says hello as agent "bench-agent-I" on host
// "bench-host-I", and records when assignments and run-now requests arrive. The streams
// are spread over `connections` TCP connections.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "devtime/v1/collector.grpc.pb.h"

namespace devtime::bench {

std::string SimHost(int index);

class SimulatedFleet {
 public:
  SimulatedFleet(const std::string& address, int agents, int connections);
  ~SimulatedFleet();  // cancels every session and waits for gRPC to let go of them
  SimulatedFleet(const SimulatedFleet&) = delete;
  SimulatedFleet& operator=(const SimulatedFleet&) = delete;

  // Waits until every agent has its first assignments or `limit` passes; how many have.
  int WaitAssigned(std::chrono::seconds limit);
  // Sessions that ended (the collector closed them or refused them), and the last reason.
  int ended(std::string* last_error) const;
  // Waits for a run-now of `job` at agent `index` that arrived after `since`; its arrival
  // time, or nullopt after `limit`.
  std::optional<std::chrono::steady_clock::time_point> WaitRunNow(
      int index, std::chrono::steady_clock::time_point since, std::chrono::seconds limit);

 private:
  class Agent;
  friend class Agent;
  void Assigned();
  void RunNowArrived(int index);
  void Ended(const std::string& error);

  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<v1::Collector::Stub>> stubs_;
  std::vector<std::unique_ptr<Agent>> agents_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  int assigned_ = 0;                                                           // guarded by mu_
  int ended_ = 0;                                                              // guarded by mu_
  std::string last_error_;                                                     // guarded by mu_
  std::map<int, std::vector<std::chrono::steady_clock::time_point>> run_now_;  // guarded by mu_
};

}  // namespace devtime::bench
