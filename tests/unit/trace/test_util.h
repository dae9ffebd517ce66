// Helpers shared by the devtime::trace tests.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
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

}  // namespace devtime::trace::testing
