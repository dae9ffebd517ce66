// Turns a trace::TraceSummary (what the profile says) plus the run's labels (who ran what,
// where) into the wire RunSummary the collector stores.
//
// The run is one the collector accepts whatever the profile held: beyond the wire contract's
// limits the builder repairs (contract_fit.h: names escaped or cut, the smallest operators
// summed into a remainder row, steps renumbered or bucketed to fit the counts and the message
// size), and each repair is a warning in the run. What cannot be repaired (a time past the
// contract's bounds, a --run-id that is not a UUID) is left for wire::ValidateRun,
// which every caller runs before sending, to refuse with the field's name.
#pragma once

#include <chrono>
#include <ostream>
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

// Labels the user gave (model, workload, ...) are fitted as the profile's text is.
v1::RunSummary BuildRunSummary(const trace::TraceSummary& summary, const RunLabels& labels);

// True for the warnings BuildRunSummary adds for its own repairs (kinds "operator_names_escaped",
// "operator_names_cut", "operator_names_merged", "operators_merged", "steps_renumbered",
// "steps_bucketed", "text_repaired", "environment_cut"), as opposed to the trace's.
bool IsRepairWarning(const v1::CaptureWarning& warning);

// Writes `run` to `out` exactly as wire::ToJson(run) prints it, but the operators and step
// totals one at a time: protobuf's printer builds a tree of every value of the message before
// it writes a byte (a run at the 16 MiB message limit took hundreds of MB), so a run is never
// printed as one tree or one string. `run` is taken by value: its operators and steps are
// moved out of it while the rest is printed.
void WriteRunJson(v1::RunSummary run, std::ostream& out);

// A random (version 4) UUID in canonical lowercase form.
std::string NewRunId();

// This machine's hostname ("localhost" if it cannot be read).
std::string HostName();

}  // namespace devtime::agent
