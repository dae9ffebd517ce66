// Helpers shared by the devtime::trace tests. The tests live in this namespace with them
// (devtime::trace::testing): they name the helpers unqualified, and the library's own types
// through the enclosing devtime::trace.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <source_location>
#include <string>

#include "agents/trace/trace_summary.h"
#include "gtest/gtest.h"

namespace devtime::trace::testing {

inline std::filesystem::path Fixture(const std::string& name) {
  return std::filesystem::path(DEVTIME_SOURCE_DIR) / "tests/fixtures/trace" / name;
}

// `in` compressed in the gzip format (what torch writes for *.json.gz).
inline std::string Gzip(const std::string& in) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, in.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Summarize(p, options), failing the test (and returning an empty summary) when it errs.
inline TraceSummary MustSummarize(const std::filesystem::path& p,
                                  const SummarizeOptions& options = SummarizeOptions()) {
  absl::StatusOr<TraceSummary> s = Summarize(p, options);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : TraceSummary();
}

// Expects `s` to be a trustworthy summary, read as `format`, of a profile on `device`: with
// device time unless the profile is CPU-only. Failures name the caller's line.
inline void ExpectValidCapture(const TraceSummary& s, const std::string& format, DeviceKind device,
                               const std::source_location& at = std::source_location::current()) {
  ::testing::ScopedTrace trace(at.file_name(), static_cast<int>(at.line()), "ExpectValidCapture");
  EXPECT_EQ(s.source_format, format);
  EXPECT_EQ(s.device_kind, device);
  EXPECT_EQ(s.has_device_time, device != DeviceKind::kCpu);
  EXPECT_FALSE(s.invalid_reason) << *s.invalid_reason;
}

// True when some warning of `s` contains `part`.
inline bool HasWarning(const TraceSummary& s, const std::string& part) {
  for (const std::string& w : s.warnings) {
    if (w.find(part) != std::string::npos) return true;
  }
  return false;
}

// nullptr when the summary has no op of that (key_averages) name.
inline const OpStats* FindOp(const TraceSummary& s, const std::string& name) {
  for (const OpStats& op : s.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// The op of that name. When the summary has none: a test failure at the caller's line, and an
// op with every figure 0, so that the test goes on to report what else is off.
inline const OpStats& Op(const TraceSummary& s, const std::string& name,
                         const std::source_location& at = std::source_location::current()) {
  if (const OpStats* op = FindOp(s, name)) return *op;
  ADD_FAILURE_AT(at.file_name(), static_cast<int>(at.line())) << "the summary has no op " << name;
  static const OpStats kNone;
  return kNone;
}

// The time of `layer` in `s`; nullopt when the summary does not have that layer (not measured).
inline std::optional<double> FindLayerUs(const TraceSummary& s, Layer layer) {
  for (const LayerTime& l : s.layers) {
    if (l.layer == layer) return l.time_us;
  }
  return std::nullopt;
}

// A fresh directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "devtime_trace_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path Write(const std::string& name, const std::string& content) const {
    const std::filesystem::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

 private:
  std::filesystem::path path_;
};

inline std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Summarize() of a harness output directory made for the test: the fixture `trace` as
// trace.json, and beside it `side_files` (file name -> content: environment.json,
// key_averages.json).
inline absl::StatusOr<TraceSummary> SummarizeCapture(
    const std::filesystem::path& trace, const std::map<std::string, std::string>& side_files) {
  TempDir dir;
  dir.Write("trace.json", ReadAll(Fixture(trace)));
  for (const auto& [name, content] : side_files) dir.Write(name, content);
  return Summarize(dir.path());
}

}  // namespace devtime::trace::testing
