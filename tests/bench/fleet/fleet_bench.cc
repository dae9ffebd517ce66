// fleet_bench: one collector under a simulated fleet (issue 10 item 6). A program, not a
// timed test; every phase has a time limit, so it always ends by itself.
//
//   build/bin/fleet_bench [--database CONNINFO] [--sessions 2000] [--uploaders 50]
//                         [--runs-per-uploader 4] [--ops 500] [--steps 10] [--idle-seconds 30]
//
// It creates a fresh database on the PostgreSQL named by --database (or
// DEVTIME_TEST_DATABASE), starts build/bin/devtime-collector on it (--no-auth, loopback),
// and then, in one process:
//  1. sessions: N simulated agents (AgentSession streams, callback API, spread over
//     --connections TCP connections) connect and get their assignments; over an idle window
//     it reports the collector's threads, RSS and CPU and PostgreSQL's transactions/s and CPU;
//  2. run-now: RunJobNow for one agent at a time, timed until that agent's stream has it;
//  3. ingest: the sessions close (--sessions-during-ingest keeps them), then K uploaders, each
//     on its own connection (connected first, then all at once), upload their runs back to
//     back (K uploads in flight): operator rows/s, ack p50/p99;
//  4. detection: waits until the analysis queue has judged every acked run;
//  5. raw COPY of the same rows into same-shaped scratch tables on the same database (one
//     transaction per run, and one bulk COPY), and ingest's rate as a fraction of it.
// The database is dropped at the end. See README.md beside this file.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <latch>
#include <thread>

#include "CLI/CLI.hpp"
#include "nlohmann/json.hpp"
#include "proto/wire/channel.h"
#include "tests/bench/fleet/bench_runs.h"
#include "tests/bench/fleet/monitor_windows.h"
#include "tests/bench/fleet/probes.h"
#include "tests/bench/fleet/sim_agents.h"
#include "tests/support/process.h"
#include "tests/support/test_database.h"
#include "tests/support/wait.h"

namespace devtime::bench {
namespace {

using Clock = std::chrono::steady_clock;

// [sessions], [idle] and [run-now].
struct SessionPhases {
  int sessions = 2000;
  int connections = 0;  // 0 = min(sessions, 250)
  int idle_seconds = 30;
  int run_now_samples = 30;
};

// [ingest] and [raw COPY].
struct IngestPhases {
  int uploaders = 50;
  int runs_per_uploader = 4;
  int ops = 500;
  int steps = 10;
  bool sessions_during_ingest = false;
};

struct Options {
  std::string database;
  std::string collector = std::string(DEVTIME_BINARY_DIR) + "/bin/devtime-collector";
  std::vector<std::string> collector_args;
  int phase_timeout = 180;  // seconds
  int rest_seconds = 5;     // 0 skips the [rest] window
  SessionPhases fleet;
  IngestPhases ingest;
  // --monitor (issue 24): neuron-monitor windows instead of the sessions and profiles.
  bool monitor = false;
  int monitor_hosts = 2000;
  int monitor_models = 8;
  int monitor_hours = 2;
};

// PostgreSQL publishes a backend's transaction counts up to ~10 s late; windows compared to
// see the counter settle must be longer.
constexpr std::chrono::seconds kSettleWindow{12};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void Print(const char* key, double value, const char* unit = "") {
  std::printf("  %-34s %12.1f %s\n", key, value, unit);
  std::fflush(stdout);
}

void PrintWindow(const Window& w) {
  Print("collector threads", static_cast<double>(w.collector_end.threads));
  Print("collector RSS", static_cast<double>(w.collector_end.rss_kib) / 1024, "MiB");
  Print("collector CPU", w.collector_cpu_percent, "% of a core");
  Print("PostgreSQL transactions", w.pg_transactions_per_second, "/s");
  if (w.pg_cpu_percent) {
    Print("PostgreSQL CPU", *w.pg_cpu_percent, "% of a core");
  } else {
    std::printf("  %-34s %12s\n", "PostgreSQL CPU", "n/a (not on this machine)");
  }
  Print("window", w.seconds, "s");
}

// The collector process, started on `conninfo` without authentication.
class Collector {
 public:
  Collector(const Options& options, const std::string& conninfo)
      : dir_(testing::MakeTempDir("fleet-bench")) {
    std::string ready = dir_ + "/ready.json";
    std::vector<std::string> argv{
        options.collector,  "--database",  conninfo,       "--listen", "127.0.0.1:0",
        "--metrics-listen", "127.0.0.1:0", "--ready-file", ready,      "--no-auth"};
    argv.insert(argv.end(), options.collector_args.begin(), options.collector_args.end());
    process_ = std::make_unique<testing::Subprocess>(argv, dir_ + "/collector.log");
    const bool started =
        testing::WaitUntil([&] { return std::filesystem::exists(ready) || !process_->Running(); },
                           std::chrono::seconds(60), std::chrono::milliseconds(20));
    if (!started || !std::filesystem::exists(ready)) {
      throw std::runtime_error("the collector did not start; see " + dir_ + "/collector.log");
    }
    std::ifstream in(ready);
    address_ = "127.0.0.1:" + std::to_string(nlohmann::json::parse(in).at("grpc_port").get<int>());
  }
  ~Collector() {
    process_->Signal(SIGTERM);
    process_->Wait();
  }

