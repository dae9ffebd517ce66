#include "services/collector/collector_service.h"

#include <atomic>
#include <chrono>
#include <iostream>
#include <set>
#include <thread>

#include "proto/wire/job_spec.h"
#include "proto/wire/limits.h"
#include "services/collector/fleet_metrics.h"
#include "services/collector/sql_util.h"
#include "services/collector/validation.h"

namespace devtime::collector {
namespace {

std::string IngestOutcomeName(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kResourceExhausted:
      return "invalid";
    case absl::StatusCode::kAlreadyExists:
      return "conflict";
    case absl::StatusCode::kUnavailable:
      return "unavailable";
    default:
      return "error";
  }
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

grpc::Status CollectorService::UploadRun(grpc::ServerContext* context,
                                         const v1::UploadRunRequest* request,
                                         v1::UploadRunResponse* response) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto caller = auth_.Authenticate(*context);
  if (!caller.ok()) {
    metrics_.RecordIngest(absl::IsUnavailable(caller.status()) ? "unavailable" : "unauthorized",
                          elapsed());
    return ToGrpcStatus(caller.status());
  }
  if (caller->role == Role::kAgent && request->run().identity().host() != caller->host) {
    metrics_.RecordIngest("unauthorized", elapsed());
    return ToGrpcStatus(auth_.Forbidden("run.identity.host: agent " + caller->agent +
                                        " may only write runs for host " + caller->host +
                                        ", not '" + request->run().identity().host() + "'"));
  }
  absl::Status valid = request->has_run() ? ValidateRun(request->run())
                                          : absl::InvalidArgumentError("run: is required");
  if (!valid.ok()) {
    metrics_.RecordIngest("invalid", elapsed());
    return ToGrpcStatus(valid);
  }
  auto outcome = store_.IngestRun(request->run());
  if (!outcome.ok()) {
    metrics_.RecordIngest(IngestOutcomeName(outcome.status()), elapsed());
    return ToGrpcStatus(outcome.status());
  }
  bool duplicate = outcome->result == IngestResult::kDuplicate;
  metrics_.RecordIngest(duplicate ? "duplicate" : "stored", elapsed());
  if (!duplicate) AnalyzeRun(request->run().identity().run_id());
  response->set_run_id(request->run().identity().run_id());
  response->set_duplicate(duplicate);
  *response->mutable_received_at() = outcome->received_at;
  return grpc::Status::OK;
}

void CollectorService::AnalyzeRun(const std::string& run_id) {
  auto start = std::chrono::steady_clock::now();
  auto verdict = analyzer_.Analyze(run_id);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!verdict.ok()) {
    std::cerr << "devtime-collector: analysing run " << run_id << ": " << verdict.status().message()
              << " (retried by housekeeping)" << std::endl;
  }
  metrics_.RecordDetection(verdict.ok() ? *verdict : "error", seconds);
}

grpc::Status CollectorService::ListRuns(grpc::ServerContext* context,
                                        const v1::ListRunsRequest* request,
                                        v1::ListRunsResponse* response) {
  if (auto caller = auth_.Authenticate(*context); !caller.ok())
    return ToGrpcStatus(caller.status());
  if (request->limit() > wire::kMaxListLimit) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "limit: at most " + std::to_string(wire::kMaxListLimit));
  }
  RunFilter filter;
  filter.model = request->model();
  filter.workload = request->workload();
  if (request->has_since()) filter.since = request->since();
  filter.limit = request->limit() == 0 ? wire::kDefaultListLimit : request->limit();
  auto runs = store_.ListRuns(filter);
  if (!runs.ok()) return ToGrpcStatus(runs.status());
  for (auto& run : *runs) *response->add_runs() = std::move(run);
  return grpc::Status::OK;
}

grpc::Status CollectorService::GetRun(grpc::ServerContext* context,
                                      const v1::GetRunRequest* request,
                                      v1::GetRunResponse* response) {
  if (auto caller = auth_.Authenticate(*context); !caller.ok())
    return ToGrpcStatus(caller.status());
  auto run = store_.GetRun(request->run_id());
  if (!run.ok()) return ToGrpcStatus(run.status());
  *response = std::move(*run);
  return grpc::Status::OK;
}

