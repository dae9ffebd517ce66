// The agent's session: a bidirectional stream that pushes the agent its assignments and
// run-now requests and receives its slot reports.
//
// Served with gRPC's callback API: a session is this reactor object, no thread of its own.
// Reactions never block; what needs SQL (the token check, recording the agent, slot reports)
// runs on the session hub's workers (session_hub.h), which also push assignments and run-now
// requests through Send(). One read is outstanding at a time and the next starts only after
// the previous report was recorded, so an agent's reports are stored in the order it sent
// them (a slot's "finished" never overtakes its "started").
//
// Bounded (SessionOptions, session_admission.h): a session first takes a place among the
// collector's sessions (RESOURCE_EXHAUSTED beyond max_sessions), then its token is checked
// from the call's metadata, and nothing is read before it is accepted; then the hello must
// come within hello_timeout (DEADLINE_EXCEEDED), be within the identity's size limits
// (job_limits.h), match the token, and find a place among its agent's sessions
// (RESOURCE_EXHAUSTED beyond max_sessions_per_agent). Once joined, the hub re-checks the
// session's token and closes it with UNAUTHENTICATED when it was replaced or revoked.
//
// Lifetime: the reactor owns itself (self_) until gRPC calls OnDone; tasks and the hub hold
// weak or shared references, so a task that finishes after OnDone still finds valid memory
// and, seeing `finished_`, starts no more operations.
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "grpcpp/alarm.h"
#include "services/collector/rpc/collector_service.h"
#include "services/collector/rpc/job_limits.h"
#include "services/collector/rpc/status.h"

namespace devtime::collector {
namespace {

class SessionReactor final : public grpc::ServerBidiReactor<v1::AgentMessage, v1::CollectorMessage>,
                             public std::enable_shared_from_this<SessionReactor> {
 public:
  SessionReactor(grpc::CallbackServerContext* context, Authorizer& auth, store::JobStore& jobs,
                 SessionHub& hub)
      : context_(context), auth_(auth), jobs_(jobs), hub_(hub) {}

  // Holds itself, takes its place and has its token checked.
  void Begin() {
    self_ = shared_from_this();
    if (auto s = hub_.admission().Enter(); !s.ok()) return Close(ToGrpcStatus(s));
    {
      std::lock_guard lock(mu_);
      admitted_ = true;
    }
    hub_.Post([self = shared_from_this()] { self->CheckToken(); });
  }

  void OnReadDone(bool ok) override {
    if (!ok) return Close(grpc::Status::OK);  // the agent closed its side, or is gone
    if (!agent_) {
      CancelHelloDeadline();
      if (auto s = Greet(); !s.ok()) return Close(ToGrpcStatus(s));
      hub_.Post([self = shared_from_this()] { self->Welcome(); });
      return;
    }
    if (!in_.has_slot()) return StartRead(&in_);
    v1::JobSlot slot = in_.slot();
    slot.set_host(agent_->host());  // an agent reports for its own host only
    hub_.Post([self = shared_from_this(), slot = std::move(slot)] {
      (void)self->jobs_.RecordSlot(slot);  // on failure the agent re-reports on its next session
      self->ReadNext();
    });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    outbox_.pop_front();
    if (!ok) {  // the agent is gone: what is queued cannot reach it
      outbox_.clear();
      if (!closing_) closing_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent gone");
    }
    if (!outbox_.empty()) {
      StartWrite(&outbox_.front());
    } else {
      MaybeFinish();
    }
  }

  void OnDone() override {
    std::optional<uint64_t> seat;
    bool admitted;
    {
      std::lock_guard lock(mu_);
      done_ = true;
      seat = seat_;
      admitted = admitted_;
    }
    CancelHelloDeadline();
    if (seat) hub_.Leave(*seat);
    if (admitted) hub_.admission().Leave(agent_place_);
    self_.reset();  // may delete this: touch nothing after
  }

  // Queues `message` for the agent (from the hub, any thread); dropped once closing.
  void Send(const v1::CollectorMessage& message) {
    std::lock_guard lock(mu_);
    if (closing_) return;
    outbox_.push_back(message);
    if (outbox_.size() == 1) StartWrite(&outbox_.front());
  }

 private:
  // On a worker: the token from the call's metadata, before anything is read; then the
  // first read, which the hello must answer within the deadline.
  void CheckToken() {
    auto caller = auth_.Authenticate(*context_);
    if (!caller.ok()) return Close(ToGrpcStatus(caller.status()));
    std::lock_guard lock(mu_);
    if (closing_) return;
    caller_ = *caller;
    std::weak_ptr<SessionReactor> weak = weak_from_this();
    hello_deadline_.Set(std::chrono::system_clock::now() + hub_.options().hello_timeout,
                        [weak](bool fired) {
                          if (auto self = weak.lock(); self && fired) self->HelloTimedOut();
                        });
    hello_deadline_set_ = true;
    StartRead(&in_);
  }

  void HelloTimedOut() {
    if (greeted_) return;
    Close(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                       "hello: none within " +
                           std::to_string(hub_.options().hello_timeout.count()) +
                           " ms (--hello-timeout-ms)"));
  }

