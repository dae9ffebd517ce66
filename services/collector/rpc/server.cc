#include "services/collector/rpc/server.h"

#include <iostream>
#include <optional>

#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "proto/wire/limits.h"

namespace devtime::collector {
namespace {

constexpr const char* kServiceName = "devtime.v1.Collector";

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const ServerOptions& options) {
  if (options.tls_cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions tls(
      options.tls_client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                    : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  tls.pem_root_certs = options.tls_client_ca;
  tls.pem_key_cert_pairs.push_back({options.tls_key, options.tls_cert});
  return grpc::SslServerCredentials(tls);
}

}  // namespace

// ---- the tier's duties ------------------------------------------------------------------------

// Missed-slot accounting is a duty of the whole tier (pending analyses are not: every
// collector's analysis workers claim queued runs with SKIP LOCKED, analyze/analyzer.h): with
// several collectors on one database, one of them does them each interval. That one holds a
// session-level advisory lock on a connection of its own; when it dies or loses the
// database, PostgreSQL ends its session and releases the lock, and another collector takes
// it when its next duty is due. The duty is idempotent, so the moment two collectors
// overlap during a takeover costs work, not correctness.
class CollectorServer::TierLease {
 public:
  explicit TierLease(std::string conninfo) : conninfo_(std::move(conninfo)) {}

  // True while this collector holds the lock (taking it when it is free); false when
  // another collector holds it or the database cannot be reached.
  bool Held() {
    bool held = false;
    try {
      if (!connection_) connection_ = std::make_unique<pqxx::connection>(conninfo_);
      pqxx::nontransaction tx{*connection_};
      // After a failover the lease lives on the new primary: a session on a standby (a
      // demoted primary still up) would hold a lock that no other collector sees.
      if (tx.exec1("SELECT pg_is_in_recovery()")[0].as<bool>()) {
        throw pqxx::broken_connection("the lease's server is a standby now");
      }
      // Asked of pg_locks, not remembered: a reconnected session holds nothing.
      held = tx.exec_params1(
                   "SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND granted"
                   " AND pid = pg_backend_pid() AND objsubid = 1"
                   " AND ((classid::bigint << 32) | objid::bigint) = $1",
                   kLockKey)[0]
                 .as<bool>() ||
             tx.exec_params1("SELECT pg_try_advisory_lock($1)", kLockKey)[0].as<bool>();
    } catch (const std::exception&) {
      connection_.reset();  // the next call connects afresh; the lock is gone with the session
      return false;
    }
    if (held != was_held_) {  // said at the first check and at every change
      std::cerr << "devtime-collector: "
                << (held ? "doing the tier's missed-slot duty"
                         : "another collector is doing the tier's duties")
                << std::endl;
      was_held_ = held;
    }
    return held;
  }

 private:
  static constexpr long long kLockKey = 0x686f75736b70;  // "houskp", shared by every collector
  std::string conninfo_;
  std::unique_ptr<pqxx::connection> connection_;
  std::optional<bool> was_held_;
};

absl::StatusOr<std::unique_ptr<CollectorServer>> CollectorServer::Start(
    const ServerOptions& options) {
  std::unique_ptr<CollectorServer> server(new CollectorServer());
  server->env_ = options.env;
  auto db = store::Database::Open(options.store, options.wait_for_database);
  if (!db.ok()) return db.status();
  server->db_ = std::move(*db);
  server->runs_ = std::make_unique<store::RunStore>(*server->db_);
  server->history_ = std::make_unique<store::History>(*server->db_);
  if (auto created = server->history_->EnsurePartitions(options.env->Now()); !created.ok()) {
    return created.status();
  }
  server->jobs_ = std::make_unique<store::JobStore>(*server->db_);
  server->regressions_ = std::make_unique<store::RegressionStore>(*server->db_);
  server->analysis_repository_ = std::make_unique<store::SqlAnalysisRepository>(*server->db_);
  server->analyzer_ = std::make_unique<analyze::RegressionAnalyzer>(*server->analysis_repository_,
                                                                    options.analysis);

  server->metrics_ = std::make_unique<CollectorMetrics>(std::make_shared<prometheus::Registry>());
  server->metrics_->SetSchemaVersion(server->db_->schema_version());
  server->metrics_->SetDatabaseUp(true);
  FleetMetricsOptions fleet = options.fleet;
  fleet.session_poll = options.session.poll_interval;
  server->fleet_ =
      std::make_unique<FleetMetrics>(*server->db_, *server->metrics_->registry(), fleet);
  try {
    server->exposer_ = std::make_unique<prometheus::Exposer>(options.metrics_listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError("cannot serve metrics on " + options.metrics_listen + ": " +
                                  e.what());
  }
  server->exposer_->RegisterCollectable(server->metrics_->registry());
  server->metrics_port_ = server->exposer_->GetListeningPorts().at(0);

  // Agent sessions: one LISTEN connection and one thread for all of them (session_hub.h).
  server->sessions_ =
      std::make_unique<SessionHub>(*server->jobs_, options.store.conninfo, options.session);
  server->service_ = std::make_unique<CollectorService>(
      ServiceParts{*server->db_, *server->runs_, *server->jobs_, *server->regressions_,
                   *server->analyzer_, *server->metrics_, *server->sessions_},
      options.admin_token, options.session, options.token_cache_ttl);
  // Culprit hunts (issue 25): their own thread, a pass every options.hunt.poll.
  server->hunts_ = std::make_unique<store::HuntDriver>(
      *server->db_, options.hunt,
      store::HuntEvents{.started = [m = server->metrics_.get()] { m->HuntStarted(); },
                        .run_spent = [m = server->metrics_.get()] { m->HuntRunSpent(); },
                        .finished = [m = server->metrics_.get()](
                                        const std::string& outcome,
                                        double seconds) { m->HuntFinished(outcome, seconds); }});
  server->service_->set_hunts(server->hunts_.get());
  grpc::EnableDefaultHealthCheckService(true);
  // Server reflection (grpc.reflection.v1alpha), so grpcurl and grpc_cli need no -proto. It
  // tells the schema only, the same as proto/ in the sources, so it asks for no token.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  if (options.tls_cert.empty()) {  // our own accept loop, handing connections to gRPC
    auto door = FrontDoor::Listen(options.grpc_listen, options.front_door);
    if (!door.ok()) return door.status();
    server->front_door_ = std::move(*door);
    server->grpc_port_ = server->front_door_->port();
  } else {
    builder.AddListeningPort(options.grpc_listen, ServerCredentials(options), &server->grpc_port_);
    // gRPC's own listener (front_door.h says why): bounds connections that never finish TLS.
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                               static_cast<int>(options.front_door.preface_timeout.count()));
  }
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(options.max_connection_idle.count()));
  // Slack above the RunSummary limit for the request wrapper; larger messages are refused
  // by gRPC itself with RESOURCE_EXHAUSTED before any handler runs.
  builder.SetMaxReceiveMessageSize(static_cast<int>(wire::kMaxMessageBytes + 1024));
  // Keepalive pings find connections whose agent is gone without a word (a host that lost
  // power): their sessions end within about 80 s and give back their places
  // (max_sessions_per_agent), so a reconnecting agent is not refused for long.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // idle sessions too
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (!server->server_ || server->grpc_port_ == 0) {
    return absl::UnavailableError("cannot serve gRPC on " + options.grpc_listen +
                                  " (address in use or invalid)");
  }
  server->server_->GetHealthCheckService()->SetServingStatus(kServiceName, true);
  if (server->front_door_) server->front_door_->Serve(server->server_.get());
  // The lease follows the primary (a multi-host conninfo reaches whichever it is now).
  server->tier_lease_ = std::make_unique<TierLease>(store::PrimaryConninfo(
      options.store.conninfo, static_cast<int>(options.store.connect_timeout.count())));
  server->watcher_ = std::thread([s = server.get(), options] { s->Housekeep(options); });
  server->hunts_->Start();
  // ---- the analysis queue's workers (detection off the ack path) ----
  server->analyzer_->StartWorkers(analyze::WorkerOptions{
      .workers = options.analysis_workers,
      .poll = absl::FromChrono(options.pending_analysis_interval),
      .on_verdict = [metrics = server->metrics_.get()](const std::string& run_id,
                                                       const absl::StatusOr<analyze::Verdict>& v,
                                                       double seconds) {
        if (run_id.empty()) {
          std::cerr << "devtime-collector: analysis queue: " << v.status().message() << std::endl;
          return;
        }
        if (!v.ok()) {
          std::cerr << "devtime-collector: analysing run " << run_id << ": " << v.status().message()
                    << " (retried)" << std::endl;
        }
        metrics->RecordDetection(v, seconds);
      }});
  if (!options.notify.alertmanager_url.empty() || !options.notify.webhook_url.empty()) {
    server->notifier_ = std::make_unique<notify::Notifier>(options.notify, *server->regressions_,
                                                           *server->metrics_->registry());
    server->notifier_thread_ = std::thread([s = server.get(), options] { s->Notify(options); });
  }
  return server;
}

