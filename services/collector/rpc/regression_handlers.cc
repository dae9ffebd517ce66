// Regressions: list, show, and a person's triage.
#include "absl/strings/numbers.h"
#include "services/collector/rpc/collector_service.h"
#include "services/collector/rpc/paging.h"
#include "services/collector/rpc/status.h"

namespace devtime::collector {

grpc::Status CollectorService::ListRegressions(grpc::ServerContext* context,
                                               const v1::ListRegressionsRequest* request,
                                               v1::ListRegressionsResponse* response) {
  return ServeList(
      auth_.Authenticate(*context), "regressions", *request, [&](const Page& page) -> absl::Status {
        store::RegressionFilter filter{
            .model = request->model(), .workload = request->workload(), .limit = page.size + 1};
        for (int state : request->states()) {
          filter.states.push_back(static_cast<v1::RegressionState>(state));
        }
        if (page.after) {
          int64_t id = 0;
          if (!absl::SimpleAtoi(page.after->key, &id)) {
            return absl::InvalidArgumentError("page_token: not a token of this list (regressions)");
          }
          filter.after.emplace(page.after->micros, id);
        }
        return FillPage(
            regressions_.List(filter), page,
            [](const v1::Regression& r) {
              return PageKey{.micros = ToMicros(r.first_bad_at()), .key = std::to_string(r.id())};
            },
            response->mutable_regressions(), response->mutable_next_page_token());
      });
}

grpc::Status CollectorService::GetRegression(grpc::ServerContext* context,
                                             const v1::GetRegressionRequest* request,
                                             v1::Regression* response) {
  return ServeRead(
      *context, [&] { return regressions_.Get(request->id()); }, response);
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

grpc::Status CollectorService::HuntRegression(grpc::ServerContext* context,
                                              const v1::HuntRegressionRequest* request,
                                              v1::Regression* response) {
  return Serve(auth_.RequireAdmin(*context, "regressions hunt"), [&](const Caller&) {
    if (!hunts_) return absl::UnavailableError("culprit hunts are not running yet");
    if (request->actor().empty()) return absl::InvalidArgumentError("actor: is required");
    auto started =
        hunts_->StartHunt(request->id(), {request->keys().begin(), request->keys().end()},
                          request->budget(), request->actor());
    if (!started.ok()) return started.status();
    return MoveInto(regressions_.Get(request->id()), response);
  });
}

}  // namespace devtime::collector