  void CancelHelloDeadline() {
    bool set;
    {
      std::lock_guard lock(mu_);
      set = hello_deadline_set_;
      hello_deadline_set_ = false;
    }
    if (set) hello_deadline_.Cancel();  // outside mu_: the alarm's callback takes it
  }

  // The first message: a hello within the limits, from the token's agent, with a place
  // among that agent's sessions.
  absl::Status Greet() {
    greeted_ = true;
    if (!in_.has_hello()) {
      return absl::InvalidArgumentError("hello: an agent session must start with a hello");
    }
    const v1::AgentIdentity& agent = in_.hello().identity();
    if (agent.name().empty() || agent.host().empty()) {
      return absl::InvalidArgumentError("hello.identity: name and host are required");
    }
    if (auto s = CheckAgentIdentitySize(agent, "hello.identity"); !s.ok()) return s;
    if (auth_.enabled() && (caller_.role != Role::kAgent || caller_.agent != agent.name() ||
                            caller_.host != agent.host())) {
      return auth_.Forbidden("hello.identity: a session needs the token of agent '" + agent.name() +
                             "' on host '" + agent.host() + "'");
    }
    if (auto s = hub_.admission().EnterAgent(agent.name()); !s.ok()) return s;
    agent_place_ = agent.name();
    agent_ = agent;
    return absl::OkStatus();
  }

  // On a worker: the agent's record, then a seat in the hub.
  void Welcome() {
    const v1::AgentIdentity& agent = *agent_;
    if (auto s = jobs_.UpsertAgent(agent); !s.ok()) return Close(ToGrpcStatus(s));
    std::weak_ptr<SessionReactor> weak = weak_from_this();
    uint64_t seat = hub_.Join(
        agent, auth_.enabled() ? caller_.token_sha256 : "",
        [weak](const v1::CollectorMessage& message) {
          if (auto self = weak.lock()) self->Send(message);
        },
        [weak](const absl::Status& status) {
          if (auto self = weak.lock()) self->Close(ToGrpcStatus(status));
        });
    bool gone;
    {
      std::lock_guard lock(mu_);
      gone = done_;
      if (!gone) seat_ = seat;
    }
    if (gone) return hub_.Leave(seat);  // the session ended while it was joining
    ReadNext();
  }

  void ReadNext() {
    std::lock_guard lock(mu_);
    if (!closing_) StartRead(&in_);
  }

  // Finishes the call once the writes already queued went out.
  void Close(const grpc::Status& status) {
    std::lock_guard lock(mu_);
    if (closing_) return;
    closing_ = status;
    MaybeFinish();
  }

  void MaybeFinish() {  // mu_ held
    if (!closing_ || finished_ || !outbox_.empty()) return;
    finished_ = true;
    Finish(*closing_);  // an outstanding read then completes with ok = false
  }

  grpc::CallbackServerContext* const context_;
  Authorizer& auth_;
  store::JobStore& jobs_;
  SessionHub& hub_;
  std::shared_ptr<SessionReactor> self_;  // until OnDone
  v1::AgentMessage in_;                   // the one outstanding read's target
  // Set before the first read starts, then constant (the read orders them before OnReadDone).
  Caller caller_{Role::kAgent, "", "", ""};
  std::atomic<bool> greeted_{false};        // the first message arrived
  std::optional<v1::AgentIdentity> agent_;  // set by the hello, then constant
  std::string agent_place_;                 // set by the hello: the agent's admission place
  grpc::Alarm hello_deadline_;

  std::mutex mu_;
  std::deque<v1::CollectorMessage> outbox_;  // guarded by mu_; front() is being written
  std::optional<grpc::Status> closing_;      // guarded by mu_: no more reads or new writes
  bool finished_ = false;                    // guarded by mu_: Finish called
  bool done_ = false;                        // guarded by mu_: OnDone ran
  std::optional<uint64_t> seat_;             // guarded by mu_
  bool admitted_ = false;                    // guarded by mu_: holds a place (admission)
  bool hello_deadline_set_ = false;          // guarded by mu_: the alarm may still fire
};

}  // namespace

grpc::ServerBidiReactor<v1::AgentMessage, v1::CollectorMessage>* CollectorService::AgentSession(
    grpc::CallbackServerContext* context) {
  auto reactor = std::make_shared<SessionReactor>(context, auth_, jobs_, sessions_);
  reactor->Begin();
  return reactor.get();
}

}  // namespace devtime::collector