  const std::string& address() const { return address_; }
  pid_t pid() const { return process_->pid(); }
  std::string log_path() const { return dir_ + "/collector.log"; }

 private:
  std::string dir_;
  std::string address_;
  std::unique_ptr<testing::Subprocess> process_;
};

void ApplyJob(v1::Collector::Stub& stub) {
  v1::ApplyJobsRequest request;
  auto* job = request.add_jobs();
  job->set_name("bench-job");
  job->set_model("bench");
  job->set_workload("sessions");
  job->set_command("true");
  job->mutable_schedule()->set_cron("0 2 * * *");
  (*job->mutable_selector()->mutable_labels())["pool"] = "bench";
  v1::ApplyJobsResponse response;
  auto context = wire::MakeContext(std::chrono::seconds(30));
  grpc::Status status = stub.ApplyJobs(context.get(), request, &response);
  if (!status.ok()) throw std::runtime_error("ApplyJobs: " + wire::Describe(status));
}

void RunNowPhase(const Options& options, v1::Collector::Stub& stub, SimulatedFleet& fleet) {
  std::vector<double> latencies;
  int missed = 0;
  auto phase_end = Clock::now() + std::chrono::seconds(options.phase_timeout);
  for (int i = 0; i < options.fleet.run_now_samples && Clock::now() < phase_end; ++i) {
    int agent = static_cast<int>((static_cast<long long>(i) * 7919) % options.fleet.sessions);
    v1::RunJobNowRequest request;
    request.set_name("bench-job");
    request.set_host(SimHost(agent));
    v1::RunJobNowResponse response;
    auto asked = Clock::now();
    auto context = wire::MakeContext(std::chrono::seconds(10));
    grpc::Status status = stub.RunJobNow(context.get(), request, &response);
    if (!status.ok()) {
      std::printf("  run-now for %s: %s\n", SimHost(agent).c_str(), wire::Describe(status).c_str());
      ++missed;
      continue;
    }
    auto arrived = fleet.WaitRunNow(agent, asked, std::chrono::seconds(10));
    if (!arrived) {
      ++missed;
      continue;
    }
    latencies.push_back(Ms(*arrived - asked));
  }
  Print("run-now delivered", static_cast<double>(latencies.size()));
  Print("run-now not delivered in 10 s", missed);
  Print("run-now latency p50", Percentile(latencies, 50), "ms");
  Print("run-now latency p99", Percentile(latencies, 99), "ms");
}

struct IngestResult {
  long long acked_runs = 0, failed_runs = 0, op_rows = 0;
  double seconds = 0;
  std::vector<double> ack_ms;
  // The same, split: each uploader's first run creates its series (one per operator and
  // the whole run), its later runs find them cached.
  std::vector<double> first_ack_ms, later_ack_ms;
  std::string last_error;
};

// K uploaders, each on its own connection, upload their runs back to back.
IngestResult Ingest(const Options& options, const std::string& address,
                    const std::vector<std::vector<v1::RunSummary>>& runs) {
  IngestResult result;
  std::mutex mu;
  auto phase_end = Clock::now() + std::chrono::seconds(options.phase_timeout);
  // Every uploader connects first, then all start at once: an agent uploads over the channel
  // its session holds open (agents/daemon/daemon.cc), so a nightly burst finds it connected, and
  // the fleet's jobs end together.
  std::latch connected(static_cast<std::ptrdiff_t>(runs.size()));
  Clock::time_point start;
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    threads.emplace_back([&, k] {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      args.SetInt("devtime.bench.uploader", static_cast<int>(k));
      args.SetMaxSendMessageSize(64 << 20);
      auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
      // a channel that did not connect fails its calls, counted below
      channel->WaitForConnected(std::chrono::system_clock::now() +
                                std::chrono::seconds(options.phase_timeout));
      auto stub = v1::Collector::NewStub(channel);
      connected.count_down();
      connected.wait();
      if (k == 0) start = Clock::now();
      for (std::size_t r = 0; r < runs[k].size(); ++r) {
        const v1::RunSummary& run = runs[k][r];
        if (Clock::now() > phase_end) break;
        v1::UploadRunRequest request;
        *request.mutable_run() = run;
        v1::UploadRunResponse response;
        auto sent = Clock::now();
        auto context = wire::MakeContext(std::chrono::seconds(60));
        grpc::Status status = stub->UploadRun(context.get(), request, &response);
        double ms = Ms(Clock::now() - sent);
        std::lock_guard lock(mu);
        if (status.ok()) {
          ++result.acked_runs;
          result.op_rows += run.ops_size();
          result.ack_ms.push_back(ms);
          (r == 0 ? result.first_ack_ms : result.later_ack_ms).push_back(ms);
        } else {
          ++result.failed_runs;
          result.last_error = wire::Describe(status);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

// What the collector and PostgreSQL cost over `length` of doing nothing asked of them: the rest
// and idle windows. Their figures are rates over a set time, so this is the benchmark's one
// timed wait; every other phase waits for what it measures, with a deadline.
Window MeasureFor(std::chrono::seconds length, pid_t collector, const PostgresProbe& postgres) {
  WindowProbe probe(collector, postgres);
  std::this_thread::sleep_for(length);
  return probe.Finish();
}

// The idle window opens once the connect storm is over: the collector's batched heartbeat has
// run with every session up (each bench agent marked seen after the last one had its
// assignments), and PostgreSQL's transaction counter, which publishes the storm's thousands
// of registrations late, has settled. Measured from the moment assignments were in, the
// window counted those late registrations as idle cost (tens of transactions/s where
// idle sessions cost ~2.5/s).
void IdlePhase(const Options& options, const testing::TestDatabase& db, pid_t collector,
               const PostgresProbe& postgres) {
  const auto limit = std::chrono::seconds(options.phase_timeout);
  const std::string since = db.Query("SELECT now()::text");
  const std::string seen =
      "SELECT count(*) FROM agents WHERE name LIKE 'bench-agent-%' AND last_seen > '" + since +
      "'::timestamptz";
  auto waiting = Clock::now();
  bool beat =
      testing::WaitUntil([&] { return std::stoll(db.Query(seen)) >= options.fleet.sessions; },
                         limit, std::chrono::milliseconds(200));
  Print("heartbeat with every session after", Ms(Clock::now() - waiting) / 1000, "s");
  auto settled = postgres.WaitSettled(kSettleWindow, limit);
  if (!beat || !settled) {
    std::printf("  not settled within %d s: the window below still counts the connect storm\n",
                options.phase_timeout);
  } else {
    Print("transaction counter settled after", *settled, "s");
  }
  PrintWindow(MeasureFor(std::chrono::seconds(options.fleet.idle_seconds), collector, postgres));
}

std::string Unanalysed(const testing::TestDatabase& db) {
  try {
    return db.Query(
        "SELECT count(*) FROM runs WHERE analyzed_at IS NULL AND job = 'bench-nightly'");
  } catch (const std::exception& e) {
    return std::string("n/a (") + e.what() + ")";
  }
}

// [detection]: the analysis queue after the burst, until every acked run has been judged
// (runs.analyzed_at set): how long the detector lags behind ingest, and what judging costs.
// Whether every run was judged within the phase timeout.
bool DetectionPhase(const Options& options, const testing::TestDatabase& db, pid_t collector,
                    const PostgresProbe& postgres) {
  std::printf("\n[detection] the analysis queue drains after the burst\n");
  auto waiting = Clock::now();
  std::string left = Unanalysed(db);
  const long long queued = std::atoll(left.c_str());
  WindowProbe probe(collector, postgres);
  const bool drained = testing::WaitUntil([&] { return (left = Unanalysed(db)) == "0"; },
                                          std::chrono::seconds(options.phase_timeout),
                                          std::chrono::milliseconds(100));
  Window window = probe.Finish();
  const double seconds = Ms(Clock::now() - waiting) / 1000;
  Print("runs queued after ingest", static_cast<double>(queued));
  if (!drained)
    std::printf("  not drained within %d s: %s left\n", options.phase_timeout, left.c_str());
  Print("time until every run was judged", seconds, "s");
  if (queued > 0 && seconds > 0) {
    Print("runs judged/s after ingest",
          static_cast<double>(queued - std::atoll(left.c_str())) / seconds, "runs/s");
  }
  PrintWindow(window);
  if (window.pg_cpu_seconds && queued > 0) {
    Print("PostgreSQL CPU per judged run",
          1000 * *window.pg_cpu_seconds / static_cast<double>(queued), "ms");
  }
  if (queued > 0) {
    Print("collector CPU per judged run",
          10 * window.collector_cpu_percent * window.seconds / static_cast<double>(queued), "ms");
  }
  return drained;
}

// [sessions], [idle] and [run-now]; the fleet, still connected when --sessions-during-ingest.
std::unique_ptr<SimulatedFleet> RunSessionPhases(const Options& options,
                                                 const testing::TestDatabase& db,
                                                 const Collector& collector,
                                                 v1::Collector::Stub& admin,
                                                 const PostgresProbe& postgres) {
  std::printf("\n[sessions] %d agents connect\n", options.fleet.sessions);
  auto connecting = Clock::now();
  auto fleet = std::make_unique<SimulatedFleet>(collector.address(), options.fleet.sessions,
                                                options.fleet.connections);
  int assigned = fleet->WaitAssigned(std::chrono::seconds(options.phase_timeout));
  std::string last_error;
  int ended = fleet->ended(&last_error);
  Print("sessions with assignments", assigned);
  Print("time until all had them", Ms(Clock::now() - connecting) / 1000, "s");
  Print("sessions ended by the collector", ended);
  if (ended > 0) std::printf("  last error: %s\n", last_error.c_str());

  std::printf("\n[idle] %d sessions connected, %d s\n", options.fleet.sessions,
              options.fleet.idle_seconds);
  IdlePhase(options, db, collector.pid(), postgres);

  std::printf("\n[run-now] %d requests, one at a time\n", options.fleet.run_now_samples);
  RunNowPhase(options, admin, *fleet);

  // Ingest and its COPY yardstick on a quiet collector, unless asked: the idle sessions'
  // own load (measured above) would slow both and blur their ratio.
  if (!options.ingest.sessions_during_ingest) fleet.reset();
  return fleet;
}

// --monitor: H hours of hourly windows of `hosts` x `models`, uploaded by the K uploaders, and
// the baseline in the same run: as many of the smallest profiles (1 operator, 1 step) through
// the same path. The figure that matters: the collector's CPU for one hour of the fleet's
// windows, as a share of one core over that hour.
int MonitorPhase(const Options& options, const Collector& collector,
                 const PostgresProbe& postgres) {
  const int k_uploaders = options.ingest.uploaders;
  const int64_t first_hour = (std::time(nullptr) / 3600 - options.monitor_hours - 1) * 3600;
  std::vector<std::vector<v1::RunSummary>> windows(static_cast<std::size_t>(k_uploaders));
  std::vector<std::vector<v1::RunSummary>> baseline(static_cast<std::size_t>(k_uploaders));
  long long n = 0;
  for (int h = 0; h < options.monitor_hours; ++h) {
    for (int host = 0; host < options.monitor_hosts; ++host) {
      for (int model = 0; model < options.monitor_models; ++model, ++n) {
        const auto k = static_cast<std::size_t>(n % k_uploaders);
        windows[k].push_back(BenchWindow(host, model, first_hour + h * 3600LL));
        baseline[k].push_back(
            BenchRun(static_cast<int>(k), static_cast<int>(baseline[k].size()) + 100'000, 1, 1));
      }
    }
  }
  auto measure = [&](const char* what, const std::vector<std::vector<v1::RunSummary>>& runs) {
    std::printf("\n[%s] %lld uploads by %d uploaders\n", what, n, k_uploaders);
    IngestResult result;
    Window window;
    {
      WindowProbe probe(collector.pid(), postgres);
      result = Ingest(options, collector.address(), runs);
      window = probe.Finish();
    }
    Print("acknowledged", static_cast<double>(result.acked_runs));
    Print("failed", static_cast<double>(result.failed_runs));
    if (result.failed_runs) std::printf("  last error: %s\n", result.last_error.c_str());
    Print("ack latency p50", Percentile(result.ack_ms, 50), "ms");
    Print("ack latency p99", Percentile(result.ack_ms, 99), "ms");
    PrintWindow(window);
    const double cpu_ms =
        10 * window.collector_cpu_percent * window.seconds / static_cast<double>(n);
    Print("collector CPU per upload", cpu_ms, "ms");
    return std::pair{result, cpu_ms};
  };
  auto [monitor, window_ms] = measure("monitor windows", windows);
  auto [profiles, profile_ms] = measure("baseline: 1-operator profiles", baseline);
  const double per_hour = static_cast<double>(options.monitor_hosts) * options.monitor_models;
  std::printf("\n[monitor figures]\n");
  Print("windows per fleet hour", per_hour);
  Print("collector CPU for one fleet hour", 100 * window_ms * per_hour / 1000 / 3600,
        "% of a core (target <= 5)");
  if (profile_ms > 0) Print("window / 1-op profile CPU", window_ms / profile_ms, "x");
  if (monitor.acked_runs != n || profiles.acked_runs != n) {
    std::printf("\nfleet_bench: incomplete: %lld and %lld of %lld acked\n", monitor.acked_runs,
                profiles.acked_runs, n);
    return 1;
  }
  std::printf("\nfleet_bench: done\n");
  return 0;
}

int Run(const Options& options) {
  if (options.database.empty()) {
    std::cerr << "fleet_bench: give --database CONNINFO or set DEVTIME_TEST_DATABASE\n";
    return 2;
  }
  setenv("DEVTIME_TEST_DATABASE", options.database.c_str(), 1);  // TestDatabase's cluster
  testing::TestDatabase db;
  Collector collector(options, db.conninfo());
  PostgresProbe postgres(db.conninfo());
  auto admin = v1::Collector::NewStub(wire::MakeCollectorChannel(collector.address()));
  ApplyJob(*admin);
  std::printf("fleet_bench: collector pid %d on %s, log %s\n", collector.pid(),
              collector.address().c_str(), collector.log_path().c_str());
  std::printf("  sessions %d over %d connections, uploaders %d x %d runs of %d ops x %d steps\n",
              options.fleet.sessions, options.fleet.connections, options.ingest.uploaders,
              options.ingest.runs_per_uploader, options.ingest.ops, options.ingest.steps);

  if (options.rest_seconds > 0) {
    std::printf("\n[rest] no sessions, %d s\n", options.rest_seconds);
    PrintWindow(MeasureFor(std::chrono::seconds(options.rest_seconds), collector.pid(), postgres));
  }

  if (options.monitor) return MonitorPhase(options, collector, postgres);

  std::unique_ptr<SimulatedFleet> fleet;
  if (options.fleet.sessions > 0)
    fleet = RunSessionPhases(options, db, collector, *admin, postgres);

  std::printf("\n[ingest] %d uploaders x %d runs, %s\n", options.ingest.uploaders,
              options.ingest.runs_per_uploader,
              fleet                        ? "sessions still connected"
              : options.fleet.sessions > 0 ? "sessions closed"
                                           : "no sessions");
  std::vector<std::vector<v1::RunSummary>> runs(static_cast<std::size_t>(options.ingest.uploaders));
  std::vector<v1::RunSummary> all;
  for (int k = 0; k < options.ingest.uploaders; ++k) {
    for (int r = 0; r < options.ingest.runs_per_uploader; ++r) {
      runs[k].push_back(BenchRun(k, r, options.ingest.ops, options.ingest.steps));
      all.push_back(runs[k].back());
    }
  }
  IngestResult ingest;
  Window ingest_window;
  StatementsProbe statements(db.conninfo());
  statements.Reset();
  {
    WindowProbe probe(collector.pid(), postgres);
    ingest = Ingest(options, collector.address(), runs);
    ingest_window = probe.Finish();
  }
  double ingest_rate =
      ingest.seconds > 0 ? static_cast<double>(ingest.op_rows) / ingest.seconds : 0;
  Print("runs acknowledged", static_cast<double>(ingest.acked_runs));
  Print("runs failed", static_cast<double>(ingest.failed_runs));
  if (ingest.failed_runs) std::printf("  last error: %s\n", ingest.last_error.c_str());
  Print("operator rows/s end to end", ingest_rate, "rows/s");
  Print("ack latency p50", Percentile(ingest.ack_ms, 50), "ms");
  Print("ack latency p99", Percentile(ingest.ack_ms, 99), "ms");
  Print("ack p50, first runs (new series)", Percentile(ingest.first_ack_ms, 50), "ms");
  Print("ack p99, first runs (new series)", Percentile(ingest.first_ack_ms, 99), "ms");
  Print("ack p50, later runs", Percentile(ingest.later_ack_ms, 50), "ms");
  Print("ack p99, later runs", Percentile(ingest.later_ack_ms, 99), "ms");
  PrintWindow(ingest_window);
  if (ingest_window.pg_cpu_seconds && ingest.acked_runs) {
    Print("PostgreSQL CPU per run",
          1000 * *ingest_window.pg_cpu_seconds / static_cast<double>(ingest.acked_runs), "ms");
  }
  std::printf("  %-34s %12s\n", "runs not analysed at the end", Unanalysed(db).c_str());
  statements.Print(static_cast<double>(ingest.acked_runs), "acked run");
  const bool judged = DetectionPhase(options, db, collector.pid(), postgres);

  std::printf("\n[raw COPY] the same %zu runs into same-shaped scratch tables, one connection\n",
              all.size());
  std::string copy_conninfo =
      db.conninfo() + " options='-c statement_timeout=" + std::to_string(options.phase_timeout) +
      "s'";
  pqxx::connection copier{copy_conninfo};
  CopyResult per_run;
  Window copy_window;
  {
    WindowProbe probe(collector.pid(), postgres);
    per_run = RawCopy(copier, all, false);
    copy_window = probe.Finish();
  }
  CopyResult bulk = RawCopy(copier, all, true);
  Print("COPY, one transaction per run", per_run.op_rows_per_second(), "rows/s");
  Print("COPY, one bulk transaction", bulk.op_rows_per_second(), "rows/s");
  if (copy_window.pg_cpu_seconds && !all.empty()) {
    Print("PostgreSQL CPU per run (COPY)",
          1000 * *copy_window.pg_cpu_seconds / static_cast<double>(all.size()), "ms");
  }
  if (per_run.op_rows_per_second() > 0 && bulk.op_rows_per_second() > 0) {
    Print("ingest / per-run COPY", 100 * ingest_rate / per_run.op_rows_per_second(), "%");
    Print("ingest / bulk COPY", 100 * ingest_rate / bulk.op_rows_per_second(), "%");
  }
  // The figures above mean little if work was lost on the way: then the run fails (exit 1),
  // which is what the CTest smoke run checks.
  const auto sent = static_cast<long long>(all.size());
  if (ingest.acked_runs != sent || !judged) {
    std::printf("\nfleet_bench: incomplete: %lld of %lld runs acked, %s\n", ingest.acked_runs, sent,
                judged ? "every acked run judged" : "not every acked run was judged");
    return 1;
  }
  std::printf("\nfleet_bench: done\n");
  return 0;
}

}  // namespace
}  // namespace devtime::bench

int main(int argc, char** argv) {
  devtime::bench::Options options;
  if (const char* database = std::getenv("DEVTIME_TEST_DATABASE")) options.database = database;
  CLI::App app{"fleet_bench: one collector under N simulated agent sessions and K uploaders"};
  app.add_option("--database", options.database,
                 "libpq connection string of a PostgreSQL server (default "
                 "$DEVTIME_TEST_DATABASE); a fresh database is made and dropped on it");
  app.add_option("--collector", options.collector, "devtime-collector executable")
      ->capture_default_str();
  app.add_option("--collector-arg", options.collector_args,
                 "extra collector flag (repeat), e.g. --collector-arg=--session-poll-ms=1000");
  app.add_option("--sessions", options.fleet.sessions,
                 "simulated agent sessions (N); 0 skips the sessions, idle and run-now phases")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option("--connections", options.fleet.connections,
                 "TCP connections the sessions share (0 = min(N, 250))")
      ->capture_default_str();
  app.add_option("--uploaders", options.ingest.uploaders, "concurrent uploaders (K)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--runs-per-uploader", options.ingest.runs_per_uploader,
                 "runs each uploader sends")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--ops", options.ingest.ops, "operators per run")->capture_default_str();
  app.add_option("--steps", options.ingest.steps, "steps per run")->capture_default_str();
  app.add_option("--rest-seconds", options.rest_seconds,
                 "window with the collector alone before the sessions (0 skips it)")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600));
  app.add_option("--idle-seconds", options.fleet.idle_seconds, "idle window with the sessions up")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app.add_option("--run-now-samples", options.fleet.run_now_samples, "run-now requests timed")
      ->capture_default_str();
  app.add_option("--phase-timeout", options.phase_timeout, "seconds any one phase may take")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app.add_flag("--sessions-during-ingest", options.ingest.sessions_during_ingest,
               "keep the N sessions connected through ingest and the raw COPY");
  app.add_flag("--monitor", options.monitor,
               "neuron-monitor windows (issue 24) instead of sessions and profiles: "
               "--monitor-hosts x --monitor-models x --monitor-hours hourly windows, and as "
               "many 1-operator profiles as the baseline");
  app.add_option("--monitor-hosts", options.monitor_hosts, "hosts (--monitor)")
      ->capture_default_str();
  app.add_option("--monitor-models", options.monitor_models, "models per host (--monitor)")
      ->capture_default_str();
  app.add_option("--monitor-hours", options.monitor_hours, "hours of windows (--monitor)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (options.fleet.connections <= 0)
    options.fleet.connections = std::max(1, std::min(options.fleet.sessions, 250));
  try {
    return devtime::bench::Run(options);
  } catch (const std::exception& e) {
    std::cerr << "fleet_bench: " << e.what() << "\n";
    return 1;
  }
}
