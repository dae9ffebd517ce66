// What the fleet benchmark measures from outside the collector: a process's threads, RSS and
// CPU (/proc/PID/status and /proc/PID/stat), PostgreSQL's committed transactions
// (pg_stat_database) and the CPU of every PostgreSQL process (the postmaster's children on
// this machine), and percentiles of latency samples.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace devtime::bench {

struct ProcessSample {
  long threads = 0;
  long rss_kib = 0;
  double cpu_seconds = 0;  // user + system since the process started
};
std::optional<ProcessSample> SampleProcess(pid_t pid);

// PostgreSQL as seen from one database: its transaction count and, when the server runs on
// this machine, the CPU of the postmaster and all its children (live and reaped).
class PostgresProbe {
 public:
  explicit PostgresProbe(std::string conninfo);
  struct Sample {
    long long transactions = 0;  // xact_commit + xact_rollback of the benchmark's database
    std::optional<double> cpu_seconds;
    std::chrono::steady_clock::time_point at;
  };
  Sample Take() const;

  // Waits until the transaction counter has settled after a burst (the sessions' connect
  // storm): two back-to-back windows of `window` add about as many transactions (within a
  // quarter, or 6). PostgreSQL publishes a backend's counts up to ~10 s after its last
  // transaction (once it has been idle that long), so for a while after a burst the counter
  // still jumps by hundreds; `window` must be longer than that. Samples once a second; the
  // seconds it waited, or nullopt when `timeout` passed first.
  std::optional<double> WaitSettled(std::chrono::seconds window,
                                    std::chrono::seconds timeout) const;

 private:
  std::string conninfo_;
  pid_t postmaster_ = -1;  // -1: not on this machine
};

// Figures over a measured window.
struct Window {
  double seconds = 0;
  ProcessSample collector_end;
  double collector_cpu_percent = 0;  // of one core
  double pg_transactions_per_second = 0;
  std::optional<double> pg_cpu_percent;
  std::optional<double> pg_cpu_seconds;
};

// Samples the collector and PostgreSQL now; Finish() gives the window since.
class WindowProbe {
 public:
  WindowProbe(pid_t collector, const PostgresProbe& postgres);
  Window Finish() const;

 private:
  pid_t collector_;
  const PostgresProbe& postgres_;
  ProcessSample collector_start_;
  PostgresProbe::Sample postgres_start_;
};

// pg_stat_statements, where the server preloads it (shared_preload_libraries): Reset()
// creates the extension in the database if needed and zeroes its counts; Print() lists the
// statements of this database that took the most time since, as milliseconds per `per`
// (e.g. per stored run) and per call. The time is spent inside each statement (wall clock,
// so on a busy machine it includes waiting for a CPU); a COPY's includes the client's
// streaming. Both say so and do nothing when the extension is not loaded.
class StatementsProbe {
 public:
  explicit StatementsProbe(std::string conninfo) : conninfo_(std::move(conninfo)) {}
  void Reset() const;
  void Print(double per, const char* per_what, int top = 10) const;

 private:
  std::string conninfo_;
};

// The p-th percentile (0..100) of `samples` (nearest rank); 0 when empty.
double Percentile(std::vector<double> samples, double p);

}  // namespace devtime::bench