grpc::Status CollectorService::ListModels(grpc::ServerContext* context,
                                          const v1::ListModelsRequest*,
                                          v1::ListModelsResponse* response) {
  if (auto caller = auth_.Authenticate(*context); !caller.ok())
    return ToGrpcStatus(caller.status());
  auto models = store_.ListModels();
  if (!models.ok()) return ToGrpcStatus(models.status());
  for (auto& model : *models) *response->add_models() = std::move(model);
  return grpc::Status::OK;
}

}  // namespace devtime::collector

// ---- jobs -------------------------------------------------------------------------------

namespace devtime::collector {
namespace {

// An agent counts as connected if its session touched it within this many poll intervals.

google::protobuf::Timestamp ToProto(absl::Time t) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(absl::ToUnixSeconds(t));
  return ts;
}

}  // namespace

absl::StatusOr<v1::JobInfo> CollectorService::DescribeJob(const v1::JobSpec& spec,
                                                          const std::vector<AgentRecord>& agents) {
  v1::JobInfo info;
  *info.mutable_spec() = spec;
  auto history = jobs_.History(spec.name(), 1);
  if (!history.ok()) return history.status();
  if (!history->empty()) *info.mutable_last_slot() = history->front();
  if (auto next = wire::NextSlot(spec, absl::Now())) *info.mutable_next_slot() = ToProto(*next);
  for (const auto& agent : agents) {
    if (wire::SelectorMatches(spec.selector(), agent.identity)) {
      info.add_matching_agents(agent.identity.name());
    }
  }
  return info;
}

grpc::Status CollectorService::ApplyJobs(grpc::ServerContext* context,
                                         const v1::ApplyJobsRequest* request,
                                         v1::ApplyJobsResponse* response) {
  if (auto caller = auth_.RequireAdmin(*context, "jobs apply"); !caller.ok()) {
    return ToGrpcStatus(caller.status());
  }
  std::vector<v1::JobSpec> jobs;
  std::set<std::string> names;
  for (int i = 0; i < request->jobs_size(); ++i) {
    std::string path = "jobs[" + std::to_string(i) + "]";
    if (auto s = wire::ValidateJob(request->jobs(i), path); !s.ok()) return ToGrpcStatus(s);
    if (!names.insert(request->jobs(i).name()).second) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          path + ".name: '" + request->jobs(i).name() + "' appears twice");
    }
    jobs.push_back(wire::WithDefaults(request->jobs(i)));
  }
  auto applied = jobs_.ApplyJobs(jobs);
  if (!applied.ok()) return ToGrpcStatus(applied.status());
  *response = std::move(*applied);
  return grpc::Status::OK;
}

grpc::Status CollectorService::ListJobs(grpc::ServerContext* context, const v1::ListJobsRequest*,
                                        v1::ListJobsResponse* response) {
  if (auto caller = auth_.Authenticate(*context); !caller.ok())
    return ToGrpcStatus(caller.status());
  auto jobs = jobs_.ListJobs();
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  auto agents = jobs_.ListAgents();
  if (!agents.ok()) return ToGrpcStatus(agents.status());
  for (const auto& job : *jobs) {
    auto info = DescribeJob(job, *agents);
    if (!info.ok()) return ToGrpcStatus(info.status());
    *response->add_jobs() = std::move(*info);
  }
  return grpc::Status::OK;
}

grpc::Status CollectorService::GetJob(grpc::ServerContext* context,
                                      const v1::GetJobRequest* request, v1::JobInfo* response) {
  if (auto caller = auth_.Authenticate(*context); !caller.ok())
    return ToGrpcStatus(caller.status());
  auto job = jobs_.GetJob(request->name());
  if (!job.ok()) return ToGrpcStatus(job.status());
  auto agents = jobs_.ListAgents();
  if (!agents.ok()) return ToGrpcStatus(agents.status());
  auto info = DescribeJob(*job, *agents);
  if (!info.ok()) return ToGrpcStatus(info.status());
  *response = std::move(*info);
  return grpc::Status::OK;
}

grpc::Status CollectorService::DeleteJob(grpc::ServerContext* context,
                                         const v1::DeleteJobRequest* request,
                                         v1::DeleteJobResponse*) {
  if (auto caller = auth_.RequireAdmin(*context, "jobs delete"); !caller.ok()) {
    return ToGrpcStatus(caller.status());
  }
  return ToGrpcStatus(jobs_.DeleteJob(request->name()));
}

