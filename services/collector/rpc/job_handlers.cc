// Jobs, their slots and run-now requests, and agents (tokens, last seen).
#include <set>

#include "proto/wire/job_spec.h"
#include "services/collector/metrics/fleet_metrics.h"
#include "services/collector/rpc/collector_service.h"
#include "services/collector/rpc/job_limits.h"
#include "services/collector/rpc/paging.h"
#include "services/collector/rpc/status.h"

namespace devtime::collector {
namespace {

constexpr unsigned kDefaultHistoryPageSize = 50;

google::protobuf::Timestamp ToProto(absl::Time t) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(absl::ToUnixSeconds(t));
  return ts;
}

}  // namespace

absl::StatusOr<v1::JobInfo> CollectorService::DescribeJob(
    const v1::JobSpec& spec, const std::vector<store::AgentRecord>& agents) {
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
  return Serve(auth_.RequireAdmin(*context, "jobs apply"), [&](const Caller&) -> absl::Status {
    if (auto s = CheckJobCount(request->jobs_size(), "jobs"); !s.ok()) return s;
    std::vector<v1::JobSpec> jobs;
    std::set<std::string> names;
    for (int i = 0; i < request->jobs_size(); ++i) {
      std::string path = "jobs[" + std::to_string(i) + "]";
      if (auto s = wire::ValidateJob(request->jobs(i), path); !s.ok()) return s;
      if (!names.insert(request->jobs(i).name()).second) {
        return absl::InvalidArgumentError(path + ".name: '" + request->jobs(i).name() +
                                          "' appears twice");
      }
      jobs.push_back(wire::WithDefaults(request->jobs(i)));
      if (auto s = CheckJobSize(jobs.back(), path); !s.ok()) return s;  // as stored and sent
    }
    return MoveInto(jobs_.ApplyJobs(jobs, kMaxJobs), response);
  });
}

grpc::Status CollectorService::ListJobs(grpc::ServerContext* context,
                                        const v1::ListJobsRequest* request,
                                        v1::ListJobsResponse* response) {
  return ServeList(
      auth_.Authenticate(*context), "jobs", *request, [&](const Page& page) -> absl::Status {
        auto jobs = jobs_.ListJobs(page.after ? page.after->key : "", page.size + 1);
        if (!jobs.ok()) return jobs.status();
        auto agents = jobs_.ListAgents();
        if (!agents.ok()) return agents.status();
        absl::StatusOr<std::vector<v1::JobInfo>> infos = std::vector<v1::JobInfo>();
        for (const auto& job : *jobs) {
          if (auto s = MoveInto(DescribeJob(job, *agents), &infos->emplace_back()); !s.ok())
            return s;
        }
        return FillPage(
            std::move(infos), page,
            [](const v1::JobInfo& info) { return PageKey{.key = info.spec().name()}; },
            response->mutable_jobs(), response->mutable_next_page_token());
      });
}

grpc::Status CollectorService::GetJob(grpc::ServerContext* context,
                                      const v1::GetJobRequest* request, v1::JobInfo* response) {
  return Serve(auth_.Authenticate(*context), [&](const Caller&) -> absl::Status {
    auto job = jobs_.GetJob(request->name());
    if (!job.ok()) return job.status();
    auto agents = jobs_.ListAgents();
    if (!agents.ok()) return agents.status();
    auto pending = jobs_.PendingRunNowOf(request->name());
    if (!pending.ok()) return pending.status();
    auto info = DescribeJob(*job, *agents);
    if (info.ok()) {
      for (auto& p : *pending) *info->add_pending_run_now() = std::move(p);
    }
    return MoveInto(std::move(info), response);
  });
}

grpc::Status CollectorService::DeleteJob(grpc::ServerContext* context,
                                         const v1::DeleteJobRequest* request,
                                         v1::DeleteJobResponse*) {
  return Serve(auth_.RequireAdmin(*context, "jobs delete"),
               [&](const Caller&) { return jobs_.DeleteJob(request->name()); });
}

