#include "services/collector/server.h"

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

absl::StatusOr<std::unique_ptr<CollectorServer>> CollectorServer::Start(
    const ServerOptions& options) {
  std::unique_ptr<CollectorServer> server(new CollectorServer());
  auto store = Store::Open(options.store, options.wait_for_database);
  if (!store.ok()) return store.status();
  server->store_ = std::move(*store);

  server->metrics_ = std::make_unique<CollectorMetrics>(std::make_shared<prometheus::Registry>());
  server->metrics_->SetSchemaVersion(server->store_->schema_version());
  server->metrics_->SetDatabaseUp(true);
  try {
    server->exposer_ = std::make_unique<prometheus::Exposer>(options.metrics_listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError("cannot serve metrics on " + options.metrics_listen + ": " +
                                  e.what());
  }
  server->exposer_->RegisterCollectable(server->metrics_->registry());
  server->metrics_port_ = server->exposer_->GetListeningPorts().at(0);

  server->service_ = std::make_unique<CollectorService>(*server->store_, *server->metrics_,
                                                        options.admin_token, options.session);
  server->jobs_ = std::make_unique<JobStore>(*server->store_);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.grpc_listen, ServerCredentials(options), &server->grpc_port_);
  // Slack above the RunSummary limit for the request wrapper; larger messages are refused
  // by gRPC itself with RESOURCE_EXHAUSTED before any handler runs.
  builder.SetMaxReceiveMessageSize(static_cast<int>(wire::kMaxMessageBytes + 1024));
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (!server->server_ || server->grpc_port_ == 0) {
    return absl::UnavailableError("cannot serve gRPC on " + options.grpc_listen +
                                  " (address in use or invalid)");
  }
  server->server_->GetHealthCheckService()->SetServingStatus(kServiceName, true);
  server->watcher_ = std::thread([s = server.get(), options] { s->Housekeep(options); });
  return server;
}

CollectorServer::~CollectorServer() {
  Shutdown();
  if (watcher_.joinable()) watcher_.join();
}

void CollectorServer::Housekeep(const ServerOptions& options) {
  bool was_up = true;
  auto next_slot_check = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  while (!stop_cv_.wait_for(lock, options.health_interval, [&] { return stopping_; })) {
    lock.unlock();
    bool up = store_->Ping();
    if (up != was_up) {
      metrics_->SetDatabaseUp(up);
      server_->GetHealthCheckService()->SetServingStatus(kServiceName, up);
      was_up = up;
    }
    if (up && std::chrono::steady_clock::now() >= next_slot_check) {
      // Several collectors may do this at once: recording a missed slot is idempotent.
      absl::Time now = absl::Now();
      (void)jobs_->RecordMissedSlots(now - absl::Hours(48), now,
                                     absl::FromChrono(options.missed_slot_grace));
      next_slot_check = std::chrono::steady_clock::now() + options.slot_check_interval;
    }
    lock.lock();
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
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

}  // namespace devtime::collector