CollectorServer::~CollectorServer() {
  Shutdown();
  if (server_) server_->Wait();             // every session has finished and left the hub
  if (sessions_) sessions_->Stop();         // before the service its workers' tasks refer to
  if (analyzer_) analyzer_->StopWorkers();  // they report to metrics_, destroyed before them
  if (watcher_.joinable()) watcher_.join();
  if (notifier_thread_.joinable()) notifier_thread_.join();
}

bool CollectorServer::Sleep(std::chrono::milliseconds period) {
  std::unique_lock lock(mu_);
  return env_->SleepUnless(lock, stop_cv_, period, [&] { return stopping_; });
}

void CollectorServer::Notify(const ServerOptions& options) {
  auto period = std::chrono::duration_cast<std::chrono::milliseconds>(options.notify.resend_every);
  notify::RunPasses(
      *env_, mu_, stop_cv_, period, [&] { return stopping_; },
      [&](absl::Time now) {
        auto ran = regressions_->AsOnlyNotifier([&] { return notifier_->PushOnce(now); });
        if (!ran.ok()) {
          std::cerr << "devtime-collector: notifications: " << ran.status().message() << std::endl;
        }
      });
}

void CollectorServer::Housekeep(const ServerOptions& options) {
  bool was_up = true;
  auto next_slot_check = env_->SteadyNow();
  auto next_fleet_refresh = env_->SteadyNow();
  auto next_history = env_->SteadyNow();
  while (Sleep(options.health_interval)) {
    bool up = db_->Ping();
    if (up != was_up) {
      metrics_->SetDatabaseUp(up);
      server_->GetHealthCheckService()->SetServingStatus(kServiceName, up);
      was_up = up;
    }
    if (db_->has_read_replica()) metrics_->SetReplicationLag(db_->MeasureReadLag());
    // The tier's duties: due on this collector's clock, done only by the lease holder.
    auto start = env_->SteadyNow();
    bool slots_due = up && start >= next_slot_check;
    bool ours = slots_due && tier_lease_->Held();
    if (slots_due) {
      if (ours) {
        absl::Time now = env_->Now();
        (void)jobs_->RecordMissedSlots(now - absl::Hours(48), now,
                                       absl::FromChrono(options.missed_slot_grace));
      }
      next_slot_check = env_->SteadyNow() + options.slot_check_interval;
    }
    if (up && env_->SteadyNow() >= next_fleet_refresh) {
      if (absl::Status status = fleet_->Refresh(env_->Now()); !status.ok()) {
        std::cerr << "devtime-collector: fleet metrics: " << status.message() << std::endl;
      }
      next_fleet_refresh = env_->SteadyNow() + options.fleet_refresh_interval;
    }
    // ---- history: partitions ahead, retention (idempotent across collectors) ----
    if (up && env_->SteadyNow() >= next_history) {
      if (auto created = history_->EnsurePartitions(env_->Now()); !created.ok()) {
        std::cerr << "devtime-collector: partitions: " << created.status().message() << std::endl;
      }
      // Runs dated outside the created months (imports) into their months, for retention.
      if (auto moved = history_->PartitionDefaultRows(); !moved.ok()) {
        std::cerr << "devtime-collector: partitions: " << moved.status().message() << std::endl;
      }
      if (options.retention_days > 0) {
        auto kept = history_->ApplyRetention(env_->Now(), options.retention_days);
        if (!kept.ok()) {
          std::cerr << "devtime-collector: retention: " << kept.status().message() << std::endl;
        } else if (kept->months_dropped > 0) {
          std::cerr << "devtime-collector: retention dropped " << kept->months_dropped
                    << " month(s), " << kept->runs_deleted << " runs; kept " << kept->months_kept
                    << " referenced by regressions" << std::endl;
        }
      }
      next_history = env_->SteadyNow() + options.history_interval;
    }
  }
}

void CollectorServer::Wait() {
  if (server_) server_->Wait();
}

void CollectorServer::Shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (front_door_) front_door_->Stop();  // before gRPC's shutdown: no hand-over after it
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

}  // namespace devtime::collector
