#include "services/collector/collector_service.h"

#include <chrono>

#include "proto/wire/limits.h"
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

grpc::Status CollectorService::UploadRun(grpc::ServerContext*, const v1::UploadRunRequest* request,
                                         v1::UploadRunResponse* response) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
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
  response->set_run_id(request->run().identity().run_id());
  response->set_duplicate(duplicate);
  *response->mutable_received_at() = outcome->received_at;
  return grpc::Status::OK;
}

grpc::Status CollectorService::ListRuns(grpc::ServerContext*, const v1::ListRunsRequest* request,
                                        v1::ListRunsResponse* response) {
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

grpc::Status CollectorService::GetRun(grpc::ServerContext*, const v1::GetRunRequest* request,
                                      v1::GetRunResponse* response) {
  auto run = store_.GetRun(request->run_id());
  if (!run.ok()) return ToGrpcStatus(run.status());
  *response = std::move(*run);
  return grpc::Status::OK;
}

grpc::Status CollectorService::ListModels(grpc::ServerContext*, const v1::ListModelsRequest*,
                                          v1::ListModelsResponse* response) {
  auto models = store_.ListModels();
  if (!models.ok()) return ToGrpcStatus(models.status());
  for (auto& model : *models) *response->add_models() = std::move(model);
  return grpc::Status::OK;
}

}  // namespace devtime::collector
