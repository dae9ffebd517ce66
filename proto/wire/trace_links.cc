#include "proto/wire/trace_links.h"

#include <algorithm>
#include <filesystem>

namespace devtime::wire {
namespace {

constexpr char kPerfetto[] = "Perfetto UI";
constexpr char kNeuronExplorer[] = "Neuron Explorer";
constexpr char kPerfettoUrl[] = "https://ui.perfetto.dev";

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The file name at the end of `uri` (a path or a URI: both use '/').
std::string PathOf(const std::string& uri) {
  const std::string local = LocalPath(uri);
  return local.empty() ? uri : local;
}

// The capture directory Neuron Explorer is pointed at: the file's folder, or the one above
// `neffs/` (vLLM keeps the NEFFs there, beside the session's NTFF and ntrace.pb).
std::string SessionDirectory(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.filename() == "neffs") dir = dir.parent_path();
  return dir.string();
}

}  // namespace

std::string LocalPath(const std::string& uri) {
  constexpr std::string_view kScheme = "file://";
  if (uri.compare(0, kScheme.size(), kScheme) != 0) return "";
  return uri.substr(kScheme.size());
}

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

TraceOpening OpenWith(const v1::Artifact& artifact) {
  const std::string path = PathOf(artifact.uri());
  const bool local = !LocalPath(artifact.uri()).empty();
  TraceOpening opening;
  if (EndsWith(path, ".pftrace") || artifact.kind() == "framework_trace") {
    opening.viewer = kPerfetto;
    opening.target = path;
    if (local) opening.command = "trace_processor --httpd " + ShellQuote(path);
    // trace_processor is not packaged in Debian; the UI opens a file of up to a few hundred
    // MB by itself.
    opening.then = local ? std::string("then open ") + kPerfettoUrl +
                               "; or, without trace_processor (not packaged in Debian), load "
                               "the file in " +
                               kPerfettoUrl + " directly (Open trace file)"
                         : std::string("fetch it, then load it in ") + kPerfettoUrl;
  } else if (artifact.kind() == "system_trace" || artifact.kind() == "neff" ||
             artifact.kind() == "ntff") {
    opening.viewer = kNeuronExplorer;
    opening.target = local ? SessionDirectory(path) : artifact.uri();
    if (local) opening.command = "neuron-explorer view -d " + ShellQuote(opening.target);
    if (!local) opening.then = "fetch its session directory, then neuron-explorer view -d DIR";
  }
  return opening;
}

bool IsTraceFile(const v1::Artifact& artifact) { return !OpenWith(artifact).viewer.empty(); }

google::protobuf::RepeatedPtrField<v1::Artifact> TraceFiles(
    const google::protobuf::RepeatedPtrField<v1::Artifact>& artifacts) {
  google::protobuf::RepeatedPtrField<v1::Artifact> traces;
  for (const v1::Artifact& artifact : artifacts) {
    if (IsTraceFile(artifact)) *traces.Add() = artifact;
  }
  return traces;
}

std::vector<std::string> OpeningLines(
    const google::protobuf::RepeatedPtrField<v1::Artifact>& traces) {
  std::vector<std::string> lines;
  for (const v1::Artifact& artifact : traces) {
    const TraceOpening opening = OpenWith(artifact);
    if (opening.viewer.empty()) continue;
    std::string line = opening.viewer + ": ";
    if (opening.command.empty()) {
      line += opening.target + " (" + opening.then + ")";
    } else {
      line += opening.command + (opening.then.empty() ? "" : ", " + opening.then);
    }
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
  }
  return lines;
}

}  // namespace devtime::wire
