// devtime::trace internals — joins each NeuronCore execution of a Neuron system trace to the
// framework op that launched it (issue 12 item 1), so that NeuronCore time is attributed per op
// the way torch's key_averages() attributes kernels (summarizer.h).
//
// The launches are the framework trace's privateuse1_driver events (device interaction, one
// per submission), or its privateuse1_runtime events when it has no driver events. A launch
// belongs to the op whose External id it carries, or that of the runtime event it shares its
// correlation with (the operator dispatch). Two ways to join, in this order:
//  1. by id — the launch's args carry `exec_id` or `nrt_sequence_id` and an execution has the
//     same exec_id or nrt_sequence_id;
//  2. by order — the remaining executions and the remaining launches inside the capture window
//     are paired first with first, when the clocks are aligned, they run on one NeuronCore
//     queue, their numbers are equal and no launch comes after its execution. Otherwise they
//     stay unjoined and a warning says why.
// Every execution becomes one device event (category kNeuronExecCategory) of the framework
// trace carrying its op's External id (none when unjoined: counted as unattributed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agents/trace/model/raw_trace.h"
#include "agents/trace/model/summary.h"
#include "agents/trace/neuron/neuron_reader.h"

namespace devtime::trace {

// The Kineto category of the device events made from NeuronCore executions.
inline constexpr char kNeuronExecCategory[] = "nc_exec_running";

// Appends the executions to `framework` as device events and says how they were joined.
// `aligned`: executions and framework events share the host clock (order join allowed);
// [lo_ns, hi_ns): the capture window in absolute ns (launches outside it are not paired).
DeviceJoin JoinNeuronExecutions(const std::vector<NeuronExecution>& executions, bool aligned,
                                int64_t lo_ns, int64_t hi_ns, RawTrace* framework,
                                std::vector<std::string>* warnings);

}  // namespace devtime::trace
