// devtime::collector — the collector's gRPC service: authenticates every call (auth.h),
// translates between the wire and the stores (store/), and after a run is stored hands it
// to the analyzer (analyze/analyzer.h). Validation is proto/wire/validation.h's.
//
// Handlers by concern: run_handlers.cc (upload and reads), job_handlers.cc (jobs, agents),
// agent_session.cc (the agents' long-lived stream), regression_handlers.cc (triage).
//
// AgentSession, the one long-lived call, is served with gRPC's callback API (one reactor
// object per session, no thread; session_hub.h pushes to it); the unary calls stay
// synchronous handlers on gRPC's thread pool, where blocking SQL is fine.
//
// UploadRun takes its request as bytes (issue 26): gRPC's own parse of a malformed request
// (truncated, garbage, invalid UTF-8 in a string field) fails before any handler runs and
// answers INTERNAL with no message, which agents retry for as long as a server error; parsed
// here, it is INVALID_ARGUMENT saying what is wrong, and an agent sets the run aside. It is
// still a synchronous handler on gRPC's pool (gRPC's "streamed unary" shape: one read, one
// write), and gRPC's receive size limit applies to it as to every call.
//
// Thread-safety: handlers run concurrently on gRPC's threads; the stores and metrics are
// safe for that.
#pragma once

#include <chrono>

#include "absl/status/status.h"
#include "devtime/v1/collector.grpc.pb.h"
#include "services/collector/analyze/analyzer.h"
#include "services/collector/metrics/collector_metrics.h"
#include "services/collector/rpc/auth.h"
#include "services/collector/rpc/session_hub.h"
#include "services/collector/rpc/status.h"
#include "services/collector/store/database.h"
#include "services/collector/store/hunt_store.h"
#include "services/collector/store/job_store.h"
#include "services/collector/store/regression_store.h"
#include "services/collector/store/run_store.h"

