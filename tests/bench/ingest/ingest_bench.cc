// Ingest benchmark (issue 10 item 2): realistic runs (500 operators x 10 steps) stored through
// RunStore::IngestRun on a fresh test database, against a plain COPY of the same operator rows
// into a table of op_stats' shape on the same PostgreSQL, in the same process. A program, not
// a timed test: it prints figures.
//
//   DEVTIME_TEST_DATABASE=... ingest_bench [--runs N] [--ops N] [--steps N] [--uploaders K]
//
// With --uploaders K, K threads ingest concurrently and the per-run latency (what an upload's
// ack waits for) is reported as p50/p99. PostgreSQL's CPU per run is read from /proc (the
// server on this machine); pg_stat_statements' top statements are printed when the server
// preloads it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"
#include "services/collector/store/database.h"
#include "services/collector/store/run_store.h"
#include "tests/bench/fleet/probes.h"
#include "tests/bench/ingest/wide_run.h"
#include "tests/support/sample_runs.h"
#include "tests/support/test_database.h"

namespace devtime::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int runs = 100;
  int ops = 500;
  int steps = 10;
  int uploaders = 1;
};

Args Parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--runs") args.runs = value;
    if (flag == "--ops") args.ops = value;
    if (flag == "--steps") args.steps = value;
    if (flag == "--uploaders") args.uploaders = std::max(value, 1);
  }
  return args;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::vector<v1::RunSummary> MakeRuns(const Args& args, int first_id) {
  std::vector<v1::RunSummary> runs;
  for (int i = 0; i < args.runs; ++i) {
    runs.push_back(WideRun(testing::TestRunId(first_id + i), "bench", 1795917600 + 3600LL * i,
                           {.ops = args.ops, .steps = args.steps, .seed = uint32_t(i + 1)}));
  }
  return runs;
}

// Stores `runs` through IngestRun with `uploaders` threads; returns per-run seconds.
std::vector<double> Ingest(store::RunStore& store, const std::vector<v1::RunSummary>& runs,
                           int uploaders) {
  std::vector<double> latencies;
  std::mutex mu;
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < uploaders; ++t) {
    threads.emplace_back([&] {
      for (size_t i; (i = next++) < runs.size();) {
        auto start = Clock::now();
        auto outcome = store.IngestRun(runs[i]);
        double took = Seconds(Clock::now() - start);
        if (!outcome.ok()) {
          std::cerr << "ingest failed: " << outcome.status() << "\n";
          std::exit(1);
        }
        std::lock_guard lock(mu);
        latencies.push_back(took);
      }
    });
  }
  for (auto& t : threads) t.join();
  return latencies;
}

// The same operator rows, COPYed into a same-shaped table, one transaction per run.
double RawCopy(store::Database& db, const std::vector<v1::RunSummary>& runs) {
  auto status = db.Run("scratch table", [](pqxx::connection_base& c) {
    pqxx::work tx{c};
    tx.exec("DROP TABLE IF EXISTS bench_op_stats");
    // op_stats' columns, primary key and defaults, unpartitioned: the plain COPY target.
    tx.exec("CREATE TABLE bench_op_stats (LIKE op_stats INCLUDING ALL)");
    tx.commit();
    return absl::OkStatus();
  });
  if (!status.ok()) std::exit((std::cerr << status << "\n", 1));
  std::vector<std::string> columns;
  auto start = Clock::now();
  for (const auto& run : runs) {
    status = db.Run("raw copy", [&](pqxx::connection_base& c) {
      pqxx::work tx{c};
      pqxx::stream_to out{tx, "bench_op_stats"};
      const std::string at = google::protobuf::util::TimeUtil::ToString(run.started_at());
      for (const auto& op : run.ops()) {
        std::string samples = "{";
        for (int i = 0; i < op.step_self_device_us_size(); ++i) {
          if (i) samples += ',';
          samples += absl::StrFormat("%.17g", op.step_self_device_us(i));
        }
        samples += '}';
        // op_stats' columns in table order (the scratch table copies them).
        out << std::make_tuple(run.identity().run_id(), at, op.name(),
                               static_cast<long long>(op.calls()), op.self_cpu_us(),
                               op.total_cpu_us(), op.self_device_us(), op.total_device_us(),
                               samples);
      }
      out.complete();
      tx.commit();
      return absl::OkStatus();
    });
    if (!status.ok()) std::exit((std::cerr << status << "\n", 1));
  }
  return Seconds(Clock::now() - start);
}

int Main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  testing::TestDatabase database;
  store::StoreOptions options;
  options.conninfo = database.conninfo();
  // As a collector's pool (collector_cli.cc: 2 analysis workers + 8 + 2), however many upload.
  options.max_connections = static_cast<size_t>(std::min(args.uploaders, 12));
  auto db = store::Database::Open(options);
  if (!db.ok()) return (std::cerr << db.status() << "\n", 1);
  store::RunStore store(**db);
  // Warm up (series rows exist afterwards, as they do in a collector that has run a while).
  (void)Ingest(store, MakeRuns({.runs = 3, .ops = args.ops, .steps = args.steps}, 900000), 1);

  const auto runs = MakeRuns(args, 1);
  const double rows = static_cast<double>(args.runs) * args.ops;
  PostgresProbe postgres(database.conninfo());
  StatementsProbe statements(database.conninfo());
  statements.Reset();
  auto before = postgres.Take();
  auto start = Clock::now();
  std::vector<double> latencies = Ingest(store, runs, args.uploaders);
  const double ingest_s = Seconds(Clock::now() - start);
  auto ingested = postgres.Take();
  const double copy_s = RawCopy(**db, runs);
  auto copied = postgres.Take();
  // PostgreSQL's CPU (every process of the server, this machine only) per run, in ms.
  auto cpu_per_run = [&](const PostgresProbe::Sample& from, const PostgresProbe::Sample& to) {
    if (!from.cpu_seconds || !to.cpu_seconds) return std::string("n/a");
    return absl::StrFormat("%.2f ms", 1000 * (*to.cpu_seconds - *from.cpu_seconds) / args.runs);
  };

  std::cout << absl::StrFormat(
      "runs %d x %d ops x %d steps, %d uploader(s)\n"
      "IngestRun:  %.0f operator rows/s (%.1f ms per run; p50 %.1f ms, p99 %.1f ms;"
      " PostgreSQL CPU %s per run)\n"
      "raw COPY:   %.0f operator rows/s (%.1f ms per run; PostgreSQL CPU %s per run)\n"
      "ratio:      %.2f of the raw COPY rate\n",
      args.runs, args.ops, args.steps, args.uploaders, rows / ingest_s, 1000 * ingest_s / args.runs,
      1000 * Percentile(latencies, 50), 1000 * Percentile(latencies, 99),
      cpu_per_run(before, ingested), rows / copy_s, 1000 * copy_s / args.runs,
      cpu_per_run(ingested, copied), copy_s / ingest_s);
  statements.Print(static_cast<double>(args.runs), "run (ingest and its raw COPY)");
  return 0;
}

}  // namespace
}  // namespace devtime::bench

int main(int argc, char** argv) { return devtime::bench::Main(argc, argv); }
