// The fleet benchmark's runs and its yardstick: realistic RunSummary messages (500 operators
// x 10 steps by default, as a nightly Trainium job sends them), and a raw COPY of the same
// rows into scratch tables shaped like op_stats and run_steps (same columns and primary
// keys, no foreign keys, no series work) on the same database.
#pragma once

#include <string>
#include <vector>

#include "devtime/v1/run.pb.h"
#include "pqxx/pqxx"

namespace devtime::bench {

// Run `sequence` of uploader `uploader`: its own series (model "bench", workload
// "w<uploader>"), a day apart, with `ops` operators and `steps` steps. A fresh run id.
v1::RunSummary BenchRun(int uploader, int sequence, int ops, int steps);

struct CopyResult {
  long long op_rows = 0;
  double seconds = 0;
  double op_rows_per_second() const {
    return seconds > 0 ? static_cast<double>(op_rows) / seconds : 0;
  }
};

// COPYs the operator and step rows of `runs` into the scratch tables on `connection`: one
// transaction per run (as the collector commits them), or all in one transaction. Creates
// the tables first and drops them after. The caller owns the connection, so that its
// backend's CPU can be read while it lives.
CopyResult RawCopy(pqxx::connection& connection, const std::vector<v1::RunSummary>& runs,
                   bool one_transaction);

}  // namespace devtime::bench
