#include "agents/trace/neuron/system_trace_finder.h"

#include <zlib.h>

#include <algorithm>
#include <string>
#include <system_error>

#include "agents/trace/perfetto/pftrace_reader.h"

namespace devtime::trace {
namespace {

namespace fs = std::filesystem;

constexpr size_t kSniffBytes = size_t{1} << 20;
constexpr int kMaxDepth = 3;

bool IsWs(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Position after the JSON string starting at s[i] (a '"'); npos when it is cut.
size_t AfterString(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

size_t SkipWs(std::string_view s, size_t i) {
  while (i < s.size() && IsWs(s[i])) ++i;
  return i;
}

// True when the array at s[i] ('[') is empty or its first element is an object with an
// `event_type` key near its start (a fetch-API record), as far as the prefix shows.
bool LooksLikeFetchRecords(std::string_view s, size_t i) {
  i = SkipWs(s, i + 1);
  if (i >= s.size()) return true;  // cut right after '[': give the reader the benefit
  if (s[i] == ']') return true;
  if (s[i] != '{') return false;
  return s.substr(i, 4096).find("\"event_type\"") != std::string_view::npos;
}

void Walk(const fs::path& dir, int depth, std::vector<fs::path>* out) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::error_code ec2;
    if (e.is_directory(ec2)) {
      if (depth < kMaxDepth) Walk(e.path(), depth + 1, out);
    } else if (e.is_regular_file(ec2)) {
      out->push_back(e.path());
    }
  }
}

// `p` normalized, without a trailing separator.
fs::path Clean(const fs::path& p) {
  fs::path n = p.lexically_normal();
  if (!n.has_filename() && n.has_parent_path()) n = n.parent_path();
  return n;
}

}  // namespace

bool IsExplorerOutputName(const std::string& name) {
  return name == "system_profile.json" || name == "system_profile.json.gz" ||
         name == "system_profile.pftrace" || name == "system_profile.pftrace.gz";
}

bool IsFrameworkTraceName(const std::string& name) {
  if (name == "trace.json" || name == "trace.json.gz") return true;
  if (name.ends_with(".pt.trace.json") || name.ends_with(".pt.trace.json.gz")) return true;
  return name.starts_with("neuron_framework_trace_rank_") &&
         (name.ends_with(".json") || name.ends_with(".json.gz"));
}

bool IsJsonName(const std::string& name) {
  return name.ends_with(".json") || name.ends_with(".json.gz");
}

SystemTraceForm SniffSystemTrace(std::string_view s) {
  size_t i = SkipWs(s, 0);
  if (i >= s.size() || s[i] != '{') return SystemTraceForm::kNone;
  ++i;
  // Top-level members: key, ':', value (skipped by bracket depth, strings aware), ','.
  while (true) {
    i = SkipWs(s, i);
    if (i >= s.size() || s[i] != '"') return SystemTraceForm::kNone;
    const size_t key_end = AfterString(s, i);
    if (key_end == std::string_view::npos) return SystemTraceForm::kNone;
    const std::string_view key = s.substr(i + 1, key_end - i - 2);
    i = SkipWs(s, key_end);
    if (i >= s.size() || s[i] != ':') return SystemTraceForm::kNone;
    i = SkipWs(s, i + 1);
    if (i >= s.size()) return SystemTraceForm::kNone;
    if (s[i] == '[') {
      if (key == "trace_event" || key == "trace_events") return SystemTraceForm::kExplorerJson;
      if (key == "events" && LooksLikeFetchRecords(s, i)) return SystemTraceForm::kFetchApi;
    }
    int depth = 0;
    for (; i < s.size(); ++i) {
      const char c = s[i];
      if (c == '"') {
        i = AfterString(s, i);
        if (i == std::string_view::npos) return SystemTraceForm::kNone;
        --i;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) return SystemTraceForm::kNone;  // end of the top-level object
        --depth;
      } else if (c == ',' && depth == 0) {
        break;
      }
    }
    if (i >= s.size()) return SystemTraceForm::kNone;
    ++i;  // past ','
  }
}

SystemTraceForm SniffSystemTraceFile(const fs::path& file) {
  // gzread reads plain files as they are and inflates gzip ones.
  gzFile f = gzopen(file.c_str(), "rb");
  if (f == nullptr) return SystemTraceForm::kNone;
  std::string buf(kSniffBytes, '\0');
  const int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
  gzclose(f);
  if (n <= 0) return SystemTraceForm::kNone;
  buf.resize(static_cast<size_t>(n));
  return SniffSystemTrace(buf);
}

SystemTraceForm SniffAnySystemTraceFile(const fs::path& file) {
  const std::string name = file.filename().string();
  if (IsPerfettoSystemTraceName(name)) {
    gzFile f = gzopen(file.c_str(), "rb");
    if (f == nullptr) return SystemTraceForm::kNone;
    unsigned char first = 0;
    const int n = gzread(f, &first, 1);
    gzclose(f);
    return n == 1 && first == 0x0A ? SystemTraceForm::kPerfetto : SystemTraceForm::kNone;
  }
  if (!IsJsonName(name) || IsFrameworkTraceName(name)) return SystemTraceForm::kNone;
  return SniffSystemTraceFile(file);
}

std::vector<fs::path> FindSystemTraces(const fs::path& session_dir, const fs::path& root) {
  std::vector<fs::path> files;
  Walk(session_dir, 1, &files);
  // The directories above the session, up to the one the user named (their files only).
  const fs::path session = Clean(session_dir);
  const fs::path rel = session.lexically_relative(Clean(root));
  if (!rel.empty() && rel != "." && *rel.begin() != "..") {
    fs::path d = session;
    for (auto it = rel.begin(); it != rel.end(); ++it) {
      d = d.parent_path();
      std::error_code ec;
      for (const fs::directory_entry& e : fs::directory_iterator(d, ec)) {
        std::error_code ec2;
        if (e.is_regular_file(ec2)) files.push_back(e.path());
      }
    }
  }
  // neuron-explorer's own output names are candidates whatever they hold, so that a
  // system_profile.json that is not JSON is an error naming it, not skipped in silence.
  std::vector<fs::path> out;
  for (const fs::path& f : files) {
    if (IsExplorerOutputName(f.filename().string()) ||
        SniffAnySystemTraceFile(f) != SystemTraceForm::kNone) {
      out.push_back(f);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace devtime::trace
