#include "tests/bench/fleet/sim_agents.h"

#include <algorithm>

#include "grpcpp/grpcpp.h"

namespace devtime::bench {

std::string SimHost(int index) { return "bench-host-" + std::to_string(index); }

class SimulatedFleet::Agent
    : public grpc::ClientBidiReactor<v1::AgentMessage, v1::CollectorMessage> {
 public:
  Agent(SimulatedFleet& fleet, v1::Collector::Stub& stub, int index)
      : fleet_(fleet), index_(index) {
    auto* identity = hello_.mutable_hello()->mutable_identity();
    identity->set_name("bench-agent-" + std::to_string(index));
    identity->set_host(SimHost(index));
    identity->set_instance_type("trn1.32xlarge");
    identity->set_version("bench");
    (*identity->mutable_labels())["pool"] = "bench";
    stub.async()->AgentSession(&context_, this);
    StartWrite(&hello_);
    StartRead(&incoming_);
    StartCall();
  }

  void Cancel() { context_.TryCancel(); }
  void WaitDone() {
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return done_; });
  }

  void OnWriteDone(bool) override {}  // the hello; a simulated agent reports no slots
  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream is over: OnDone follows
    if (incoming_.has_assignments() && !assigned_) {
      assigned_ = true;
      fleet_.Assigned();
    } else if (incoming_.has_run_now()) {
      fleet_.RunNowArrived(index_);
    }
    StartRead(&incoming_);
  }
  void OnDone(const grpc::Status& status) override {
    fleet_.Ended(status.error_message());
    std::lock_guard lock(mu_);
    done_ = true;
    done_cv_.notify_all();
  }

 private:
  SimulatedFleet& fleet_;
  const int index_;
  grpc::ClientContext context_;
  v1::AgentMessage hello_;
  v1::CollectorMessage incoming_;
  bool assigned_ = false;  // touched by gRPC's reads only, one at a time
  std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;  // guarded by mu_
};

SimulatedFleet::SimulatedFleet(const std::string& address, int agents, int connections) {
  for (int i = 0; i < std::max(1, connections); ++i) {
    grpc::ChannelArguments args;
    // Its own TCP connection: gRPC shares subchannels between channels of equal arguments.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("devtime.bench.connection", i);
    channels_.push_back(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
    stubs_.push_back(v1::Collector::NewStub(channels_.back()));
  }
  for (int i = 0; i < agents; ++i) {
    agents_.push_back(std::make_unique<Agent>(*this, *stubs_[i % stubs_.size()], i));
  }
}

SimulatedFleet::~SimulatedFleet() {
  for (auto& agent : agents_) agent->Cancel();
  for (auto& agent : agents_) agent->WaitDone();
}

int SimulatedFleet::WaitAssigned(std::chrono::seconds limit) {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, limit,
                    [&] { return assigned_ + ended_ >= static_cast<int>(agents_.size()); });
  return assigned_;
}

int SimulatedFleet::ended(std::string* last_error) const {
  std::lock_guard lock(mu_);
  if (last_error) *last_error = last_error_;
  return ended_;
}

std::optional<std::chrono::steady_clock::time_point> SimulatedFleet::WaitRunNow(
    int index, std::chrono::steady_clock::time_point since, std::chrono::seconds limit) {
  std::unique_lock lock(mu_);
  std::optional<std::chrono::steady_clock::time_point> arrived;
  changed_.wait_for(lock, limit, [&] {
    for (auto at : run_now_[index]) {
      if (at >= since) arrived = at;
    }
    return arrived.has_value();
  });
  return arrived;
}

void SimulatedFleet::Assigned() {
  std::lock_guard lock(mu_);
  ++assigned_;
  changed_.notify_all();
}

void SimulatedFleet::RunNowArrived(int index) {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  run_now_[index].push_back(now);
  changed_.notify_all();
}

void SimulatedFleet::Ended(const std::string& error) {
  std::lock_guard lock(mu_);
  ++ended_;
  last_error_ = error;
  changed_.notify_all();
}

}  // namespace devtime::bench
