// trace_bench — speed and memory of devtime::trace on large Kineto traces (issue 3 item 7).
//
//   trace_bench generate OUT BYTES [--steps N] [--names N]
//                                      deterministic realistic Kineto trace of about BYTES:
//                                      about N ProfilerStep windows (default: 200 ops each),
//                                      about N distinct cpu_op names (default: kOps' 9)
//   trace_bench summarize FILE         Summarize(FILE) once: MB/s of JSON text, peak RSS
//   trace_bench smoke                  a 2 MB generate + summarize (plain and .gz) self-check
//
// tests/bench/trace/run.sh runs generate, summarize (plain and gzip) and the Python baseline
// and prints the ratios. Generated files go under /tmp, never into the repository.
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "agents/trace/trace_summary.h"

namespace {

namespace fs = std::filesystem;

// ---- generator ---------------------------------------------------------------------------

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {  // splitmix64
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  int64_t Between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }

 private:
  uint64_t s_;
};

struct OpKind {
  const char* module;  // python_function nn.Module name
  const char* frame;   // python_function frame
  const char* op;      // outer aten op
  const char* inner;   // inner aten op that launches
  const char* kernel;  // device kernel
  const char* dims;    // Input Dims
};

constexpr OpKind kOps[] = {
    {"nn.Module: Linear_", "torch/nn/modules/linear.py(114): forward", "aten::linear",
     "aten::addmm", "ampere_sgemm_128x64_tn", "[[4, 512], [512, 512], [512]]"},
    {"nn.Module: LayerNorm_", "torch/nn/modules/normalization.py(201): forward", "aten::layer_norm",
     "aten::native_layer_norm",
     "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>",
     "[[4, 512], [], [512], [512], []]"},
    {"nn.Module: GELU_", "torch/nn/modules/activation.py(681): forward", "aten::gelu", "aten::gelu",
     "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
     "[[4, 2048], []]"},
    {"nn.Module: Dropout_", "torch/nn/modules/dropout.py(58): forward", "aten::dropout",
     "aten::native_dropout",
     "void at::native::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4>",
     "[[4, 512], [], []]"},
    {"nn.Module: Softmax_", "torch/nn/modules/activation.py(1502): forward", "aten::softmax",
     "aten::_softmax",
     "void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false>",
     "[[4, 8, 128, 128], [], []]"},
};

class Writer {
 public:
  Writer(const fs::path& out, bool gzip) : gzip_(gzip) {
    if (gzip) {
      gz_ = gzopen(out.c_str(), "wb6");
    } else {
      f_ = std::fopen(out.c_str(), "wb");
    }
    if (!gz_ && !f_) {
      std::perror(out.c_str());
      std::exit(2);
    }
    buf_.reserve(1 << 20);
  }
  ~Writer() {
    Flush();
    if (gz_) gzclose(gz_);
    if (f_) std::fclose(f_);
  }
  void Append(const char* s, size_t n) {
    buf_.append(s, n);
    written_ += n;
    if (buf_.size() >= (1 << 20)) Flush();
  }
  void Printf(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char tmp[4096];
    va_list ap;
    va_start(ap, fmt);
    const int n = std::vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    Append(tmp, static_cast<size_t>(std::min<int>(n, sizeof(tmp) - 1)));
  }
  uint64_t written() const { return written_; }

 private:
  void Flush() {
    if (buf_.empty()) return;
    if (gz_) {
      gzwrite(gz_, buf_.data(), static_cast<unsigned>(buf_.size()));
    } else {
      std::fwrite(buf_.data(), 1, buf_.size(), f_);
    }
    buf_.clear();
  }
  bool gzip_;
  gzFile gz_ = nullptr;
  std::FILE* f_ = nullptr;
  std::string buf_;
  uint64_t written_ = 0;
};

