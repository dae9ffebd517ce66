// Regressions: list, show, and a person's triage.
#include "proto/wire/limits.h"
#include "services/collector/rpc/collector_service.h"
#include "services/collector/rpc/status.h"

namespace devtime::collector {

grpc::Status CollectorService::ListRegressions(grpc::ServerContext* context,
                                               const v1::ListRegressionsRequest* request,
                                               v1::ListRegressionsResponse* response) {
  return Serve(auth_.Authenticate(*context), [&](const Caller&) -> absl::Status {
    if (absl::Status limit = CheckListLimit(request->limit()); !limit.ok()) return limit;
    store::RegressionFilter filter{
        .model = request->model(), .workload = request->workload(), .limit = request->limit()};
    for (int state : request->states()) {
      filter.states.push_back(static_cast<v1::RegressionState>(state));
    }
    return MoveInto(regressions_.List(filter), response->mutable_regressions());
  });
}

grpc::Status CollectorService::GetRegression(grpc::ServerContext* context,
                                             const v1::GetRegressionRequest* request,
                                             v1::Regression* response) {
  return Serve(auth_.Authenticate(*context),
               [&](const Caller&) { return MoveInto(regressions_.Get(request->id()), response); });
}

grpc::Status CollectorService::TransitionRegression(grpc::ServerContext* context,
                                                    const v1::TransitionRegressionRequest* request,
                                                    v1::Regression* response) {
  return Serve(auth_.RequireAdmin(*context, "regressions triage"), [&](const Caller&) {
    return MoveInto(regressions_.Transition({.regression_id = request->id(),
                                             .to = request->to(),
                                             .resolution = request->resolution(),
                                             .actor = request->actor(),
                                             .reason = request->reason()}),
                    response);
  });
}

}  // namespace devtime::collector
