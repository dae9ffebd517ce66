// trace_bench — speed and memory of devtime::trace on large Kineto traces (issue 3 item 7).
//
//   trace_bench generate OUT BYTES [--steps N] [--names N] [--shape realistic|classic]
//                            [--long-name-bytes N]
//                                      deterministic realistic Kineto trace of about BYTES:
//                                      about N ProfilerStep windows (default: 20 forward ops
//                                      each, realistic; 200 ops, classic), about N distinct
//                                      cpu_op names (default: kOps' 9); shape `realistic`
//                                      (default: small cpu_ops, forward and backward threads,
//                                      ac2g and fwdbwd flows, ~190 B/event) or `classic` (the
//                                      issue 3 shape, ~330 B/event); one cpu_op named by N
//                                      bytes (--long-name-bytes). Prints events per GB.
//   trace_bench summarize FILE         Summarize(FILE) once: MB/s of JSON text, peak RSS
//   trace_bench read FILE              the reader alone (ReadTraceFile, keeping the categories
//                                      Summarize keeps): MB/s of JSON text, kept events
//   trace_bench ondemand FILE          the baseline: simdjson On-Demand reads FILE (plain) and
//                                      walks its events (ondemand_baseline.h)
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
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agents/trace/kineto/json_trace_reader.h"
#include "agents/trace/trace_summary.h"
#include "tests/bench/trace/ondemand_baseline.h"

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
  uint64_t steps = 0;    // ProfilerStep windows to spread the bytes over; 0: 200 ops per step
  uint64_t names = 0;    // distinct cpu_op names (outer and inner op numbered); 0: kOps' names
  bool classic = false;  // the issue 3 shape (few, large events) instead of realistic
  uint64_t long_name_bytes = 0;  // > 0: one extra cpu_op in step 1 with a name this long
};

// What a generator wrote: JSON bytes and trace events (any phase).
struct Generated {
  uint64_t bytes = 0;
  uint64_t events = 0;
  uint64_t steps = 0;
};

constexpr char kHeader[] =
    "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": "
    "\"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 84942979072, \"computeMajor\": 9, "
    "\"computeMinor\": 0, \"maxThreadsPerBlock\": 1024, \"numSms\": 132}\n  ],\n"
    "  \"cupti_version\": 22, \"cuda_runtime_version\": 12040, \"cuda_driver_version\": 12040,\n"
    "  \"trace_id\": \"2F8A1E6B0C4D4C3E9D7A5B1C3E2F4A6B\",\n"
    "  \"baseTimeNanoseconds\": 1719853884000000000,\n  \"traceEvents\": [\n";

// A cpu_op whose name is `bytes` bytes long ("aten::long_name_xxxx..."), for the memory of one
// huge name (issue 23: "a 100 MB op name costs 611 MB").
void WriteLongNameOp(Writer& w, uint64_t bytes, int pid, int tid, int64_t ts, int64_t dur,
                     int64_t ext);

// About the JSON bytes of one op (its 6 X events and 2 flow events), to size the steps.
constexpr uint64_t kBytesPerOp = 1970;

// Writes a trace of about `bytes` bytes of JSON: ProfilerStep windows, python_function noise
// (two frames per op), nested cpu_ops, cudaLaunchKernel + kernel linked by correlation, ac2g
// flow events, 3-decimal timestamps and baseTimeNanoseconds, keys in Kineto's order.
// The ProfilerStep#N range closing a step that ran [start, end), as torch writes it.
void WriteProfilerStep(Writer& w, uint32_t step, int pid, int tid, int64_t start, int64_t end,
                       int64_t ext) {
  w.Printf(
      "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%u\", "
      "\"pid\": %d, \"tid\": %d, \"ts\": %s, \"dur\": %s, \"args\": {\"External id\": "
      "%" PRId64 ", \"Record function id\": 0, \"Ev Idx\": %" PRId64 "}}",
      step, pid, tid, Ts(start).text, Ts(end - start).text, ext, ext);
}