grpc::Status CollectorService::RunJobNow(grpc::ServerContext* context,
                                         const v1::RunJobNowRequest* request,
                                         v1::RunJobNowResponse* response) {
  return Serve(auth_.RequireAdmin(*context, "jobs run-now"), [&](const Caller&) -> absl::Status {
    auto job = jobs_.GetJob(request->name());
    if (!job.ok()) return job.status();
    auto agents = jobs_.ListAgents();
    if (!agents.ok()) return agents.status();
    // A request no agent can take would wait for nothing: refuse it, saying who is there.
    const absl::Time connected_since =
        absl::Now() - absl::FromChrono(session_.poll_interval * kAgentConnectedPolls);
    std::string known;
    for (const auto& agent : *agents) {
      known += (known.empty() ? "" : ", ") + agent.identity.name() + " (host " +
               agent.identity.host() + ")";
      if (!wire::SelectorMatches(job->selector(), agent.identity)) continue;
      if (!request->host().empty() && agent.identity.host() != request->host()) continue;
      response->add_matching_agents(agent.identity.name());
      if (absl::FromUnixSeconds(agent.last_seen.seconds()) >= connected_since) {
        response->set_connected_agents(response->connected_agents() + 1);
      }
    }
    if (response->matching_agents_size() == 0) {
      return absl::FailedPreconditionError(
          "no agent matches job " + request->name() +
          (request->host().empty() ? "" : " on host " + request->host()) +
          ", so nothing would run it; known agents: " + (known.empty() ? "none" : known) +
          " (devtimectl agents list; the job's selector: devtimectl jobs show " + request->name() +
          ")");
    }
    auto id = jobs_.RequestRunNow(request->name(), request->host());
    if (!id.ok()) return id.status();
    response->set_request_id(*id);
    *response->mutable_expires_at() = ToProto(absl::Now() + store::kRunNowTtl);
    return absl::OkStatus();
  });
}

grpc::Status CollectorService::JobHistory(grpc::ServerContext* context,
                                          const v1::JobHistoryRequest* request,
                                          v1::JobHistoryResponse* response) {
  auto body = [&](const Page& page) {
    std::optional<std::pair<long long, std::string>> after;
    if (page.after) after.emplace(page.after->micros, page.after->key);
    return FillPage(
        jobs_.History(request->name(), page.size + 1, after), page,
        [](const v1::JobSlot& slot) {
          return PageKey{.micros = ToMicros(slot.slot_time()), .key = slot.host()};
        },
        response->mutable_slots(), response->mutable_next_page_token());
  };
  return ServeList(auth_.Authenticate(*context), "job history", *request, body,
                   kDefaultHistoryPageSize);
}

grpc::Status CollectorService::ListAgents(grpc::ServerContext* context,
                                          const v1::ListAgentsRequest*,
                                          v1::ListAgentsResponse* response) {
  return Serve(auth_.Authenticate(*context), [&](const Caller&) -> absl::Status {
    auto agents = jobs_.ListAgents();
    if (!agents.ok()) return agents.status();
    auto connected_since =
        absl::Now() - absl::FromChrono(session_.poll_interval * kAgentConnectedPolls);
    for (const auto& agent : *agents) {
      auto* info = response->add_agents();
      *info->mutable_identity() = agent.identity;
      *info->mutable_last_seen() = agent.last_seen;
      info->set_connected(absl::FromUnixSeconds(agent.last_seen.seconds()) >= connected_since);
    }
    return absl::OkStatus();
  });
}

grpc::Status CollectorService::AddAgent(grpc::ServerContext* context,
                                        const v1::AddAgentRequest* request,
                                        v1::AddAgentResponse* response) {
  return Serve(auth_.RequireAdmin(*context, "agents add"), [&](const Caller&) -> absl::Status {
    if (request->name().empty() || request->name().size() > 128) {
      return absl::InvalidArgumentError("name: is required (<= 128 bytes)");
    }
    if (request->host().empty() || request->host().size() > 256) {
      return absl::InvalidArgumentError("host: is required (<= 256 bytes)");
    }
    auto token = auth_.IssueAgentToken(request->name(), request->host());
    if (!token.ok()) return token.status();
    sessions_.RecheckTokens();  // a session with the old token here is closed at once
    response->set_token(*token);
    return absl::OkStatus();
  });
}

grpc::Status CollectorService::RevokeAgent(grpc::ServerContext* context,
                                           const v1::RevokeAgentRequest* request,
                                           v1::RevokeAgentResponse*) {
  return Serve(auth_.RequireAdmin(*context, "agents revoke"), [&](const Caller&) -> absl::Status {
    if (request->name().empty() || request->name().size() > 128) {
      return absl::InvalidArgumentError("name: is required (<= 128 bytes)");
    }
    if (auto s = auth_.RevokeAgentToken(request->name()); !s.ok()) return s;
    sessions_.RecheckTokens();  // its sessions here are closed at once, elsewhere within the TTL
    return absl::OkStatus();
  });
}

}  // namespace devtime::collector
