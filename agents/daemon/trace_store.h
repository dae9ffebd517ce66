// devtime::agent — the trace store: where the agent keeps each run's trace files so that a
// regression can link to them (agent.yaml `trace_store`, `trace_retention_days`).
//
// A run's files go to <store>/<model>/<workload>/<run id>/, each at its path under the job's
// output directory (a Neuron session keeps its layout, which Neuron Explorer needs), and the
// run's artifacts then name the copies: uri file://<store>/..., size_bytes and sha256 of the
// stored bytes. The collector never reads the files; devtimectl prints how to open them
// (proto/wire/trace_links.h). Run folders last changed more than the retention ago are
// removed when a later run is kept.
//
// Thread-safety: the functions may run concurrently for different runs (each writes only its
// own folder; pruning skips folders still being written).
#pragma once

#include <chrono>
#include <filesystem>

#include "absl/status/status.h"
#include "agents/daemon/agent_config.h"
#include "devtime/v1/run.pb.h"
#include "proto/wire/env.h"

namespace devtime::agent {

// The folder of `run` in the store at `root`: root/<model>/<workload>/<run id>, each name
// made safe as one path component ('/' and a leading '.' become '_').
std::filesystem::path RunTraceFolder(const std::filesystem::path& root, const v1::RunSummary& run);

// Copies the files `run`'s artifacts name into its folder under `root`, with their SHA-256,
// and points the artifacts at the copies. A file outside `output` keeps only its name. The
// copy is durable before the artifacts change: written into "<folder>.tmp", every file and
// folder fsync'd, then renamed into place (a run kept again replaces its folder). On failure
// nothing of the run stays in the store and `run` is unchanged; a full disk is
// RESOURCE_EXHAUSTED, anything else INTERNAL, naming the file. Folders are synced through
// `env` (the daemon's, so that its injected faults reach the store too).
absl::Status KeepTraceFiles(const std::filesystem::path& root, const std::filesystem::path& output,
                            v1::RunSummary* run, wire::Env& env = *wire::Env::Default());

// Removes the run folders (root/*/*/*, "*.tmp" ones included) last changed before `cutoff`;
// how many went. Model and workload folders stay, even empty: another run may be creating
// its folder in one at that moment.
int PruneTraceStore(const std::filesystem::path& root, std::filesystem::file_time_type cutoff);

// What the daemon does with a summarized run before spooling it: KeepTraceFiles into
// config.trace_store, then PruneTraceStore of the folders older than
// config.trace_retention_days. Nothing when trace_store is "".
absl::Status KeepRunTraces(const AgentConfig& config, const std::filesystem::path& output,
                           v1::RunSummary* run, wire::Env& env = *wire::Env::Default());

}  // namespace devtime::agent
