// devtime::store — the analyzer's repository (analyze/repository.h) in PostgreSQL: the run
// lock, the per-series advisory lock that serialises analyses across collectors, the series
// and figures reads, and the writes (regressions through regression_sql, confirmation runs
// through JobStore), all in one transaction per run.
//
// pqxx exceptions raised inside the analysis are held, reported to the analyzer as an
// INTERNAL status (so no exception crosses analyze/), and re-raised to Database::Run once
// the analysis returns, so lost connections are retried as everywhere else.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include "services/collector/analyze/repository.h"
#include "services/collector/store/database.h"

namespace devtime::store {

class SqlAnalysisRepository final : public analyze::AnalysisRepository {
 public:
  explicit SqlAnalysisRepository(Database& db) : db_(db) {}

  absl::StatusOr<analyze::Verdict> AnalyzeLocked(const std::string& run_id,
                                                 const Work& work) override;
  absl::StatusOr<std::vector<std::string>> Pending(absl::Duration older_than, int limit) override;

 private:
  Database& db_;
};

}  // namespace devtime::store
