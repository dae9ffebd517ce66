// Turns a trace::TraceSummary (what the profile says) plus the run's labels (who ran what,
// where) into the wire RunSummary the collector stores.
#pragma once

#include <chrono>
#include <string>

#include "agents/trace/trace_summary.h"
#include "devtime/v1/run.pb.h"

namespace devtime::agent {

struct RunLabels {
  std::string run_id;  // empty: a new random UUID
  std::string job;
  std::string model;     // empty: environment "model", else "adhoc"
  std::string workload;  // empty: environment "workload", else `fallback_workload`
  std::string fallback_workload;
  std::string host;           // empty: this machine's hostname
  std::string instance_type;  // empty: environment "instance_type", if any
  std::chrono::system_clock::time_point started_at;
  std::chrono::system_clock::time_point finished_at;
};

v1::RunSummary BuildRunSummary(const trace::TraceSummary& summary, const RunLabels& labels);

// A random (version 4) UUID in canonical lowercase form.
std::string NewRunId();

// This machine's hostname ("localhost" if it cannot be read).
std::string HostName();

}  // namespace devtime::agent
