// The collector's gRPC service: translates between the wire and the Store, and nothing
// more. Validation lives in validation.h, storage in store.h.
//
// Thread-safety: handlers run concurrently on gRPC's threads; Store and metrics are safe
// for that.
#pragma once

#include "absl/status/status.h"
#include "devtime/v1/collector.grpc.pb.h"
#include "services/collector/metrics.h"
#include "services/collector/store.h"

namespace devtime::collector {

class CollectorService final : public v1::Collector::Service {
 public:
  CollectorService(Store& store, CollectorMetrics& metrics) : store_(store), metrics_(metrics) {}

  grpc::Status UploadRun(grpc::ServerContext* context, const v1::UploadRunRequest* request,
                         v1::UploadRunResponse* response) override;
  grpc::Status ListRuns(grpc::ServerContext* context, const v1::ListRunsRequest* request,
                        v1::ListRunsResponse* response) override;
  grpc::Status GetRun(grpc::ServerContext* context, const v1::GetRunRequest* request,
                      v1::GetRunResponse* response) override;
  grpc::Status ListModels(grpc::ServerContext* context, const v1::ListModelsRequest* request,
                          v1::ListModelsResponse* response) override;

 private:
  Store& store_;
  CollectorMetrics& metrics_;
};

// The gRPC status for an absl status (same code, same message).
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace devtime::collector
