// Reads Neuron Explorer's Perfetto system profile (`neuron-explorer view --output-format
// perfetto` → system_profile.pftrace; gzip'd files too) into the same NeuronSystemTrace as the
// JSON forms (neuron_reader.h): NeuronCore executions, runtime and framework intervals.
//
// Streaming: the file is memory-mapped (gzip inflated in chunks, byte_source.h) and decoded one
// TracePacket record at a time (perfetto-neuron-monitor.md A1: a file is `0A len packet`
// records; never one 2 GiB-limited message). A hand-written protobuf wire decoder reads only the
// fields below and skips every other field by wire type:
//   TracePacket: timestamp 8, trusted_packet_sequence_id 10, track_event 11, interned_data 12,
//     sequence_flags 13, incremental_state_cleared 41, previous_packet_dropped 42,
//     compressed_packets 50 (zlib: more records), trace_packet_defaults 59 (→ 11 → track_uuid 11)
//   TrackEvent: type 9 (1 begin, 2 end, 3 instant), name_iid 10, name 23, track_uuid 11,
//     debug_annotations 4 (name_iid 1 / name 10; bool 2, uint 3, int 4, string 6,
//     string_value_iid 17)
//   InternedData: event_names 2, debug_annotation_names 3, debug_annotation_string_values 29
// Interning is per sequence and starts invalid: a packet that needs incremental state on a
// sequence not yet cleared is skipped and counted (as Perfetto's trace processor does). Slices
// pair BEGIN/END per track. Timestamps are epoch ns (A4.4). A truncated last record is left
// unread with a warning; `previous_packet_dropped` counts as dropped events (the run is INVALID).
//
// Slices: `nc_exec_running[ <neff>]` → executions, keyed by the args process_id, lnc_idx (or
// nc_idx) and exec_id (rows of physical cores merged), with their NEFF/model identity from the
// args model_name, model_id and device_profile (SetModelIdentity, as the JSON forms);
// `trace_event_source` "framework" → framework; every other non-hardware slice → runtime. Internal
// to devtime::trace.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agents/trace/model/neuron_system_trace.h"

namespace devtime::trace {

absl::StatusOr<NeuronSystemTrace> ReadPerfettoSystemTrace(const std::filesystem::path& path);

// `bytes`: a whole .pftrace (gzip when it starts with 1f 8b); `origin` names it in messages.
absl::StatusOr<NeuronSystemTrace> ParsePerfettoSystemTrace(std::string_view bytes,
                                                           const std::string& origin);

// True for names Neuron Explorer gives system profiles in Perfetto form (*.pftrace[.gz], not
// the per-model device_profile_model_<id>.pftrace or neuron-profile's ntff.pftrace).
bool IsPerfettoSystemTraceName(const std::string& name);

}  // namespace devtime::trace