grpc::Status CollectorService::RunJobNow(grpc::ServerContext* context,
                                         const v1::RunJobNowRequest* request,
                                         v1::RunJobNowResponse* response) {
  if (auto caller = auth_.RequireAdmin(*context, "jobs run-now"); !caller.ok()) {
    return ToGrpcStatus(caller.status());
  }
  auto job = jobs_.GetJob(request->name());
  if (!job.ok()) return ToGrpcStatus(job.status());
  auto id = jobs_.RequestRunNow(request->name(), request->host());
  if (!id.ok()) return ToGrpcStatus(id.status());
  response->set_request_id(*id);
  return grpc::Status::OK;
}

grpc::Status CollectorService::JobHistory(grpc::ServerContext* context,
                                          const v1::JobHistoryRequest* request,
                                          v1::JobHistoryResponse* response) {
  if (auto caller = auth_.Authenticate(*context); !caller.ok())
    return ToGrpcStatus(caller.status());
  auto slots = jobs_.History(request->name(), request->limit() == 0 ? 50 : request->limit());
  if (!slots.ok()) return ToGrpcStatus(slots.status());
  for (auto& slot : *slots) *response->add_slots() = std::move(slot);
  return grpc::Status::OK;
}

grpc::Status CollectorService::ListAgents(grpc::ServerContext* context,
                                          const v1::ListAgentsRequest*,
                                          v1::ListAgentsResponse* response) {
  if (auto caller = auth_.Authenticate(*context); !caller.ok())
    return ToGrpcStatus(caller.status());
  auto agents = jobs_.ListAgents();
  if (!agents.ok()) return ToGrpcStatus(agents.status());
  auto connected_since =
      absl::Now() - absl::FromChrono(session_.poll_interval * kAgentConnectedPolls);
  for (const auto& agent : *agents) {
    auto* info = response->add_agents();
    *info->mutable_identity() = agent.identity;
    *info->mutable_last_seen() = agent.last_seen;
    info->set_connected(absl::FromUnixSeconds(agent.last_seen.seconds()) >= connected_since);
  }
  return grpc::Status::OK;
}

grpc::Status CollectorService::AddAgent(grpc::ServerContext* context,
                                        const v1::AddAgentRequest* request,
                                        v1::AddAgentResponse* response) {
  if (auto caller = auth_.RequireAdmin(*context, "agents add"); !caller.ok()) {
    return ToGrpcStatus(caller.status());
  }
  if (request->name().empty() || request->name().size() > 128) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "name: is required (<= 128 bytes)");
  }
  if (request->host().empty() || request->host().size() > 256) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "host: is required (<= 256 bytes)");
  }
  auto token = auth_.IssueAgentToken(request->name(), request->host());
  if (!token.ok()) return ToGrpcStatus(token.status());
  response->set_token(*token);
  return grpc::Status::OK;
}

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
      std::string bytes = DeterministicBytes(message);
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

// ---- regressions ------------------------------------------------------------------------

namespace devtime::collector {

grpc::Status CollectorService::ListRegressions(grpc::ServerContext* context,
                                               const v1::ListRegressionsRequest* request,
                                               v1::ListRegressionsResponse* response) {
  if (auto caller = auth_.Authenticate(*context); !caller.ok())
    return ToGrpcStatus(caller.status());
  if (request->limit() > wire::kMaxListLimit) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "limit: at most " + std::to_string(wire::kMaxListLimit));
  }
  auto found = regressions_.List(*request);
  if (!found.ok()) return ToGrpcStatus(found.status());
  for (auto& regression : *found) *response->add_regressions() = std::move(regression);
  return grpc::Status::OK;
}

grpc::Status CollectorService::GetRegression(grpc::ServerContext* context,
                                             const v1::GetRegressionRequest* request,
                                             v1::Regression* response) {
  if (auto caller = auth_.Authenticate(*context); !caller.ok())
    return ToGrpcStatus(caller.status());
  auto found = regressions_.Get(request->id());
  if (!found.ok()) return ToGrpcStatus(found.status());
  *response = std::move(*found);
  return grpc::Status::OK;
}

grpc::Status CollectorService::TransitionRegression(grpc::ServerContext* context,
                                                    const v1::TransitionRegressionRequest* request,
                                                    v1::Regression* response) {
  if (auto caller = auth_.RequireAdmin(*context, "regressions triage"); !caller.ok()) {
    return ToGrpcStatus(caller.status());
  }
  auto updated = regressions_.Transition(*request);
  if (!updated.ok()) return ToGrpcStatus(updated.status());
  *response = std::move(*updated);
  return grpc::Status::OK;
}

}  // namespace devtime::collector