Generated GenerateClassic(const fs::path& out, uint64_t bytes, bool gzip,
                          const GenerateOptions& options) {
  Generated g;
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
  w.Append(kHeader, sizeof(kHeader) - 1);
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
    ++g.events;
  };
  for (uint32_t step = 1; w.written() < bytes; ++step) {
    const int64_t step_start = t;
    const int64_t step_ext = ext++;
    ++g.steps;
    t += rng.Between(5000, 20000);
    if (step == 1 && options.long_name_bytes > 0) {
      sep();
      WriteLongNameOp(w, options.long_name_bytes, pid, tid, t, 3000, ext++);
      t += 4000;
    }
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
    WriteProfilerStep(w, step, pid, tid, step_start, t, step_ext);
    t += 1000;
  }
  w.Printf(
      ",\n  {\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", "
      "\"tid\": \"\", \"ts\": %s}\n  ],\n  \"traceName\": \"bench.pt.trace.json\",\n"
      "  \"displayTimeUnit\": \"ms\",\n  \"distributedInfo\": {\"backend\": \"nccl\", "
      "\"rank\": 0, \"world_size\": 1}\n}\n",
      Ts(t).text);
  g.events += 1;
  g.bytes = w.written();
  return g;
}

void WriteLongNameOp(Writer& w, uint64_t bytes, int pid, int tid, int64_t ts, int64_t dur,
                     int64_t ext) {
  w.Printf("  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"");
  constexpr char kPrefix[] = "aten::long_name_";
  w.Append(kPrefix, std::min<uint64_t>(bytes, sizeof(kPrefix) - 1));
  // Pseudo-random letters: a run of one byte would compress ~1000x, which the gzip reader
  // refuses as a bomb (GunzipBudget), so the .gz form of this trace could not be read.
  std::string chunk(1 << 16, 'x');
  Rng rng(bytes);
  for (char& c : chunk) c = static_cast<char>('a' + rng.Next() % 26);
  for (uint64_t left = bytes > sizeof(kPrefix) - 1 ? bytes - (sizeof(kPrefix) - 1) : 0; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
    w.Append(chunk.data(), n);
    left -= n;
  }
  w.Printf(
      "\", \"pid\": %d, \"tid\": %d, \"ts\": %s, \"dur\": %s, \"args\": {\"External id\": "
      "%" PRId64 ", \"Ev Idx\": %" PRId64 "}}",
      pid, tid, Ts(ts).text, Ts(dur).text, ext, ext);
}

// The small ops torch runs inside a module's op (views, allocations): short events with two
// args, the bulk of a real trace's events.
constexpr const char* kSmallOps[] = {"aten::t",      "aten::transpose", "aten::as_strided",
                                     "aten::empty",  "aten::view",      "aten::reshape",
                                     "aten::expand", "aten::contiguous"};

// About the JSON bytes of one forward op and its backward op (~21 events), to size the steps.
constexpr uint64_t kRealisticBytesPerOp = 4000;

// A realistic Kineto trace (issue 23: "realistic flow events and small ops", ≥ 4.5 M events per
// GB): per step `ops_per_step` forward modules on the main thread — a python_function frame, the
// outer cpu_op, 3-5 small cpu_ops, the launching cpu_op with its cudaLaunchKernel, a kernel and
// an ac2g flow pair, an fwdbwd flow start — then their backward ops on the autograd thread in
// reverse (evaluate_function, the *Backward0 node, a small op, aten::mm launching a kernel, ac2g
// flows, the fwdbwd flow end), all inside ProfilerStep#N, written after its children as Kineto
// does.
Generated GenerateRealistic(const fs::path& out, uint64_t bytes, bool gzip,
                            const GenerateOptions& options) {
  Generated g;
  const uint64_t ops_per_step =
      options.steps == 0 ? 20 : std::max<uint64_t>(1, bytes / kRealisticBytesPerOp / options.steps);
  auto op_name = [&](const char* base, uint64_t slot) {
    if (options.names == 0) return std::string(base);
    return std::string(base) + "." + std::to_string(slot % options.names);
  };
  Writer w(out, gzip);
  Rng rng(20240917);
  w.Append(kHeader, sizeof(kHeader) - 1);
  const int pid = 1102, tid = 1102, bwd_tid = 1187;
  int64_t t = 1212075548000000;
  int64_t ext = 1, corr = 100, flow = 1;
  int64_t gpu_t = t;
  uint64_t op_count = 0;
  bool first = true;
  auto sep = [&] {
    if (!first) w.Append(",\n", 2);
    first = false;
    ++g.events;
  };
  auto cpu_op = [&](const std::string& name, int thread, int64_t ts, int64_t dur) {
    sep();
    const int64_t id = ext++;
    w.Printf(
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, "
        "\"ts\": %s, \"dur\": %s, \"args\": {\"External id\": %" PRId64 ", \"Ev Idx\": %" PRId64
        "}}",
        name.c_str(), pid, thread, Ts(ts).text, Ts(dur).text, id, id);
    return id;
  };
  // cudaLaunchKernel at `ts` on `thread` for the op with External id `op_ext`, its kernel and
  // the ac2g flow pair between them.
  auto launch = [&](const char* kernel, int thread, int64_t ts, int64_t op_ext) {
    const int64_t d_launch = rng.Between(2000, 6000);
    sep();
    w.Printf(
        "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": "
        "%d, \"tid\": %d, \"ts\": %s, \"dur\": %s, \"args\": {\"External id\": %" PRId64
        ", \"cbid\": 211, \"correlation\": %" PRId64 "}}",
        pid, thread, Ts(ts).text, Ts(d_launch).text, op_ext, corr);
    const int64_t k_start = std::max(gpu_t, ts + 4000);
    const int64_t d_kernel = rng.Between(3000, 40000);
    gpu_t = k_start + d_kernel + 1000;
    sep();
    w.Printf(
        "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7, "
        "\"ts\": %s, \"dur\": %s, \"args\": {\"External id\": %" PRId64
        ", \"device\": 0, \"stream\": 7, \"correlation\": %" PRId64
        ", \"grid\": [64, 1, 1], \"block\": [256, 1, 1]}}",
        kernel, Ts(k_start).text, Ts(d_kernel).text, op_ext, corr);
    sep();
    w.Printf("  {\"ph\": \"s\", \"id\": %" PRId64
             ", \"pid\": %d, \"tid\": %d, \"ts\": %s, \"cat\": \"ac2g\", \"name\": \"ac2g\"}",
             corr, pid, thread, Ts(ts).text);
    sep();
    w.Printf("  {\"ph\": \"f\", \"id\": %" PRId64
             ", \"pid\": 0, \"tid\": 7, \"ts\": %s, \"cat\": \"ac2g\", \"name\": \"ac2g\", "
             "\"bp\": \"e\"}",
             corr, Ts(k_start).text);
    ++corr;
    return d_launch;
  };
  struct Forward {
    const OpKind* kind;
    int64_t flow;
  };
  std::vector<Forward> forwards;
  for (uint32_t step = 1; w.written() < bytes; ++step) {
    const int64_t step_start = t;
    const int64_t step_ext = ext++;
    ++g.steps;
    t += rng.Between(3000, 10000);
    if (step == 1 && options.long_name_bytes > 0) {
      sep();
      WriteLongNameOp(w, options.long_name_bytes, pid, tid, t, 3000, ext++);
      t += 4000;
    }
    forwards.clear();
    for (uint64_t i = 0; i < ops_per_step; ++i, ++op_count) {
      const OpKind& k = kOps[rng.Next() % (sizeof(kOps) / sizeof(kOps[0]))];
      // Children first (their durations fix the parents'), written parents first.
      const int small = static_cast<int>(rng.Between(3, 5));
      int64_t small_dur[5];
      int64_t small_total = 0;
      for (int j = 0; j < small; ++j) small_total += small_dur[j] = rng.Between(800, 4000);
      const int64_t d_inner = rng.Between(10000, 25000);
      const int64_t d_op = small_total + small * 500 + d_inner + 2000;
      const int64_t d_py = d_op + 2000;
      sep();
      w.Printf(
          "  {\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"%s%d\", \"pid\": %d, "
          "\"tid\": %d, \"ts\": %s, \"dur\": %s, \"args\": {\"Python parent id\": 1, \"Python "
          "id\": %" PRId64 "}}",
          k.module, static_cast<int>(i % 24), pid, tid, Ts(t).text, Ts(d_py).text, ext);
      const int64_t op_ts = t + 1000;
      sep();
      const int64_t op_ext = ext++;
      w.Printf(
          "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, "
          "\"ts\": %s, \"dur\": %s, \"args\": {\"External id\": %" PRId64 ", \"Ev Idx\": %" PRId64
          ", \"Sequence number\": %" PRId64
          ", \"Fwd thread id\": 0, \"Input Dims\": %s, \"Input type\": [\"float\", \"float\"]}}",
          op_name(k.op, 2 * op_count).c_str(), pid, tid, Ts(op_ts).text, Ts(d_op).text, op_ext,
          op_ext, flow, k.dims);
      sep();
      w.Printf("  {\"ph\": \"s\", \"id\": %" PRId64
               ", \"pid\": %d, \"tid\": %d, \"ts\": %s, \"cat\": \"fwdbwd\", \"name\": "
               "\"fwdbwd\"}",
               flow, pid, tid, Ts(op_ts).text);
      forwards.push_back({&k, flow++});
      int64_t at = op_ts + 500;
      for (int j = 0; j < small; ++j) {
        cpu_op(kSmallOps[rng.Next() % (sizeof(kSmallOps) / sizeof(kSmallOps[0]))], tid, at,
               small_dur[j]);
        at += small_dur[j] + 500;
      }
      const int64_t inner_ext = cpu_op(op_name(k.inner, 2 * op_count + 1), tid, at, d_inner);
      launch(k.kernel, tid, at + 2000, inner_ext);
      t += d_py + rng.Between(1000, 3000);
    }
    // Backward on the autograd thread, in reverse.
    int64_t b = t;
    for (auto f = forwards.rbegin(); f != forwards.rend(); ++f) {
      const std::string node = std::string(f->kind->inner + 6) + "Backward0";  // "addmmBackward0"
      const int64_t d_small = rng.Between(800, 3000);
      const int64_t d_mm = rng.Between(8000, 20000);
      const int64_t d_node = d_small + d_mm + 3000;
      const int64_t d_eval = d_node + 2000;
      cpu_op("autograd::engine::evaluate_function: " + node, bwd_tid, b, d_eval);
      cpu_op(node, bwd_tid, b + 1000, d_node);
      sep();
      w.Printf("  {\"ph\": \"f\", \"id\": %" PRId64
               ", \"pid\": %d, \"tid\": %d, \"ts\": %s, \"cat\": \"fwdbwd\", \"name\": "
               "\"fwdbwd\", \"bp\": \"e\"}",
               f->flow, pid, bwd_tid, Ts(b + 1000).text);
      cpu_op("aten::t", bwd_tid, b + 1500, d_small);
      const int64_t mm_ts = b + 2000 + d_small;
      const int64_t mm_ext = cpu_op("aten::mm", bwd_tid, mm_ts, d_mm);
      launch(f->kind->kernel, bwd_tid, mm_ts + 1000, mm_ext);
      b += d_eval + rng.Between(500, 2000);
    }
    t = std::max({t, b, gpu_t}) + 2000;  // synchronize at the end of the step
    sep();
    WriteProfilerStep(w, step, pid, tid, step_start, t, step_ext);
    t += 1000;
  }
  w.Printf(
      ",\n  {\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", "
      "\"tid\": \"\", \"ts\": %s}\n  ],\n  \"traceName\": \"bench.pt.trace.json\",\n"
      "  \"displayTimeUnit\": \"ms\"\n}\n",
      Ts(t).text);
  g.events += 1;
  g.bytes = w.written();
  return g;
}

Generated Generate(const fs::path& out, uint64_t bytes, bool gzip, const GenerateOptions& options) {
  return options.classic ? GenerateClassic(out, bytes, gzip, options)
                         : GenerateRealistic(out, bytes, gzip, options);
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

// ReadTraceFile alone, as Summarize calls it (summarize.cc: the host and device categories of
// the default SummarizeOptions kept), timed like Summarize: the reader's share of a summary,
// apart from the summarizer's.
int Read(const fs::path& p) {
  bool gz = false;
  const uint64_t json_bytes = JsonBytes(p, &gz);
  const devtime::trace::SummarizeOptions defaults;
  std::set<std::string> keep = defaults.host_op_categories;
  keep.insert(defaults.device_categories.begin(), defaults.device_categories.end());
  devtime::trace::TraceReadOptions options;
  options.keep_categories = &keep;
  options.host_categories = &defaults.host_op_categories;
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<devtime::trace::RawTrace> t = devtime::trace::ReadTraceFile(p, options);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;
  if (!t.ok()) {
    std::fprintf(stderr, "read failed: %s\n", std::string(t.status().message()).c_str());
    return 1;
  }
  std::printf("devtime read %s: %.1f MB JSON in %.3f s wall, %.3f s CPU = %.1f MB/s; %" PRIu64
              " events, %zu kept\n",
              gz ? "gzip" : "plain", static_cast<double>(json_bytes) / 1e6, secs, cpu,
              static_cast<double>(json_bytes) / 1e6 / cpu, t->total_events, t->events.size());
  std::printf("RESULT kind=read-%s json_bytes=%" PRIu64
              " seconds=%.6f cpu_seconds=%.6f peak_rss_mb=%.1f\n",
              gz ? "gzip" : "plain", json_bytes, secs, cpu, PeakRssMb());
  return 0;
}

// The simdjson On-Demand baseline (ondemand_baseline.h) timed like Summarize: the CPU time of
// reading the file and walking its events.
int OnDemand(const fs::path& p) {
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  const devtime::trace::bench::OnDemandResult r =
      devtime::trace::bench::OnDemandSummarize(p.string());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;
  if (!r.error.empty()) {
    std::fprintf(stderr, "simdjson on-demand failed: %s\n", r.error.c_str());
    return 1;
  }
  std::printf(
      "simdjson on-demand plain: %.1f MB JSON in %.3f s wall, %.3f s CPU = %.1f MB/s; peak RSS "
      "%.1f MB; %" PRIu64 " events, %" PRIu64 " names\n",
      static_cast<double>(r.json_bytes) / 1e6, secs, cpu,
      static_cast<double>(r.json_bytes) / 1e6 / cpu, PeakRssMb(), r.events, r.names);
  std::printf("RESULT kind=ondemand json_bytes=%" PRIu64
              " seconds=%.6f cpu_seconds=%.6f peak_rss_mb=%.1f\n",
              r.json_bytes, secs, cpu, PeakRssMb());
  return 0;
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
      } else if (flag == "--long-name-bytes") {
        options.long_name_bytes = value;
      } else if (flag == "--shape" && (std::string(argv[a + 1]) == "classic" ||
                                       std::string(argv[a + 1]) == "realistic")) {
        options.classic = std::string(argv[a + 1]) == "classic";
      } else {
        std::fprintf(stderr, "unknown option %s\n", flag.c_str());
        return 2;
      }
    }
    const Generated g = Generate(out, std::strtoull(argv[3], nullptr, 10), gz, options);
    std::printf("generated %s: %.1f MB JSON, %" PRIu64 " events, %" PRIu64
                " steps, %.2f M events per GB\n",
                out.c_str(), static_cast<double>(g.bytes) / 1e6, g.events, g.steps,
                static_cast<double>(g.events) / (static_cast<double>(g.bytes) / 1e9) / 1e6);
    std::printf("GENERATED bytes=%" PRIu64 " events=%" PRIu64 " steps=%" PRIu64
                " events_per_gb=%.0f\n",
                g.bytes, g.events, g.steps,
                static_cast<double>(g.events) / (static_cast<double>(g.bytes) / 1e9));
    return 0;
  }
  if (cmd == "summarize" && argc >= 3) return Summarize(argv[2], false);
  if (cmd == "read" && argc >= 3) return Read(argv[2]);
  if (cmd == "ondemand" && argc >= 3) return OnDemand(argv[2]);
  if (cmd == "smoke") return Smoke();
  std::fprintf(
      stderr,
      "usage: trace_bench generate OUT[.gz] BYTES [--steps N] [--names N] [--shape "
      "realistic|classic] [--long-name-bytes N] | summarize FILE | read FILE | ondemand FILE | "
      "smoke\n");
  return 2;
}