namespace devtime::collector {

// What the service works with; every part must outlive it (server.cc owns them).
struct ServiceParts {
  store::Database& db;
  store::RunStore& runs;
  store::JobStore& jobs;
  store::RegressionStore& regressions;
  analyze::RegressionAnalyzer& analyzer;
  CollectorMetrics& metrics;
  SessionHub& sessions;
};

class CollectorService final
    : public v1::Collector::WithCallbackMethod_AgentSession<v1::Collector::Service> {
 public:
  // `admin_token` empty = authentication disabled (every caller is admin). Agent tokens are
  // re-checked against the database after `token_cache_ttl` (auth.h).
  CollectorService(ServiceParts parts, const std::string& admin_token, SessionOptions session = {},
                   std::chrono::milliseconds token_cache_ttl = kTokenCacheTtl)
      : runs_(parts.runs),
        jobs_(parts.jobs),
        regressions_(parts.regressions),
        analyzer_(parts.analyzer),
        metrics_(parts.metrics),
        sessions_(parts.sessions),
        auth_(parts.db, parts.metrics, admin_token, token_cache_ttl),
        session_(session) {
    ServeUploadRunAsBytes();
    // Open sessions' tokens are re-checked twice per TTL, so one replaced or revoked is closed
    // within it (auth.h). The hub is stopped before this service is destroyed (server.cc).
    sessions_.SetTokenCheck([this](const auto& agents) { return auth_.LostTokens(agents); },
                            token_cache_ttl / 2);
  }

  grpc::Status ListRuns(grpc::ServerContext* context, const v1::ListRunsRequest* request,
                        v1::ListRunsResponse* response) override;
  grpc::Status GetRun(grpc::ServerContext* context, const v1::GetRunRequest* request,
                      v1::GetRunResponse* response) override;
  grpc::Status ResolveRun(grpc::ServerContext* context, const v1::ResolveRunRequest* request,
                          v1::RunInfo* response) override;
  grpc::Status ListModels(grpc::ServerContext* context, const v1::ListModelsRequest* request,
                          v1::ListModelsResponse* response) override;

  grpc::Status ApplyJobs(grpc::ServerContext* context, const v1::ApplyJobsRequest* request,
                         v1::ApplyJobsResponse* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context, const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override;
  grpc::Status GetJob(grpc::ServerContext* context, const v1::GetJobRequest* request,
                      v1::JobInfo* response) override;
  grpc::Status DeleteJob(grpc::ServerContext* context, const v1::DeleteJobRequest* request,
                         v1::DeleteJobResponse* response) override;
  grpc::Status RunJobNow(grpc::ServerContext* context, const v1::RunJobNowRequest* request,
                         v1::RunJobNowResponse* response) override;
  grpc::Status JobHistory(grpc::ServerContext* context, const v1::JobHistoryRequest* request,
                          v1::JobHistoryResponse* response) override;
  grpc::Status ListAgents(grpc::ServerContext* context, const v1::ListAgentsRequest* request,
                          v1::ListAgentsResponse* response) override;
  grpc::Status AddAgent(grpc::ServerContext* context, const v1::AddAgentRequest* request,
                        v1::AddAgentResponse* response) override;
  grpc::Status RevokeAgent(grpc::ServerContext* context, const v1::RevokeAgentRequest* request,
                           v1::RevokeAgentResponse* response) override;
  // agent_session.cc: the reactor of one session.
  grpc::ServerBidiReactor<v1::AgentMessage, v1::CollectorMessage>* AgentSession(
      grpc::CallbackServerContext* context) override;

  grpc::Status ListRegressions(grpc::ServerContext* context,
                               const v1::ListRegressionsRequest* request,
                               v1::ListRegressionsResponse* response) override;
  grpc::Status GetRegression(grpc::ServerContext* context, const v1::GetRegressionRequest* request,
                             v1::Regression* response) override;
  grpc::Status TransitionRegression(grpc::ServerContext* context,
                                    const v1::TransitionRegressionRequest* request,
                                    v1::Regression* response) override;
  // Issue 25: starts or re-runs a regression's culprit hunt (admin).
  grpc::Status HuntRegression(grpc::ServerContext* context,
                              const v1::HuntRegressionRequest* request,
                              v1::Regression* response) override;
  // The hunts' driver (server.cc sets it; UNAVAILABLE before).
  void set_hunts(store::HuntDriver* hunts) { hunts_ = hunts; }

 private:
  // A read any valid token may make: `*response` = read(), once the caller is authenticated.
  template <typename Read, typename Response>
  grpc::Status ServeRead(const grpc::ServerContext& context, Read read, Response* response) {
    return Serve(auth_.Authenticate(context),
                 [&](const Caller&) { return MoveInto(read(), response); });
  }

  // UploadRun's handler, in the place of the generated one that parses before it runs.
  void ServeUploadRunAsBytes();
  using UploadStream = grpc::ServerUnaryStreamer<grpc::ByteBuffer, grpc::ByteBuffer>;
  // Authenticates, parses the request (INVALID_ARGUMENT when it does not parse), stores the
  // run and writes the response.
  grpc::Status UploadRunBytes(grpc::ServerContext* context, UploadStream* stream);
  // Stores the run of a parsed request from `caller` (validated first); `start`: when the
  // call began, for the metrics.
  grpc::Status StoreRun(const Caller& caller, const v1::UploadRunRequest& request,
                        v1::UploadRunResponse* response,
                        std::chrono::steady_clock::time_point start);

  // Detection of one stored run, counted in the metrics; failures are logged, never fatal to
  // the upload (the run is stored; housekeeping analyses it again later).
  void AnalyzeRun(const std::string& run_id);
  absl::StatusOr<v1::JobInfo> DescribeJob(const v1::JobSpec& spec,
                                          const std::vector<store::AgentRecord>& agents);

  store::RunStore& runs_;
  store::JobStore& jobs_;
  store::RegressionStore& regressions_;
  analyze::RegressionAnalyzer& analyzer_;
  CollectorMetrics& metrics_;
  SessionHub& sessions_;
  Authorizer auth_;
  SessionOptions session_;
  store::HuntDriver* hunts_ = nullptr;
};

}  // namespace devtime::collector
