#include "services/collector/rpc/collector_cli.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "proto/wire/command_line.h"
#include "services/collector/rpc/auth.h"

namespace devtime::collector {
namespace {

// What the command line says that ServerOptions does not hold as it is.
struct Flags : CollectorCommand {
  bool no_confirmation = false;
  bool no_hunts = false;
  int hunt_poll_ms = 2000;
  int hunt_run_timeout_s = 0;
  std::size_t database_connections = 0;  // 0 = sized from the work (Finish)
};

// Connections the work needs: one per analysis worker, kIngestConnections for uploads and
// reads (each holds one for a transaction of milliseconds; more would only queue in
// PostgreSQL instead of here), one for housekeeping and one for notifications.
constexpr std::size_t kIngestConnections = 8;

// A flag in whole `Unit`s (the unit its name says), read into the duration `into`, whose
// value before parsing is the default shown.
template <typename Unit, typename Duration>
CLI::Option* AddDuration(CLI::App& app, const std::string& name, Duration& into,
                         const std::string& help) {
  return app
      .add_option_function<int>(
          name, [&into](int count) { into = Unit(count); }, help)
      ->default_str(std::to_string(std::chrono::duration_cast<Unit>(into).count()));
}

void AddScaleFlags(CLI::App& app, Flags& c) {
  app.add_option("--analysis-workers", c.options.analysis_workers,
                 "threads judging stored runs (the queue of unanalysed runs in PostgreSQL)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  AddDuration<std::chrono::milliseconds>(
      app, "--analysis-poll-ms", c.options.pending_analysis_interval,
      "how often the analysis workers look for runs stored through other collectors");
  app.add_option("--retention-days", c.options.retention_days,
                 "drop history months older than this, except runs regressions reference "
                 "(0 = keep everything)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--database-connections", c.database_connections,
                 "PostgreSQL connections at most (default: analysis workers + " +
                     std::to_string(kIngestConnections + 2) + ")");
}

void AddFlags(CLI::App& app, Flags& c) {
  app.add_option("--database", c.options.store.conninfo,
                 "libpq connection string or URI (env DEVTIME_DATABASE), e.g.\n"
                 "'host=127.0.0.1 port=5432 dbname=devtime user=devtime'");
  app.add_option("--read-database", c.options.store.read_conninfo,
                 "a replica for runs list/show and models (reads that may lag a little), e.g.\n"
                 "'host=db1,db2,db3 ... target_session_attrs=prefer-standby'; default: none");
  AddDuration<std::chrono::seconds>(
      app, "--max-read-lag", c.options.store.max_read_lag,
      "seconds the --read-database replica may lag; beyond (or unreachable), reads go to\n"
      "the primary")
      ->check(CLI::NonNegativeNumber);
  AddDuration<std::chrono::seconds>(
      app, "--standby-ack-wait", c.options.store.standby_ack_wait,
      "seconds to wait, after a run's commit, for a standby to have flushed it before\n"
      "acknowledging it (UNAVAILABLE after: the agent retries); 0 = the commit alone. Set it\n"
      "with a replicated PostgreSQL (pg_auto_failover commits on one node while a promoted\n"
      "primary waits for a standby); the role needs pg_read_all_stats")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--listen", c.options.grpc_listen, "gRPC address host:port (port 0 = any free)")
      ->capture_default_str();
  app.add_option("--metrics-listen", c.options.metrics_listen,
                 "address for Prometheus /metrics (port 0 = any free)")
      ->capture_default_str();
  AddDuration<std::chrono::seconds>(app, "--wait-for-database", c.options.wait_for_database,
                                    "seconds to keep trying to reach the database at start");
  // Agent sessions. --session-poll-ms is --heartbeat-ms's old name: sessions are pushed to
  // now (NOTIFY/LISTEN) and only their heartbeat is periodic.
  AddDuration<std::chrono::milliseconds>(
      app, "--heartbeat-ms,--session-poll-ms", c.options.session.poll_interval,
      "how often this collector records that its agents are connected (one\n"
      "statement for all its sessions); an agent counts as connected for 5 of these")
      ->check(CLI::PositiveNumber);
  AddDuration<std::chrono::seconds>(
      app, "--session-resync-s", c.options.session.resync_interval,
      "how often sessions re-read jobs and run-now requests in full (changes are\n"
      "pushed at once; this covers a notification lost with the LISTEN connection)")
      ->check(CLI::PositiveNumber);
  AddDuration<std::chrono::milliseconds>(
      app, "--token-cache-ttl-ms", c.options.token_cache_ttl,
      "how long an agent token, once checked, is trusted without asking the\n"
      "database again: a replaced token stops working within this time (0 = always ask)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-agent-sessions", c.options.session.max_sessions,
                 "agent sessions this collector holds at once; beyond: RESOURCE_EXHAUSTED")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-sessions-per-agent", c.options.session.max_sessions_per_agent,
                 "sessions of one agent at once (an old one lingers until keepalive ends it)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  AddDuration<std::chrono::milliseconds>(
      app, "--hello-timeout-ms", c.options.session.hello_timeout,
      "how long a session may take to say hello once its token is accepted")
      ->check(CLI::PositiveNumber);
  AddDuration<std::chrono::milliseconds>(app, "--slot-check-ms", c.options.slot_check_interval,
                                         "how often unreported job slots are recorded as missed");
  AddDuration<std::chrono::seconds>(
      app, "--missed-slot-grace", c.options.missed_slot_grace,
      "seconds (plus the job's jitter) an agent has to report a slot before it is missed");
  app.add_option("--admin-token-file", c.admin_token_file,
                 "file with the admin token; created with a new random token (mode 0600) if "
                 "missing. Agents get their own tokens: devtimectl agents add NAME --host HOST");
  app.add_flag("--no-auth", c.no_auth,
               "accept every call without a token (a trusted single-user machine only)");
  app.add_option("--tls-cert", c.tls_cert_file, "PEM certificate: serve gRPC over TLS only");
  app.add_option("--tls-key", c.tls_key_file, "PEM private key of --tls-cert");
  app.add_option("--tls-client-ca", c.tls_client_ca_file,
                 "PEM CA: require client certificates it signed (mutual TLS)");
  AddDuration<std::chrono::milliseconds>(
      app, "--metrics-refresh-ms", c.options.fleet_refresh_interval,
      "how often the per-model, regression, job and agent gauges are re-read");
  app.add_option("--top-ops", c.options.fleet.top_ops,
                 "operators per workload exported by name on /metrics (the rest: op=\"other\")")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  std::string notify_group = "Regressions and notifications";
  app.add_option("--alertmanager-url", c.options.notify.alertmanager_url,
                 "push open and resolved regressions to this Alertmanager (v2 API), e.g.\n"
                 "http://127.0.0.1:9093 (default: off)")
      ->group(notify_group);
  app.add_option("--webhook-url", c.options.notify.webhook_url,
                 "POST every regression event (opened, resolved, invalidated) as JSON here, in\n"
                 "order, at least once (default: off)")
      ->group(notify_group);
  app.add_option("--external-url", c.options.notify.external_url,
                 "alerts link to {URL}/regressions/ID (generatorURL); point it at what\n"
                 "serves regression pages for your team (default: no link)")
      ->group(notify_group);
  AddDuration<std::chrono::seconds>(
      app, "--notify-every", c.options.notify.resend_every,
      "seconds between notification passes (firing alerts are re-sent each pass)")
      ->group(notify_group);
  app.add_flag("--no-confirmation-runs", c.no_confirmation,
               "never ask an agent to re-run a job to confirm a suspected regression (the next\n"
               "scheduled run confirms instead)")
      ->group(notify_group);
  app.add_option("--resolve-runs", c.options.analysis.resolve_runs,
                 "consecutive runs back at the baseline that resolve a regression as fixed")
      ->capture_default_str()
      ->check(CLI::Range(1, 100))
      ->group(notify_group);
  app.add_option("--gate-threshold", c.options.analysis.detector.gate_threshold,
                 "robust z a run must reach against its baseline to be suspected")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group(notify_group);
  app.add_option("--min-change", c.options.analysis.detector.min_relative_change,
                 "smallest relative change reported (0.01 = 1 %)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0))
      ->group(notify_group);
  app.add_flag("--no-hunts", c.no_hunts,
               "start no culprit hunt by itself (devtimectl regressions hunt still does)")
      ->group(notify_group);
  app.add_option("--hunt-budget", c.options.hunt.budget,
                 "culprit runs a hunt may spend per regression")
      ->capture_default_str()
      ->check(CLI::Range(1, 100))
      ->group(notify_group);
  app.add_option("--hunt-poll-ms", c.hunt_poll_ms,
                 "how often hunts look for their culprit runs and request the next")
      ->capture_default_str()
      ->check(CLI::Range(50, 600000))
      ->group(notify_group);
  app.add_option("--hunt-run-timeout-s", c.hunt_run_timeout_s,
                 "a culprit run not back by then is re-queued (0 = the job's timeout + 5 min)")
      ->capture_default_str()
      ->check(CLI::Range(0, 604800))
      ->group(notify_group);
  app.add_option("--ready-file", c.ready_file,
                 "write {grpc_port, metrics_port, schema_version, pid} as JSON here once serving");
  AddScaleFlags(app, c);
}

// Checks what CLI11 cannot (flags that go together) and fills in what follows from the flags.
std::optional<std::string> Finish(Flags& c) {
  if (c.options.store.conninfo.empty()) {
    return "no database: pass --database or set DEVTIME_DATABASE";
  }
  if (c.admin_token_file.empty() == !c.no_auth) {
    return "choose --admin-token-file PATH (tokens required) or --no-auth (no tokens)";
  }
  if (c.tls_cert_file.empty() != c.tls_key_file.empty() ||
      (!c.tls_client_ca_file.empty() && c.tls_cert_file.empty())) {
    return "--tls-cert and --tls-key go together (and --tls-client-ca needs them)";
  }
  ServerOptions& o = c.options;
  o.analysis.confirmation_runs = !c.no_confirmation;
  o.hunt.enabled = !c.no_hunts;
  o.hunt.poll = absl::Milliseconds(c.hunt_poll_ms);
  o.hunt.run_timeout = absl::Seconds(c.hunt_run_timeout_s);
  o.store.max_connections =
      c.database_connections > 0
          ? c.database_connections
          : static_cast<std::size_t>(o.analysis_workers) + kIngestConnections + 2;
  if (auto valid = notify::ValidateOptions(o.notify); !valid.ok()) {
    return std::string(valid.message());
  }
  return std::nullopt;
}

// Writes the bound ports once serving, so scripts and tests using port 0 can find them.
void WriteReadyFile(const std::string& path, const CollectorServer& server) {
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

ParsedCommandLine ParseCommandLine(int argc, const char* const* argv, const char* env_database,
                                   std::ostream& out, std::ostream& err) {
  Flags flags;
  flags.options.store.conninfo = env_database ? env_database : "";
  CLI::App app{
      "devtime-collector: stores profiling runs in PostgreSQL (schema migrated at start),\n"
      "serves them over gRPC (with the standard health service) and exports /metrics."};
  AddFlags(app, flags);
  wire::AddVersionFlag(app, "devtime-collector");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return {.exit_code = wire::ExitForParseError(app, e, "devtime-collector", out, err)};
  }
  if (auto problem = Finish(flags)) {
    err << "devtime-collector: " << *problem << "\n";
    return {.exit_code = 2};
  }
  return {.command = static_cast<CollectorCommand>(flags)};
}

absl::Status LoadCredentials(CollectorCommand& c, std::ostream& err) {
  if (!c.admin_token_file.empty()) {
    bool created = false;
    auto token = LoadOrCreateAdminToken(c.admin_token_file, &created);
    if (!token.ok()) return token.status();
    if (created)
      err << "devtime-collector: wrote a new admin token to " << c.admin_token_file << "\n";
    c.options.admin_token = *token;
  } else {
    err << "devtime-collector: WARNING: --no-auth: anyone who reaches the port may write\n";
  }
  for (auto [path, into] : {std::pair{&c.tls_cert_file, &c.options.tls_cert},
                            std::pair{&c.tls_key_file, &c.options.tls_key},
                            std::pair{&c.tls_client_ca_file, &c.options.tls_client_ca}}) {
    if (path->empty()) continue;
    std::ifstream in(*path);
    if (!in) return absl::NotFoundError("cannot read " + *path);
    into->assign(std::istreambuf_iterator<char>(in), {});
  }
  return absl::OkStatus();
}

int ServeUntilSignalled(const CollectorCommand& command) {
  // Block termination signals in every thread; one thread waits for them and shuts down.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const ServerOptions& options = command.options;
  auto server = CollectorServer::Start(options);
  if (!server.ok()) {
    std::cerr << "devtime-collector: " << server.status().message() << "\n";
    return 1;
  }
  std::cerr << "devtime-collector: serving gRPC on port " << (*server)->grpc_port()
            << ", metrics on http://"
            << options.metrics_listen.substr(0, options.metrics_listen.rfind(':')) << ":"
            << (*server)->metrics_port() << "/metrics (schema version "
            << (*server)->schema_version() << ")" << std::endl;
  if (!command.ready_file.empty()) WriteReadyFile(command.ready_file, **server);

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

}  // namespace devtime::collector
