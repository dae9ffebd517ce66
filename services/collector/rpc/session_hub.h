// devtime::collector — every agent session this collector holds, and what wakes them.
//
// Idle sessions cost memory, not threads or queries. One hub thread waits on the LISTEN
// connection (store/change_listener.h) and on two timers:
//  - a job changed (NOTIFY devtime_jobs): the jobs are read once (one transaction) and each
//    session whose assignments changed gets them pushed;
//  - a run-now request (NOTIFY devtime_run_now, payload job and host): one local session that
//    may serve it (its host, or any host for host ""; the job assigned to it) claims it with
//    JobStore::ClaimRunNow, whose SKIP LOCKED keeps it exactly-once across collectors;
//  - every heartbeat interval: one UPDATE sets last_seen of all agents with a session here
//    (none when there are no sessions);
//  - every resync interval, and whenever the LISTEN connection was (re)opened: jobs re-read
//    and every undelivered run-now request re-offered, which covers a lost notification;
//  - every token check interval (half the token cache's TTL, auth.h), and at once when asked
//    (RecheckTokens: this collector replaced or revoked a token): one query re-checks the
//    token digests of all sessions (TokenCheck); a session whose token was replaced or
//    revoked leaves the hub and is closed with UNAUTHENTICATED saying so. A periodic query
//    rather than a NOTIFY: it reaches every collector within the bound however the token
//    went (another collector, a lost notification, a row deleted by hand), costs one read
//    per interval for thousands of sessions, and none when there are no sessions.
// A run-now request is claimed only while the session's token is valid (JobStore::ClaimRunNow
// checks it in the claiming statement), so none is delivered on a session whose token was
// replaced or revoked before the claim, even before the check closes it.
// A session joining gets its assignments from the hub's copy of the jobs and claims what
// waits for it. Blocking work of the sessions themselves (token checks, slot reports) runs
// on the hub's few worker threads (Post).
//
// Thread-safety: safe for concurrent use; senders are called without the hub's lock held.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "devtime/v1/jobs.pb.h"
#include "services/collector/rpc/session_admission.h"
#include "services/collector/rpc/work_queue.h"
#include "services/collector/store/change_listener.h"
#include "services/collector/store/job_store.h"

namespace devtime::collector {

struct SessionOptions {
  // How often this collector writes the heartbeat (agents.last_seen) of all its sessions, in
  // one statement (--heartbeat-ms; --session-poll-ms is its old name, from when sessions
  // polled). An agent counts as connected while its last_seen is within kAgentConnectedPolls
  // of these intervals (metrics/fleet_metrics.h).
  std::chrono::milliseconds poll_interval{1000};
  // How often jobs and pending run-now requests are re-read in full (--session-resync-s).
  std::chrono::milliseconds resync_interval{std::chrono::minutes(5)};
  // Threads for the sessions' blocking work.
  std::size_t workers = 4;
  // Bounds (session_admission.h): sessions held at once (--max-agent-sessions), and of one
  // agent (--max-sessions-per-agent: more than one, as an agent's previous session may
  // linger until the collector notices it is gone, which keepalive bounds: server.cc).
  std::size_t max_sessions = 10'000;
  std::size_t max_sessions_per_agent = 4;
  // A session whose token was accepted must say hello within this (--hello-timeout-ms), or
  // it is closed with DEADLINE_EXCEEDED.
  std::chrono::milliseconds hello_timeout{10'000};
};

class SessionHub {
 public:
  // Queues a message for the agent; must not block.
  using Sender = std::function<void(const v1::CollectorMessage&)>;
  // Ends the session with `status` (once the messages already queued went out); must not
  // block.
  using Closer = std::function<void(const absl::Status&)>;
  // Of the sessions' token digests (digest -> agent name), those no longer valid, each with
  // why (Authorizer::LostTokens).
  using TokenCheck = std::function<absl::StatusOr<std::map<std::string, std::string>>(
      const std::map<std::string, std::string>&)>;

  // Starts the hub thread, which LISTENs through its own connection to `conninfo`.
  SessionHub(store::JobStore& jobs, const std::string& conninfo, SessionOptions options);
  ~SessionHub();  // Stop()
  SessionHub(const SessionHub&) = delete;
  SessionHub& operator=(const SessionHub&) = delete;

  // Registers a session of `agent` (authenticated and recorded by the caller), sends it its
  // assignments and the run-now requests waiting for it. Blocks (SQL): call it from Post.
  // `token_sha256`: the digest of the session's token, re-checked every token check interval
  // ("" with auth disabled: never); `close` ends the session when it is no longer valid.
  // Returns the id to Leave with.
  uint64_t Join(const v1::AgentIdentity& agent, const std::string& token_sha256, Sender send,
                Closer close);
  void Leave(uint64_t id);

  // How sessions' tokens are re-checked, and how often (kept at 500 ms at least). Until it
  // is set, they are not.
  void SetTokenCheck(TokenCheck check, std::chrono::milliseconds every);
  // Re-checks the sessions' tokens soon (on the hub thread), not at the next interval.
  void RecheckTokens();

  // Runs blocking work for a session on the hub's workers.
  void Post(std::function<void()> task) { workers_.Post(std::move(task)); }

  // Every session takes its places here before anything else, and gives them back at its end.
  SessionAdmission& admission() { return admission_; }
  const SessionOptions& options() const { return options_; }

  // Stops the hub thread and runs what was posted; sessions must have left (the gRPC server
  // is shut down first).
  void Stop();

  std::size_t sessions() const;
  bool listening() const { return listener_.listening(); }

 private:
  struct Seat;
  struct Jobs;

  void Loop();
  // Re-reads the jobs and pushes changed assignments; serialized (reload_mu_).
  void ReloadJobs();
  // Offers `jobs` to one session: pushes its assignments when they changed.
  void Offer(Seat& seat, const std::shared_ptr<const Jobs>& jobs);
  // Claims and sends the run-now requests this session may serve.
  void Claim(Seat& seat);
  void Deliver(const store::RunNowTarget& target);
  void Resync();
  // Offers every undelivered run-now request to a session that may serve it.
  void OfferPending();
  void Heartbeat();
  // Closes the sessions whose tokens are no longer valid; returns when to check next.
  std::chrono::milliseconds CheckTokens();

  store::JobStore& jobs_;
  const SessionOptions options_;
  store::ChangeListener listener_;
  WorkQueue workers_;
  SessionAdmission admission_;

  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<Seat>> seats_;    // guarded by mu_
  std::shared_ptr<const Jobs> current_;                // guarded by mu_; null until read
  uint64_t next_id_ = 1;                               // guarded by mu_
  uint64_t generation_ = 0;                            // guarded by mu_
  TokenCheck token_check_;                             // guarded by mu_
  std::chrono::milliseconds token_check_every_{5000};  // guarded by mu_
  std::mutex reload_mu_;

  std::atomic<bool> stopping_{false};
  std::atomic<bool> recheck_{false};  // RecheckTokens asked
  std::thread thread_;
};

}  // namespace devtime::collector