// Kineto 3-decimal microseconds for a relative ns time (§1.6).
struct Ts {
  char text[32];
  explicit Ts(int64_t ns) {
    std::snprintf(text, sizeof(text), "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  }
};

struct GenerateOptions {
  uint64_t steps = 0;  // ProfilerStep windows to spread the bytes over; 0: 200 ops per step
  uint64_t names = 0;  // distinct cpu_op names (outer and inner op numbered); 0: kOps' names
};

// About the JSON bytes of one op (its 6 X events and 2 flow events), to size the steps.
constexpr uint64_t kBytesPerOp = 1970;

// Writes a trace of about `bytes` bytes of JSON: ProfilerStep windows, python_function noise
// (two frames per op), nested cpu_ops, cudaLaunchKernel + kernel linked by correlation, ac2g
// flow events, 3-decimal timestamps and baseTimeNanoseconds, keys in Kineto's order.
void Generate(const fs::path& out, uint64_t bytes, bool gzip, const GenerateOptions& options) {
  const uint64_t ops_per_step =
      options.steps == 0 ? 200 : std::max<uint64_t>(1, bytes / kBytesPerOp / options.steps);
  uint64_t op_count = 0;
  // "aten::addmm" or, with options.names, "aten::addmm.<n>" (n cycling through `names`).
  auto op_name = [&](const char* base, uint64_t slot) {
    if (options.names == 0) return std::string(base);
    return std::string(base) + "." + std::to_string(slot % options.names);
  };
  Writer w(out, gzip);
  Rng rng(20240703);
  w.Printf(
      "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": "
      "\"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 84942979072, \"computeMajor\": 9, "
      "\"computeMinor\": 0, \"maxThreadsPerBlock\": 1024, \"numSms\": 132}\n  ],\n"
      "  \"cupti_version\": 22, \"cuda_runtime_version\": 12040, \"cuda_driver_version\": 12040,\n"
      "  \"trace_id\": \"2F8A1E6B0C4D4C3E9D7A5B1C3E2F4A6B\",\n"
      "  \"baseTimeNanoseconds\": 1719853884000000000,\n  \"traceEvents\": [\n");
  const int pid = 1102;
  const int tid = 1102;
  int64_t t = 1212075548000000;  // relative ns
  int64_t ext = 1;
  int64_t corr = 100;
  int64_t gpu_t = t;
  bool first = true;
  auto sep = [&] {
    if (!first) w.Append(",\n", 2);
    first = false;
  };
  for (uint32_t step = 1; w.written() < bytes; ++step) {
    const int64_t step_start = t;
    const int64_t step_ext = ext++;
    t += rng.Between(5000, 20000);
    for (uint64_t i = 0; i < ops_per_step; ++i, ++op_count) {
      const OpKind& k = kOps[rng.Next() % (sizeof(kOps) / sizeof(kOps[0]))];
      const int64_t d_launch = rng.Between(3000, 9000);
      const int64_t d_inner = d_launch + rng.Between(8000, 30000);
      const int64_t d_op = d_inner + rng.Between(4000, 20000);
      const int64_t d_py2 = d_op + rng.Between(2000, 8000);
      const int64_t d_py1 = d_py2 + rng.Between(2000, 8000);
      const int64_t p1 = t, p2 = p1 + 1000, op = p2 + 1000, inner = op + 2000,
                    launch = inner + 3000;
      const int64_t op_ext = ext++, inner_ext = ext++;
      const int idx = static_cast<int>(i % 24);
      const std::string outer_name = op_name(k.op, 2 * op_count);
      const std::string inner_name = op_name(k.inner, 2 * op_count + 1);
      sep();
      w.Printf(
          "  {\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"%s%d\", \"pid\": %d, "
          "\"tid\": %d, \"ts\": %s, \"dur\": %s, \"args\": {\"Python parent id\": %d, "
          "\"Python id\": %" PRId64 ", \"Python module id\": %d}}",
          k.module, idx, pid, tid, Ts(p1).text, Ts(d_py1).text, 1, 2 * op_ext, idx);
      sep();
      w.Printf(
          "  {\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"%s\", \"pid\": %d, "
          "\"tid\": %d, \"ts\": %s, \"dur\": %s, \"args\": {\"Python parent id\": %" PRId64
          ", \"Python id\": %" PRId64 "}}",
          k.frame, pid, tid, Ts(p2).text, Ts(d_py2).text, 2 * op_ext, 2 * op_ext + 1);
      sep();
      w.Printf(
          "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": %d, \"tid\": "
          "%d, \"ts\": %s, \"dur\": %s, \"args\": {\"External id\": %" PRId64
          ", \"Record function id\": 0, \"Ev Idx\": %" PRId64
          ", \"Input Dims\": %s, \"Input type\": [\"float\", \"float\", \"float\"], "
          "\"Input Strides\": [[512, 1], [1, 512], [1]], \"Concrete Inputs\": [\"\", \"\", "
          "\"\"]}}",
          outer_name.c_str(), pid, tid, Ts(op).text, Ts(d_op).text, op_ext, op_ext, k.dims);
      sep();
      w.Printf(
          "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": %d, \"tid\": "
          "%d, \"ts\": %s, \"dur\": %s, \"args\": {\"External id\": %" PRId64
          ", \"Record function id\": 0, \"Ev Idx\": %" PRId64
          ", \"Input Dims\": %s, \"Input type\": [\"float\", \"float\", \"float\"]}}",
          inner_name.c_str(), pid, tid, Ts(inner).text, Ts(d_inner).text, inner_ext, inner_ext,
          k.dims);
      sep();
      w.Printf(
          "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
          "\"pid\": %d, \"tid\": %d, \"ts\": %s, \"dur\": %s, \"args\": {\"External id\": "
          "%" PRId64 ", \"cbid\": 211, \"correlation\": %" PRId64 "}}",
          pid, tid, Ts(launch).text, Ts(d_launch).text, inner_ext, corr);
      const int64_t k_start = std::max(gpu_t, launch + 4000);
      const int64_t d_kernel = rng.Between(5000, 60000);
      gpu_t = k_start + d_kernel + 1500;
      sep();
      w.Printf(
          "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": "
          "7, \"ts\": %s, \"dur\": %s, \"args\": {\"External id\": %" PRId64
          ", \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": "
          "%" PRId64
          ", \"registers per thread\": 122, \"shared memory\": 16384, \"blocks "
          "per SM\": 0.484848, \"warps per SM\": 3.878788, \"grid\": [64, 1, 1], "
          "\"block\": [256, 1, 1], \"est. achieved occupancy %%\": 6}}",
          k.kernel, Ts(k_start).text, Ts(d_kernel).text, inner_ext, corr);
      sep();
      w.Printf("  {\"ph\": \"s\", \"id\": %" PRId64
               ", \"pid\": %d, \"tid\": %d, \"ts\": %s, "
               "\"cat\": \"ac2g\", \"name\": \"ac2g\"}",
               corr, pid, tid, Ts(launch).text);
      sep();
      w.Printf("  {\"ph\": \"f\", \"id\": %" PRId64
               ", \"pid\": 0, \"tid\": 7, \"ts\": %s, "
               "\"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}",
               corr, Ts(k_start).text);
      ++corr;
      t = p1 + d_py1 + rng.Between(1000, 5000);
    }
    t = std::max(t, gpu_t) + 2000;  // synchronize at the end of the step
    sep();
    w.Printf(
        "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%u\", "
        "\"pid\": %d, \"tid\": %d, \"ts\": %s, \"dur\": %s, \"args\": {\"External id\": "
        "%" PRId64 ", \"Record function id\": 0, \"Ev Idx\": %" PRId64 "}}",
        step, pid, tid, Ts(step_start).text, Ts(t - step_start).text, step_ext, step_ext);
    t += 1000;
  }
  w.Printf(
      ",\n  {\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", "
      "\"tid\": \"\", \"ts\": %s}\n  ],\n  \"traceName\": \"bench.pt.trace.json\",\n"
      "  \"displayTimeUnit\": \"ms\",\n  \"distributedInfo\": {\"backend\": \"nccl\", "
      "\"rank\": 0, \"world_size\": 1}\n}\n",
      Ts(t).text);
}

// ---- measurement -------------------------------------------------------------------------

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double PeakRssMb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is KiB on Linux
}

// The peak of the process's anonymous resident memory (RSS minus file-backed pages: heap,
// stacks; not the mapped trace, whose pages the reader drops as it goes) while it lives,
// sampled from /proc/self/statm every 2 ms by a thread that waits for Stop in between (and
// ends as soon as it is called). "Peak RSS beyond the mapped input" (issue 12) is this
// figure; ru_maxrss counts the mapped pages too.
class AnonPeak {
 public:
  AnonPeak()
      : thread_([this] {
          std::unique_lock lock(mu_);
          do {
            Sample();
          } while (!stopped_.wait_for(lock, std::chrono::milliseconds(2), [&] { return stop_; }));
        }) {}
  ~AnonPeak() { Stop(); }
  double Stop() {
    if (thread_.joinable()) {
      {
        std::lock_guard lock(mu_);
        stop_ = true;
      }
      stopped_.notify_one();
      thread_.join();
      Sample();
    }
    return static_cast<double>(peak_pages_) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
           1048576.0;
  }

