// The running collector, and the one place that wires its rooms together: the store
// (store/), the analyzer (analyze/ over store's repository), the metrics (metrics/), the
// notifier (notify/) and the gRPC service (rpc/). It serves gRPC (service + standard health
// service) and /metrics, and runs two background threads:
//  - housekeeping: database health (flips health to NOT_SERVING while PostgreSQL is
//    unreachable), missed job slots (with several collectors on one database a duty of the
//    tier, done by one collector at a time: TierLease), the fleet gauges, history partitions
//    and retention;
//  - notifications: pushes regressions to Alertmanager and the webhook (notify/notifier.h),
//    in its own thread so that a slow receiver never delays the health check; with several
//    collectors on one database, one pass runs at a time (RegressionStore::AsOnlyNotifier).
//
// Thread-safety: Start, Wait and Shutdown may be called from different threads; Shutdown
// may be called more than once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/exposer.h"
#include "proto/wire/env.h"
#include "services/collector/analyze/analyzer.h"
#include "services/collector/metrics/collector_metrics.h"
#include "services/collector/metrics/fleet_metrics.h"
#include "services/collector/notify/notifier.h"
#include "services/collector/rpc/collector_service.h"
#include "services/collector/rpc/front_door.h"
#include "services/collector/store/analysis_repository.h"
#include "services/collector/store/database.h"
#include "services/collector/store/history.h"
#include "services/collector/store/job_store.h"
#include "services/collector/store/regression_store.h"
#include "services/collector/store/run_store.h"

namespace devtime::collector {

struct ServerOptions {
  std::string grpc_listen = "127.0.0.1:50051";    // host:port; port 0 picks a free one
  std::string metrics_listen = "127.0.0.1:9464";  // host:port for /metrics; port 0 picks one
  store::StoreOptions store;
  std::chrono::seconds wait_for_database{30};  // at start, before giving up
  std::chrono::milliseconds health_interval{2000};
  // Agent sessions (session_hub.h): heartbeat and re-sync intervals; agent tokens are
  // re-checked after token_cache_ttl (auth.h).
  SessionOptions session;
  std::chrono::milliseconds token_cache_ttl = kTokenCacheTtl;
  std::string admin_token;  // "" = authentication disabled (--no-auth)
  // TLS (PEM contents): with a certificate and key the gRPC port speaks only TLS; with a
  // client CA as well, clients must present a certificate that CA signed (mutual TLS).
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  // The plaintext gRPC port's accept loop (front_door.h): silent connections are closed after
  // front_door.preface_timeout, accepting pauses (never ends) when descriptors run out.
  FrontDoorOptions front_door;
  // Connections without a call for this long are closed (GOAWAY; clients reconnect on their
  // next call). Agents' sessions are calls, so a connected agent is never idle.
  std::chrono::milliseconds max_connection_idle{std::chrono::minutes(2)};
  // How often unreported job slots are recorded as missed, and how long after a slot (plus
  // the job's jitter) an agent has to report it first.
  std::chrono::milliseconds slot_check_interval{30000};
  std::chrono::seconds missed_slot_grace{120};
  // Detection thresholds and confirmation runs. Stored runs are judged by `analysis_workers`
  // threads working the queue of unanalysed runs (analyzer.h): woken by each commit here,
  // and every pending_analysis_interval for runs stored through other collectors.
  analyze::AnalyzerOptions analysis;
  analyze::HuntOptions hunt;  // culprit hunts (store/hunt_store.h)
  int analysis_workers = 2;
  std::chrono::milliseconds pending_analysis_interval{5000};
  // History (store/history.h): partitions created ahead and months older than this dropped
  // (0 = keep everything), checked every history_interval.
  int retention_days = 400;
  std::chrono::milliseconds history_interval{std::chrono::hours(1)};
  // Model, regression, job and agent gauges (fleet_metrics.h): refreshed this often.
  FleetMetricsOptions fleet;
  std::chrono::milliseconds fleet_refresh_interval{15000};
  // Alertmanager / webhook (both off by default); pushed every notify.resend_every.
  notify::NotifierOptions notify;
  // The clocks housekeeping and the notifier's passes are scheduled on (tests may pass a
  // fake); must outlive the server.
  wire::Env* env = wire::Env::Default();
};

class CollectorServer {
 public:
  // Opens the store (applying migrations), then serves. Fails if the database stays
  // unreachable for `wait_for_database` or a port cannot be bound.
  static absl::StatusOr<std::unique_ptr<CollectorServer>> Start(const ServerOptions& options);

  ~CollectorServer();
  CollectorServer(const CollectorServer&) = delete;
  CollectorServer& operator=(const CollectorServer&) = delete;

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }
  int schema_version() const { return db_->schema_version(); }

  void Wait();      // until Shutdown
  void Shutdown();  // stops serving; in-flight calls get a short grace period

 private:
  CollectorServer() = default;
  // Background duties: database health (every health_interval), missed job slots, the
  // fleet gauges, and history partitions and retention.
  void Housekeep(const ServerOptions& options);
  // Pushes notifications every notify.resend_every until Shutdown.
  void Notify(const ServerOptions& options);
  // Waits `period` of the env's steady clock, or until Shutdown; false once stopping.
  bool Sleep(std::chrono::milliseconds period);

  // Whether this collector does the tier's once-per-interval duties (server.cc).
  class TierLease;
  std::unique_ptr<TierLease> tier_lease_;  // used by the housekeeping thread only

  std::unique_ptr<store::Database> db_;
  std::unique_ptr<store::RunStore> runs_;
  std::unique_ptr<store::History> history_;
  std::unique_ptr<store::JobStore> jobs_;
  std::unique_ptr<store::RegressionStore> regressions_;
  std::unique_ptr<store::SqlAnalysisRepository> analysis_repository_;
  std::unique_ptr<analyze::RegressionAnalyzer> analyzer_;
  std::unique_ptr<CollectorMetrics> metrics_;
  std::unique_ptr<FleetMetrics> fleet_;
  std::unique_ptr<store::HuntDriver> hunts_;  // after metrics_ and db_: stopped before them
  std::unique_ptr<prometheus::Exposer> exposer_;
  // Declared before service_ and server_: sessions leave it as gRPC finishes them.
  std::unique_ptr<SessionHub> sessions_;
  std::unique_ptr<CollectorService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<FrontDoor> front_door_;  // the plaintext port's accept loop; null with TLS
  int grpc_port_ = 0;
  int metrics_port_ = 0;

  wire::Env* env_ = wire::Env::Default();
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread watcher_;
  std::unique_ptr<notify::Notifier> notifier_;
  std::thread notifier_thread_;
};

}  // namespace devtime::collector
