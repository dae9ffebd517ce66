// Run upload (validate -> store -> ack; the analysis queue is woken) and the run reads.
#include <chrono>

#include "proto/wire/names.h"
#include "proto/wire/validation.h"
#include "services/collector/rpc/collector_service.h"
#include "services/collector/rpc/paging.h"
#include "services/collector/rpc/status.h"

namespace devtime::collector {
namespace {

IngestOutcome OutcomeOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kResourceExhausted:
      return IngestOutcome::kInvalid;
    case absl::StatusCode::kAlreadyExists:
      return IngestOutcome::kConflict;
    case absl::StatusCode::kUnavailable:
      return IngestOutcome::kUnavailable;
    default:
      return IngestOutcome::kError;
  }
}

}  // namespace

grpc::Status CollectorService::UploadRun(grpc::ServerContext* context,
                                         const v1::UploadRunRequest* request,
                                         v1::UploadRunResponse* response) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto caller = auth_.Authenticate(*context);
  if (!caller.ok()) {
    metrics_.RecordIngest(absl::IsUnavailable(caller.status()) ? IngestOutcome::kUnavailable
                                                               : IngestOutcome::kUnauthorized,
                          elapsed());
    return ToGrpcStatus(caller.status());
  }
  if (caller->role == Role::kAgent && request->run().identity().host() != caller->host) {
    metrics_.RecordIngest(IngestOutcome::kUnauthorized, elapsed());
    return ToGrpcStatus(auth_.Forbidden("run.identity.host: agent " + caller->agent +
                                        " may only write runs for host " + caller->host +
                                        ", not '" + request->run().identity().host() + "'"));
  }
  absl::Status valid = request->has_run() ? wire::ValidateRun(request->run())
                                          : absl::InvalidArgumentError("run: is required");
  if (!valid.ok()) {
    metrics_.RecordIngest(IngestOutcome::kInvalid, elapsed());
    return ToGrpcStatus(valid);
  }
  auto outcome = runs_.IngestRun(request->run());
  if (!outcome.ok()) {
    metrics_.RecordIngest(OutcomeOf(outcome.status()), elapsed());
    return ToGrpcStatus(outcome.status());
  }
  bool duplicate = outcome->result == store::IngestResult::kDuplicate;
  metrics_.RecordIngest(duplicate ? IngestOutcome::kDuplicate : IngestOutcome::kStored, elapsed());
  if (request->run().source() == v1::RUN_SOURCE_MONITOR) metrics_.RecordMonitorWindow(duplicate);
  if (!duplicate) AnalyzeRun(request->run().identity().run_id());
  response->set_run_id(request->run().identity().run_id());
  response->set_duplicate(duplicate);
  *response->mutable_received_at() = outcome->received_at;
  return grpc::Status::OK;
}

// Detection is off the ack path: the stored run is in the analysis queue (runs.analyzed_at
// IS NULL, committed with it); this only wakes the queue's workers (analyzer.h), which judge
// it and record the verdict's metrics.
void CollectorService::AnalyzeRun(const std::string&) { analyzer_.Wake(); }

grpc::Status CollectorService::ListRuns(grpc::ServerContext* context,
                                        const v1::ListRunsRequest* request,
                                        v1::ListRunsResponse* response) {
  return ServeList(auth_.Authenticate(*context), "runs", *request, [&](const Page& page) {
    store::RunFilter filter;
    filter.model = request->model();
    filter.workload = request->workload();
    filter.source = request->source();  // issue 24: "monitor" for neuron-monitor windows
    if (request->has_since()) filter.since = request->since();
    filter.limit = page.size + 1;
    if (page.after) filter.after.emplace(page.after->micros, page.after->key);
    return FillPage(
        runs_.ListRuns(filter), page,
        [](const v1::RunInfo& run) {
          return PageKey{.micros = ToMicros(run.started_at()), .key = run.identity().run_id()};
        },
        response->mutable_runs(), response->mutable_next_page_token());
  });
}

grpc::Status CollectorService::GetRun(grpc::ServerContext* context,
                                      const v1::GetRunRequest* request,
                                      v1::GetRunResponse* response) {
  return ServeRead(
      *context, [&] { return runs_.GetRun(request->run_id()); }, response);
}

grpc::Status CollectorService::ResolveRun(grpc::ServerContext* context,
                                          const v1::ResolveRunRequest* request,
                                          v1::RunInfo* response) {
  return ServeRead(
      *context,
      [&] {
        store::RunRef ref{.ref = request->ref(),
                          .model = request->model(),
                          .workload = request->workload(),
                          .except_run_id = request->except_run_id()};
        if (request->has_instance_type()) ref.instance_type = request->instance_type();
        if (request->device_kind() != v1::DEVICE_KIND_UNSPECIFIED) {
          ref.device_kind = wire::DeviceKindName(request->device_kind());
        }
        return runs_.ResolveRun(ref);
      },
      response);
}

grpc::Status CollectorService::ListModels(grpc::ServerContext* context,
                                          const v1::ListModelsRequest*,
                                          v1::ListModelsResponse* response) {
  return Serve(auth_.Authenticate(*context), [&](const Caller&) {
    return MoveInto(runs_.ListModels(), response->mutable_models());
  });
}

}  // namespace devtime::collector