 private:
  void Sample() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return;
    unsigned long size = 0, resident = 0, shared = 0;
    if (std::fscanf(f, "%lu %lu %lu", &size, &resident, &shared) == 3 && resident > shared) {
      peak_pages_ = std::max(peak_pages_, static_cast<uint64_t>(resident - shared));
    }
    std::fclose(f);
  }
  std::mutex mu_;
  std::condition_variable stopped_;
  bool stop_ = false;  // guarded by mu_
  uint64_t peak_pages_ = 0;
  std::thread thread_;
};

// JSON bytes of a file (decompressed size for gzip), counted outside the timed region.
uint64_t JsonBytes(const fs::path& p, bool* gz) {
  unsigned char magic[2] = {0, 0};
  std::FILE* f = std::fopen(p.c_str(), "rb");
  if (!f) return 0;
  const size_t n = std::fread(magic, 1, 2, f);
  std::fclose(f);
  *gz = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (!*gz) return fs::file_size(p);
  gzFile g = gzopen(p.c_str(), "rb");
  static char buf[1 << 16];
  uint64_t total = 0;
  int got = 0;
  while ((got = gzread(g, buf, sizeof(buf))) > 0) total += static_cast<uint64_t>(got);
  gzclose(g);
  return total;
}

int Summarize(const fs::path& p, bool quiet) {
  bool gz = false;
  const uint64_t json_bytes = JsonBytes(p, &gz);
  const double rss_before = PeakRssMb();
  const double cpu0 = CpuSeconds();
  AnonPeak anon;
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<devtime::trace::TraceSummary> s = devtime::trace::Summarize(p);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;
  const double anon_mb = anon.Stop();
  if (!s.ok()) {
    std::fprintf(stderr, "summarize failed: %s\n", std::string(s.status().message()).c_str());
    return 1;
  }
  if (!quiet) {
    std::printf(
        "devtime %s: %.1f MB JSON (%.1f MB on disk) in %.3f s wall = %.1f MB/s, %.3f s CPU = "
        "%.1f MB/s; peak RSS %.1f MB (%.1f MB before), %.1f MB beyond the mapped input; %" PRIu64
        " X events, %zu ops, %zu "
        "steps, %s\n",
        gz ? "gzip" : "plain", static_cast<double>(json_bytes) / 1e6,
        static_cast<double>(fs::file_size(p)) / 1e6, secs,
        static_cast<double>(json_bytes) / 1e6 / secs, cpu,
        static_cast<double>(json_bytes) / 1e6 / cpu, PeakRssMb(), rss_before, anon_mb,
        s->event_count, s->ops.size(), s->steps.size(),
        s->invalid_reason ? ("INVALID: " + *s->invalid_reason).c_str() : "valid");
    std::printf("RESULT kind=%s json_bytes=%" PRIu64
                " seconds=%.6f cpu_seconds=%.6f "
                "peak_rss_mb=%.1f peak_anon_mb=%.1f\n",
                gz ? "gzip" : "plain", json_bytes, secs, cpu, PeakRssMb(), anon_mb);
  }
  return s->invalid_reason ? 3 : 0;
}

