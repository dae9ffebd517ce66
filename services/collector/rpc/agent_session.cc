// The agent's session: a bidirectional stream that pushes the agent its assignments and
// run-now requests and receives its slot reports.
#include <atomic>
#include <thread>

#include "proto/wire/job_spec.h"
#include "services/collector/rpc/collector_service.h"
#include "services/collector/rpc/status.h"
#include "services/collector/store/sql_util.h"

namespace devtime::collector {

grpc::Status CollectorService::AgentSession(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::CollectorMessage, v1::AgentMessage>* stream) {
  v1::AgentMessage first;
  if (!stream->Read(&first) || !first.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "hello: an agent session must start with a hello");
  }
  const v1::AgentIdentity agent = first.hello().identity();
  if (agent.name().empty() || agent.host().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "hello.identity: name and host are required");
  }
  auto caller = auth_.Authenticate(*context);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (auth_.enabled() && (caller->role != Role::kAgent || caller->agent != agent.name() ||
                          caller->host != agent.host())) {
    return ToGrpcStatus(auth_.Forbidden("hello.identity: a session needs the token of agent '" +
                                        agent.name() + "' on host '" + agent.host() + "'"));
  }
  if (auto s = jobs_.UpsertAgent(agent); !s.ok()) return ToGrpcStatus(s);

  // One thread reads the agent's slot reports while this one pushes assignments and
  // run-now requests; gRPC allows one concurrent reader and one writer on a stream.
  std::atomic<bool> closed{false};
  std::thread reader([&] {
    v1::AgentMessage message;
    while (stream->Read(&message)) {
      if (!message.has_slot()) continue;
      v1::JobSlot slot = message.slot();
      slot.set_host(agent.host());   // an agent reports for its own host only
      (void)jobs_.RecordSlot(slot);  // on failure the agent re-reports on its next session
    }
    closed = true;
  });
  std::string sent_assignments;
  while (!closed && !context->IsCancelled()) {
    auto jobs = jobs_.ListJobs();
    if (jobs.ok()) {
      v1::CollectorMessage message;
      std::vector<std::string> assigned;
      for (const auto& job : *jobs) {
        if (!wire::SelectorMatches(job.selector(), agent)) continue;
        *message.mutable_assignments()->add_jobs() = job;
        assigned.push_back(job.name());
      }
      std::string bytes = store::DeterministicBytes(message);
      if (bytes != sent_assignments) {
        if (!stream->Write(message)) break;
        sent_assignments = bytes;
      }
      auto requests = jobs_.ClaimRunNow(agent, assigned);
      for (const auto& request : requests.ok() ? *requests : std::vector<v1::RunNowRequest>{}) {
        v1::CollectorMessage run_now;
        *run_now.mutable_run_now() = request;
        if (!stream->Write(run_now)) break;
      }
    }
    (void)jobs_.TouchAgent(agent.name());
    std::this_thread::sleep_for(session_.poll_interval);
  }
  context->TryCancel();  // unblocks the reader if the agent is still connected
  reader.join();
  return grpc::Status::OK;
}

}  // namespace devtime::collector
