#include "services/collector/rpc/session_hub.h"

#include <algorithm>
#include <iostream>
#include <set>

#include "proto/wire/job_spec.h"
#include "services/collector/store/sql_util.h"

namespace devtime::collector {

// The jobs as read once, shared by every session's Offer.
struct SessionHub::Jobs {
  uint64_t generation;
  std::vector<v1::JobSpec> specs;
};

struct SessionHub::Seat {
  uint64_t id;
  v1::AgentIdentity agent;
  std::string token_sha256;  // "" = not re-checked (auth disabled)
  Sender send;
  Closer close;
  std::mutex mu;                   // serializes Offer, so pushes keep the generations' order
  bool closed = false;             // guarded by mu: its token is gone; nothing more is sent
  std::set<std::string> assigned;  // guarded by mu: the jobs last pushed to the agent
  std::string sent;                // guarded by mu: those assignments' bytes
  uint64_t generation = 0;         // guarded by mu: of the jobs last offered
};

SessionHub::SessionHub(store::JobStore& jobs, const std::string& conninfo, SessionOptions options)
    : jobs_(jobs),
      options_(options),
      listener_({.conninfo = conninfo, .channels = {store::kJobsChannel, store::kRunNowChannel}}),
      workers_(options.workers),
      admission_(options.max_sessions, options.max_sessions_per_agent) {
  thread_ = std::thread([this] { Loop(); });
}

SessionHub::~SessionHub() { Stop(); }

void SessionHub::Stop() {
  stopping_ = true;
  listener_.Interrupt();
  if (thread_.joinable()) thread_.join();
  workers_.Stop();
}

std::size_t SessionHub::sessions() const {
  std::lock_guard lock(mu_);
  return seats_.size();
}

uint64_t SessionHub::Join(const v1::AgentIdentity& agent, const std::string& token_sha256,
                          Sender send, Closer close) {
  auto seat = std::make_shared<Seat>();
  seat->agent = agent;
  seat->token_sha256 = token_sha256;
  seat->send = std::move(send);
  seat->close = std::move(close);
  std::shared_ptr<const Jobs> jobs;
  {
    std::lock_guard lock(mu_);
    seat->id = next_id_++;
    seats_[seat->id] = seat;
    jobs = current_;
  }
  if (jobs) {
    Offer(*seat, jobs);
  } else {
    ReloadJobs();  // the hub has not read them yet (database down at start): try now
  }
  Claim(*seat);
  return seat->id;
}

void SessionHub::Leave(uint64_t id) {
  std::lock_guard lock(mu_);
  seats_.erase(id);
}

void SessionHub::SetTokenCheck(TokenCheck check, std::chrono::milliseconds every) {
  {
    std::lock_guard lock(mu_);
    token_check_ = std::move(check);
    // With no token cache (TTL 0) still a bounded rate: two reads a second per collector.
    token_check_every_ = std::max(every, std::chrono::milliseconds(500));
  }
  RecheckTokens();  // the loop's next wait then uses the interval
}

void SessionHub::RecheckTokens() {
  recheck_ = true;
  listener_.Interrupt();
}

void SessionHub::Offer(Seat& seat, const std::shared_ptr<const Jobs>& jobs) {
  std::lock_guard lock(seat.mu);
  if (seat.closed) return;
  if (jobs->generation < seat.generation) return;  // a newer read was offered already
  seat.generation = jobs->generation;
  v1::CollectorMessage message;
  message.mutable_assignments();  // the complete set, even when empty (the last job deleted)
  std::set<std::string> assigned;
  for (const auto& job : jobs->specs) {
    if (!wire::SelectorMatches(job.selector(), seat.agent)) continue;
    *message.mutable_assignments()->add_jobs() = job;
    assigned.insert(job.name());
  }
  std::string bytes = store::DeterministicBytes(message);
  if (bytes == seat.sent) return;
  seat.send(message);
  seat.sent = std::move(bytes);
  seat.assigned = std::move(assigned);
}

void SessionHub::Claim(Seat& seat) {
  std::vector<std::string> assigned;
  {
    std::lock_guard lock(seat.mu);
    assigned.assign(seat.assigned.begin(), seat.assigned.end());
  }
  if (assigned.empty()) return;
  // Claimed only while the session's token is valid: a request is never claimed for a
  // session whose token is gone, even before CheckTokens closes it.
  auto requests = jobs_.ClaimRunNow(seat.agent, assigned, seat.token_sha256);
  if (!requests.ok()) {
    std::cerr << "devtime-collector: run-now for agent " << seat.agent.name() << ": "
              << requests.status().message() << std::endl;
    return;
  }
  for (const auto& request : *requests) {
    v1::CollectorMessage message;
    *message.mutable_run_now() = request;
    seat.send(message);
  }
}

void SessionHub::ReloadJobs() {
  std::lock_guard reload(reload_mu_);
  auto specs = jobs_.ListJobs();
  if (!specs.ok()) {
    std::cerr << "devtime-collector: sessions: " << specs.status().message() << std::endl;
    return;
  }
  std::shared_ptr<const Jobs> jobs;
  std::vector<std::shared_ptr<Seat>> seats;
  {
    std::lock_guard lock(mu_);
    jobs = current_ = std::make_shared<const Jobs>(Jobs{++generation_, std::move(*specs)});
    for (const auto& [id, seat] : seats_) seats.push_back(seat);
  }
  for (const auto& seat : seats) Offer(*seat, jobs);
}

void SessionHub::Deliver(const store::RunNowTarget& target) {
  // The newest session that may serve it: after a reconnect the old session of an agent may
  // linger until gRPC notices it is gone, and the new one is the one that listens.
  std::shared_ptr<Seat> chosen;
  {
    std::lock_guard lock(mu_);
    for (auto it = seats_.rbegin(); it != seats_.rend() && !chosen; ++it) {
      Seat& seat = *it->second;
      if (!target.host.empty() && seat.agent.host() != target.host) continue;
      std::lock_guard seat_lock(seat.mu);
      if (seat.assigned.count(target.job)) chosen = it->second;
    }
  }
  if (chosen) Claim(*chosen);  // nobody here may serve it: it waits for a session that may
}

void SessionHub::Resync() {
  ReloadJobs();
  OfferPending();
}

void SessionHub::OfferPending() {
  auto pending = jobs_.PendingRunNow();
  if (!pending.ok()) {
    std::cerr << "devtime-collector: sessions: " << pending.status().message() << std::endl;
    return;
  }
  for (const auto& target : *pending) Deliver(target);
}

void SessionHub::Heartbeat() {
  std::vector<std::string> names;
  {
    std::lock_guard lock(mu_);
    std::set<std::string> unique;
    for (const auto& [id, seat] : seats_) unique.insert(seat->agent.name());
    names.assign(unique.begin(), unique.end());
  }
  if (auto status = jobs_.TouchAgents(names); !status.ok()) {
    std::cerr << "devtime-collector: heartbeat: " << status.message() << std::endl;
  }
}

std::chrono::milliseconds SessionHub::CheckTokens() {
  TokenCheck check;
  std::chrono::milliseconds every;
  std::map<std::string, std::string> agents;  // digest -> agent
  {
    std::lock_guard lock(mu_);
    check = token_check_;
    every = token_check_every_;
    for (const auto& [id, seat] : seats_) {
      if (!seat->token_sha256.empty()) agents[seat->token_sha256] = seat->agent.name();
    }
  }
  if (!check || agents.empty()) return every;
  auto lost = check(agents);
  if (!lost.ok()) {  // the sessions stay; claims need the database too, so none is served
    std::cerr << "devtime-collector: sessions: " << lost.status().message() << std::endl;
    return every;
  }
  if (lost->empty()) return every;
  std::vector<std::pair<std::shared_ptr<Seat>, std::string>> closing;
  {
    std::lock_guard lock(mu_);
    for (auto it = seats_.begin(); it != seats_.end();) {
      auto why = lost->find(it->second->token_sha256);
      if (why == lost->end()) {
        ++it;
        continue;
      }
      closing.emplace_back(it->second, why->second);
      it = seats_.erase(it);  // no more offers or run-now requests; its Leave finds nothing
    }
  }
  for (const auto& [seat, why] : closing) {
    {
      std::lock_guard lock(seat->mu);
      seat->closed = true;
    }
    std::cerr << "devtime-collector: closing a session of agent " << seat->agent.name() << ": "
              << why << std::endl;
    seat->close(absl::UnauthenticatedError(why + "; this session is closed"));
  }
  // A request that chose one of them since it was last checked waits unclaimed: offer it to
  // the sessions left.
  if (!closing.empty()) OfferPending();
  return every;
}

void SessionHub::Loop() {
  using Clock = std::chrono::steady_clock;
  auto next_beat = Clock::now() + options_.poll_interval;
  auto next_resync = Clock::now() + options_.resync_interval;
  auto next_check = Clock::now();
  while (!stopping_) {
    auto wakeup = listener_.Wait(std::min({next_beat, next_resync, next_check}));
    if (stopping_) break;
    if (recheck_.exchange(false) || Clock::now() >= next_check) {
      next_check = Clock::now() + CheckTokens();
    }
    if (wakeup.resubscribed || Clock::now() >= next_resync) {
      Resync();
      next_resync = Clock::now() + options_.resync_interval;
    } else {
      bool jobs_changed = false;
      std::vector<store::RunNowTarget> run_now;
      for (const auto& notification : wakeup.notifications) {
        if (notification.channel == store::kJobsChannel) {
          jobs_changed = true;
        } else {
          run_now.push_back(store::ParseRunNowPayload(notification.payload));
        }
      }
      if (jobs_changed) ReloadJobs();  // first: a run-now may be for a job just assigned
      for (const auto& target : run_now) Deliver(target);
    }
    if (Clock::now() >= next_beat) {
      Heartbeat();
      next_beat = Clock::now() + options_.poll_interval;
    }
  }
}

}  // namespace devtime::collector
