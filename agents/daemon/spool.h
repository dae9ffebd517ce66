// The agent's on-disk spool: finished runs wait here until the collector acknowledges them.
//
// Each run is one file, <run_id>.pb (a binary RunSummary), written to a temporary file,
// fsync'd, renamed into place, and the directory fsync'd: after a crash at any point a run is
// either wholly in the spool or not at all. A run leaves the spool only through Remove(),
// which the uploader calls after the collector's ack (sent after commit); with the
// collector's idempotent ingest this gives each run an exactly-once effect.
//
// The spool has a size bound; Put() beyond it, or when the disk has no room for the run (its
// free space, or ENOSPC on the write), fails with RESOURCE_EXHAUSTED and the run stays with the
// caller (the job's output folder keeps the raw profile); a failed Put leaves no temporary file
// behind.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/daemon/files.h"
#include "devtime/v1/run.pb.h"

namespace devtime::agent {

struct SpoolStats {
  uint64_t runs = 0;
  uint64_t bytes = 0;
};

class Spool {
 public:
  // Creates `dir` if needed and removes half-written temporary files left by a crash.
  // Files are written, renamed, listed and removed through `env` (tests inject faults there),
  // which must outlive the spool.
  static absl::StatusOr<std::unique_ptr<Spool>> Open(const std::filesystem::path& dir,
                                                     uint64_t max_bytes,
                                                     wire::Env& env = *wire::Env::Default());

  // Durably stores `run`. Storing a run id that is already spooled replaces nothing and
  // succeeds. RESOURCE_EXHAUSTED when the spool would exceed its bound.
  absl::Status Put(const v1::RunSummary& run);

  // Spooled run ids, oldest first.
  std::vector<std::string> Pending() const;

  absl::StatusOr<v1::RunSummary> Load(const std::string& run_id) const;

  // Deletes a spooled run (after its ack). Removing an absent run is not an error.
  absl::Status Remove(const std::string& run_id);

  // Moves a run the collector will never accept, keeps failing on, or that no longer parses
  // out of the queue into <dir>/rejected/, kept for a person to look at (moving it back into
  // <dir> sends it again); returns where it went.
  absl::StatusOr<std::filesystem::path> SetAside(const std::string& run_id);

  SpoolStats Stats() const;
  uint64_t max_bytes() const { return max_bytes_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  Spool(std::filesystem::path dir, uint64_t max_bytes, wire::Env& env)
      : dir_(std::move(dir)), max_bytes_(max_bytes), env_(env) {}
  // The spooled run files in dir_.
  std::vector<std::filesystem::path> RunFiles() const;
  std::filesystem::path PathOf(const std::string& run_id) const;

  const std::filesystem::path dir_;
  const uint64_t max_bytes_;
  wire::Env& env_;
  mutable std::mutex mu_;  // serializes Put/Remove against the size accounting
};

}  // namespace devtime::agent
