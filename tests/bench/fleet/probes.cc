#include "tests/bench/fleet/probes.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "pqxx/pqxx"
#include "tests/support/wait.h"

namespace devtime::bench {
namespace {

// The fields of /proc/PID/stat after the command name (which may hold spaces): field 3
// (state) is index 0.
std::optional<std::vector<std::string>> StatFields(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  std::size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) fields.push_back(field);
  if (fields.size() < 20) return std::nullopt;
  return fields;
}

double Ticks(const std::string& field) {
  static const double per_second = static_cast<double>(sysconf(_SC_CLK_TCK));
  return std::stod(field) / per_second;
}

// utime + stime (fields 14, 15), optionally with reaped children's (16, 17).
std::optional<double> CpuSeconds(pid_t pid, bool with_children) {
  auto fields = StatFields(pid);
  if (!fields) return std::nullopt;
  double cpu = Ticks((*fields)[11]) + Ticks((*fields)[12]);
  if (with_children) cpu += Ticks((*fields)[13]) + Ticks((*fields)[14]);
  return cpu;
}

pid_t ParentOf(pid_t pid) {
  auto fields = StatFields(pid);
  return fields ? static_cast<pid_t>(std::stol((*fields)[1])) : -1;
}

}  // namespace

std::optional<ProcessSample> SampleProcess(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  if (!in) return std::nullopt;
  ProcessSample sample;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Threads:", 0) == 0) sample.threads = std::stol(line.substr(8));
    if (line.rfind("VmRSS:", 0) == 0) sample.rss_kib = std::stol(line.substr(6));
  }
  auto cpu = CpuSeconds(pid, false);
  if (!cpu) return std::nullopt;
  sample.cpu_seconds = *cpu;
  return sample;
}

PostgresProbe::PostgresProbe(std::string conninfo) : conninfo_(std::move(conninfo)) {
  pqxx::connection c{conninfo_};
  pqxx::nontransaction tx{c};
  auto backend = static_cast<pid_t>(tx.exec1("SELECT pg_backend_pid()")[0].as<long>());
  pid_t parent = ParentOf(backend);  // a backend's parent is the postmaster
  if (parent > 1) postmaster_ = parent;
}

PostgresProbe::Sample PostgresProbe::Take() const {
  Sample sample;
  {
    pqxx::connection c{conninfo_};
    pqxx::nontransaction tx{c};
    sample.transactions = tx.exec1(
                                "SELECT xact_commit + xact_rollback FROM pg_stat_database"
                                " WHERE datname = current_database()")[0]
                              .as<long long>();
  }
  sample.at = std::chrono::steady_clock::now();
  if (postmaster_ < 0) return sample;
  auto total = CpuSeconds(postmaster_, true);  // with the backends that have exited
  if (!total) return sample;
  if (DIR* proc = opendir("/proc")) {
    while (dirent* entry = readdir(proc)) {
      pid_t pid = static_cast<pid_t>(std::atol(entry->d_name));
      if (pid <= 0 || ParentOf(pid) != postmaster_) continue;
      *total += CpuSeconds(pid, false).value_or(0);
    }
    closedir(proc);
  }
  sample.cpu_seconds = total;
  return sample;
}

std::optional<double> PostgresProbe::WaitSettled(std::chrono::seconds window,
                                                 std::chrono::seconds timeout) const {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Sample> samples;
  // The newest sample at least `age` older than the last one.
  auto before = [&](std::chrono::steady_clock::duration age) -> const Sample* {
    for (auto it = samples.rbegin(); it != samples.rend(); ++it) {
      if (samples.back().at - it->at >= age) return &*it;
    }
    return nullptr;
  };
  bool settled = testing::WaitUntil(
      [&] {
        samples.push_back(Take());
        const Sample* middle = before(window);
        const Sample* first = before(2 * window);
        if (!first) return false;
        long long recent = samples.back().transactions - middle->transactions;
        long long earlier = middle->transactions - first->transactions;
        return std::llabs(recent - earlier) <= std::max(6LL, std::max(recent, earlier) / 4);
      },
      timeout, std::chrono::seconds(1));
  if (!settled) return std::nullopt;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

WindowProbe::WindowProbe(pid_t collector, const PostgresProbe& postgres)
    : collector_(collector),
      postgres_(postgres),
      collector_start_(SampleProcess(collector).value_or(ProcessSample{})),
      postgres_start_(postgres.Take()) {}

Window WindowProbe::Finish() const {
  PostgresProbe::Sample postgres_end = postgres_.Take();
  Window window;
  window.seconds = std::chrono::duration<double>(postgres_end.at - postgres_start_.at).count();
  window.collector_end = SampleProcess(collector_).value_or(ProcessSample{});
  double seconds = std::max(window.seconds, 1e-9);
  window.collector_cpu_percent =
      100 * (window.collector_end.cpu_seconds - collector_start_.cpu_seconds) / seconds;
  // Less this probe's own two transactions (one per sample).
  window.pg_transactions_per_second =
      static_cast<double>(postgres_end.transactions - postgres_start_.transactions - 1) / seconds;
  if (postgres_end.cpu_seconds && postgres_start_.cpu_seconds) {
    window.pg_cpu_seconds = *postgres_end.cpu_seconds - *postgres_start_.cpu_seconds;
    window.pg_cpu_percent = 100 * *window.pg_cpu_seconds / seconds;
  }
  return window;
}

void StatementsProbe::Reset() const {
  try {
    pqxx::connection c{conninfo_};
    pqxx::nontransaction tx{c};
    tx.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    tx.exec("SELECT pg_stat_statements_reset()");
  } catch (const std::exception& e) {
    std::printf("  pg_stat_statements: not available (%s)\n", e.what());
  }
}

void StatementsProbe::Print(double per, const char* per_what, int top) const {
  try {
    pqxx::connection c{conninfo_};
    pqxx::nontransaction tx{c};
    auto rows = tx.exec_params(
        "SELECT total_exec_time / $1, total_exec_time / calls, calls,"
        " left(regexp_replace(query, '\\s+', ' ', 'g'), 72) FROM pg_stat_statements"
        " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT $2",
        per > 0 ? per : 1.0, top);
    std::printf("  statements by time inside them (wall ms per %s, ms per call, calls):\n",
                per_what);
    for (const auto& row : rows) {
      std::printf("  %8.3f %8.3f %7s  %s\n", row[0].as<double>(), row[1].as<double>(),
                  row[2].c_str(), row[3].c_str());
    }
  } catch (const std::exception& e) {
    std::printf("  pg_stat_statements: not available (%s)\n", e.what());
  }
}

double Percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100 * static_cast<double>(samples.size())));
  return samples[std::min(samples.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace devtime::bench