int Smoke() {
  char tmpl[] = "/tmp/devtime_trace_bench_XXXXXX";
  if (!mkdtemp(tmpl)) return 2;
  const fs::path dir = tmpl;
  Generate(dir / "t.json", 2'000'000, false, {});
  Generate(dir / "t.json.gz", 2'000'000, true, {});
  int rc = Summarize(dir / "t.json", false);
  if (rc == 0) rc = Summarize(dir / "t.json.gz", false);
  absl::StatusOr<devtime::trace::TraceSummary> a = devtime::trace::Summarize(dir / "t.json");
  absl::StatusOr<devtime::trace::TraceSummary> b = devtime::trace::Summarize(dir / "t.json.gz");
  if (rc == 0 && (!a.ok() || !b.ok() || a->ops.size() != b->ops.size() || a->ops.size() < 10 ||
                  !a->has_device_time || a->steps.empty())) {
    std::fprintf(stderr, "smoke: plain and gzip summaries differ or are implausible\n");
    rc = 4;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "generate" && argc >= 4) {
    const fs::path out = argv[2];
    const std::string name = out.filename().string();
    const bool gz = name.size() > 3 && name.substr(name.size() - 3) == ".gz";
    GenerateOptions options;
    for (int a = 4; a + 1 < argc; a += 2) {
      const std::string flag = argv[a];
      const uint64_t value = std::strtoull(argv[a + 1], nullptr, 10);
      if (flag == "--steps") {
        options.steps = value;
      } else if (flag == "--names") {
        options.names = value;
      } else {
        std::fprintf(stderr, "unknown option %s\n", flag.c_str());
        return 2;
      }
    }
    Generate(out, std::strtoull(argv[3], nullptr, 10), gz, options);
    return 0;
  }
  if (cmd == "summarize" && argc >= 3) return Summarize(argv[2], false);
  if (cmd == "smoke") return Smoke();
  std::fprintf(
      stderr,
      "usage: trace_bench generate OUT[.gz] BYTES [--steps N] [--names N] | summarize FILE | "
      "smoke\n");
  return 2;
}
