// What `devtimectl import` finds in an archive of past profiler output: one Capture per
// profiler output directory (a harness or TorchNeuron output: it holds a framework trace,
// key_averages.json or a Neuron session) and per trace file standing on its own (.json,
// .json.gz, .pt.trace.json[.gz]), with the model, workload and time its path names, and the
// run id its content gives it, so that importing the same archive twice stores nothing twice.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace devtime::ctl {

// How the path below an import root reads: its components, one by one, are the fields of the
// layout ("model/workload/when" by default; "-" skips a component). A path shorter than the
// layout leaves the missing fields to the flags, the capture's environment and its files.
struct ImportLayout {
  enum class Field { kModel, kWorkload, kWhen, kSkip };
  std::vector<Field> fields;
};

// "model/workload/when", "workload/when", "-/model/when", ...; every field at most once.
absl::StatusOr<ImportLayout> ParseImportLayout(std::string_view text);

struct Capture {
  std::filesystem::path path;  // a directory or a trace file
  std::string model;           // "" when the layout does not name it
  std::string workload;
  std::optional<std::chrono::system_clock::time_point> when;
};

// The captures below each root (a root that is itself a capture counts as one), sorted by
// path. Errors: a root that does not exist (kNotFound), a `when` component that is not a time
// (kInvalidArgument naming the path and the component).
absl::StatusOr<std::vector<Capture>> FindCaptures(const std::vector<std::filesystem::path>& roots,
                                                  const ImportLayout& layout);

// Refuses a capture whose model or workload, as the layout read them from its path, reads
// as a time (ParsePathTime): that is a night's folder, taken for a name because the path
// is shorter or longer than the layout says (e.g. DIR is one level below the archive's
// root: "2026-11-24" becomes the workload and the time is lost). INVALID_ARGUMENT naming
// the capture, the field, the component and what to do instead. A field its flag sets
// (`model_given`, `workload_given`) is not read from the path, so it is not judged.
// `layout_text`: --layout as given, for the message.
absl::Status CheckLabels(const std::vector<Capture>& captures, std::string_view layout_text,
                         bool model_given, bool workload_given);

// The time a path component names, in UTC: 2026-11-24, 2026-11-24T02:00:00Z (RFC 3339),
// 20261124, 20261124T0200, 20261124T020000, 20261124-020000; nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> ParsePathTime(std::string_view component);

// A run id that is a function of the capture's bytes (every regular file below it, by
// relative path) and of what it is stored as (model, workload, start time): SHA-256, as an
// RFC 9562 version 8 UUID in canonical lowercase form. The same bytes filed under two
// nights are two runs; the same capture imported twice is one.
absl::StatusOr<std::string> ContentRunId(const std::filesystem::path& capture,
                                         const std::string& model, const std::string& workload,
                                         std::chrono::system_clock::time_point started_at);

}  // namespace devtime::ctl
