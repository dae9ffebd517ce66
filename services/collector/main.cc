// devtime-collector: stores profiling runs in PostgreSQL and serves them over gRPC.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "services/collector/auth.h"
#include "services/collector/server.h"

namespace {

// Writes the bound ports once serving, so scripts and tests using port 0 can find them.
void WriteReadyFile(const std::string& path, const devtime::collector::CollectorServer& server) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << "{\"grpc_port\": " << server.grpc_port()
        << ", \"metrics_port\": " << server.metrics_port()
        << ", \"schema_version\": " << server.schema_version() << ", \"pid\": " << getpid()
        << "}\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  devtime::collector::ServerOptions options;
  std::string ready_file;
  int wait_seconds = 30;
  const char* env_db = std::getenv("DEVTIME_DATABASE");
  options.store.conninfo = env_db ? env_db : "";

  CLI::App app{
      "devtime-collector: stores profiling runs in PostgreSQL (schema migrated at start),\n"
      "serves them over gRPC (with the standard health service) and exports /metrics."};
  app.add_option("--database", options.store.conninfo,
                 "libpq connection string or URI (env DEVTIME_DATABASE), e.g.\n"
                 "'host=127.0.0.1 port=5432 dbname=devtime user=devtime'");
  app.add_option("--listen", options.grpc_listen, "gRPC address host:port (port 0 = any free)")
      ->capture_default_str();
  app.add_option("--metrics-listen", options.metrics_listen,
                 "address for Prometheus /metrics (port 0 = any free)")
      ->capture_default_str();
  app.add_option("--wait-for-database", wait_seconds,
                 "seconds to keep trying to reach the database at start")
      ->capture_default_str();
  int poll_ms = 1000, slot_check_ms = 30000, grace_seconds = 120;
  app.add_option("--session-poll-ms", poll_ms,
                 "how often agent sessions look for new assignments and run-now requests")
      ->capture_default_str();
  app.add_option("--slot-check-ms", slot_check_ms,
                 "how often unreported job slots are recorded as missed")
      ->capture_default_str();
  app.add_option(
         "--missed-slot-grace", grace_seconds,
         "seconds (plus the job's jitter) an agent has to report a slot before it is missed")
      ->capture_default_str();
  std::string admin_token_file, tls_cert_file, tls_key_file, tls_client_ca_file;
  bool no_auth = false;
  app.add_option("--admin-token-file", admin_token_file,
                 "file with the admin token; created with a new random token (mode 0600) if "
                 "missing. Agents get their own tokens: devtimectl agents add NAME --host HOST");
  app.add_flag("--no-auth", no_auth,
               "accept every call without a token (a trusted single-user machine only)");
  app.add_option("--tls-cert", tls_cert_file, "PEM certificate: serve gRPC over TLS only");
  app.add_option("--tls-key", tls_key_file, "PEM private key of --tls-cert");
  app.add_option("--tls-client-ca", tls_client_ca_file,
                 "PEM CA: require client certificates it signed (mutual TLS)");
  int fleet_refresh_ms = 15000;
  app.add_option("--metrics-refresh-ms", fleet_refresh_ms,
                 "how often the per-model, regression, job and agent gauges are re-read")
      ->capture_default_str();
  app.add_option("--top-ops", options.fleet.top_ops,
                 "operators per workload exported by name on /metrics (the rest: op=\"other\")")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  std::string notify_group = "Regressions and notifications";
  app.add_option("--alertmanager-url", options.notify.alertmanager_url,
                 "push open and resolved regressions to this Alertmanager (v2 API), e.g.\n"
                 "http://127.0.0.1:9093 (default: off)")
      ->group(notify_group);
  app.add_option("--webhook-url", options.notify.webhook_url,
                 "POST every regression event (opened, resolved, invalidated) as JSON here, in\n"
                 "order, at least once (default: off)")
      ->group(notify_group);
  app.add_option("--external-url", options.notify.external_url,
                 "alerts link to {URL}/regressions/ID (generatorURL); point it at what\n"
                 "serves regression pages for your team (default: no link)")
      ->group(notify_group);
  int notify_seconds = 60;
  app.add_option("--notify-every", notify_seconds,
                 "seconds between notification passes (firing alerts are re-sent each pass)")
      ->capture_default_str()
      ->group(notify_group);
  bool no_confirmation = false;
  app.add_flag("--no-confirmation-runs", no_confirmation,
               "never ask an agent to re-run a job to confirm a suspected regression (the next\n"
               "scheduled run confirms instead)")
      ->group(notify_group);
  app.add_option("--resolve-runs", options.analysis.resolve_runs,
                 "consecutive runs back at the baseline that resolve a regression as fixed")
      ->capture_default_str()
      ->check(CLI::Range(1, 100))
      ->group(notify_group);
  app.add_option("--gate-threshold", options.analysis.detector.gate_threshold,
                 "robust z a run must reach against its baseline to be suspected")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group(notify_group);
  app.add_option("--min-change", options.analysis.detector.min_relative_change,
                 "smallest relative change reported (0.01 = 1 %)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0))
      ->group(notify_group);
  app.add_option("--ready-file", ready_file,
                 "write {grpc_port, metrics_port, schema_version, pid} as JSON here once serving");
  CLI11_PARSE(app, argc, argv);
  if (options.store.conninfo.empty()) {
    std::cerr << "devtime-collector: no database: pass --database or set DEVTIME_DATABASE\n";
    return 2;
  }
  if (admin_token_file.empty() == !no_auth) {
    std::cerr << "devtime-collector: choose --admin-token-file PATH (tokens required) or "
                 "--no-auth (no tokens)\n";
    return 2;
  }
  if (!admin_token_file.empty()) {
    bool created = false;
    auto token = devtime::collector::LoadOrCreateAdminToken(admin_token_file, &created);
    if (!token.ok()) {
      std::cerr << "devtime-collector: " << token.status().message() << "\n";
      return 2;
    }
    if (created)
      std::cerr << "devtime-collector: wrote a new admin token to " << admin_token_file << "\n";
    options.admin_token = *token;
  } else {
    std::cerr << "devtime-collector: WARNING: --no-auth: anyone who reaches the port may write\n";
  }
  if (tls_cert_file.empty() != tls_key_file.empty() ||
      (!tls_client_ca_file.empty() && tls_cert_file.empty())) {
    std::cerr << "devtime-collector: --tls-cert and --tls-key go together (and --tls-client-ca "
                 "needs them)\n";
    return 2;
  }
  for (auto [path, into] :
       {std::pair{&tls_cert_file, &options.tls_cert}, std::pair{&tls_key_file, &options.tls_key},
        std::pair{&tls_client_ca_file, &options.tls_client_ca}}) {
    if (path->empty()) continue;
    std::ifstream in(*path);
    if (!in) {
      std::cerr << "devtime-collector: cannot read " << *path << "\n";
      return 2;
    }
    into->assign(std::istreambuf_iterator<char>(in), {});
  }
  options.wait_for_database = std::chrono::seconds(wait_seconds);
  options.session.poll_interval = std::chrono::milliseconds(poll_ms);
  options.slot_check_interval = std::chrono::milliseconds(slot_check_ms);
  options.missed_slot_grace = std::chrono::seconds(grace_seconds);
  options.analysis.confirmation_runs = !no_confirmation;
  options.fleet_refresh_interval = std::chrono::milliseconds(fleet_refresh_ms);
  options.notify.resend_every = std::chrono::seconds(notify_seconds);
  if (auto valid = devtime::collector::notify::ValidateOptions(options.notify); !valid.ok()) {
    std::cerr << "devtime-collector: " << valid.message() << "\n";
    return 2;
  }

  // Block termination signals in every thread; one thread waits for them and shuts down.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = devtime::collector::CollectorServer::Start(options);
  if (!server.ok()) {
    std::cerr << "devtime-collector: " << server.status().message() << "\n";
    return 1;
  }
  std::cerr << "devtime-collector: serving gRPC on port " << (*server)->grpc_port()
            << ", metrics on http://"
            << options.metrics_listen.substr(0, options.metrics_listen.rfind(':')) << ":"
            << (*server)->metrics_port() << "/metrics (schema version "
            << (*server)->schema_version() << ")" << std::endl;
  if (!ready_file.empty()) WriteReadyFile(ready_file, **server);

  std::thread stopper([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    std::cerr << "devtime-collector: signal " << signal << ", shutting down" << std::endl;
    (*server)->Shutdown();
  });
  (*server)->Wait();
  stopper.detach();
  return 0;
}
