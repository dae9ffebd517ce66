#include "agents/trace/perfetto/pftrace_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "agents/trace/io/byte_source.h"
#include "agents/trace/io/quote.h"

namespace devtime::trace {
namespace {

constexpr size_t kMaxRecordBytes = size_t{256} << 20;   // one packet (Perfetto: "up to 64 MB")
constexpr size_t kMaxInflatedBytes = size_t{64} << 20;  // one compressed_packets payload
constexpr int kMaxNesting = 2;  // compressed_packets inside compressed_packets: not written

// A protobuf wire-format cursor over [p, e). Every read returns false when the bytes end or
// are not valid wire format; the caller then drops the message.
struct Wire {
  const uint8_t* p;
  const uint8_t* e;
  explicit Wire(std::string_view s)
      : p(reinterpret_cast<const uint8_t*>(s.data())), e(p + s.size()) {}
  bool Done() const { return p >= e; }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= e) return false;
      const uint8_t b = *p++;
      *v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;  // more than 10 bytes
  }
  bool Tag(uint32_t* field, uint32_t* wire_type) {
    uint64_t t = 0;
    if (!Varint(&t) || (t >> 3) == 0 || (t >> 3) > 0x1fffffff) return false;
    *field = static_cast<uint32_t>(t >> 3);
    *wire_type = static_cast<uint32_t>(t & 7);
    return true;
  }
  bool Len(std::string_view* out) {
    uint64_t n = 0;
    if (!Varint(&n) || n > static_cast<uint64_t>(e - p)) return false;
    *out = std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
    p += n;
    return true;
  }
  // Skips `n` bytes (a fixed64 or fixed32 value).
  bool Fixed(std::ptrdiff_t n) {
    if (e - p < n) return false;
    p += n;
    return true;
  }
  // Skips a value of `wire_type`; groups (3, 4) and unknown types are not valid here.
  bool Skip(uint32_t wire_type) {
    uint64_t v = 0;
    std::string_view s;
    switch (wire_type) {
      case 0:
        return Varint(&v);
      case 1:
        return Fixed(8);
      case 2:
        return Len(&s);
      case 5:
        return Fixed(4);
      default:
        return false;
    }
  }
};

// The debug annotations devtime reads off a slice.
struct SliceArgs {
  std::string source;   // trace_event_source
  std::string process;  // process_id
  std::string core;     // lnc_idx, else nc_idx
  int64_t exec_id = -1;
  int64_t sequence_id = -1;
  std::string model_name;  // the NEFF path
  std::string model_id;
  std::string device_profile;  // device_profile_model_<id>.pftrace
};

struct Sequence {
  bool valid = false;
  std::unordered_map<uint64_t, std::string> names, annotation_names, annotation_strings;
  std::optional<uint64_t> default_track;
};

struct OpenSlice {
  int64_t ts = 0;
  std::string name;
  SliceArgs args;
};

class Decoder {
 public:
  Decoder(const std::string& origin, NeuronSystemTrace* out) : origin_(origin), out_(out) {}

  // Decodes `0A len packet` records from `in`; a record cut by the end of the input is left.
  absl::Status Records(stream::Input& in, int nesting) {
    const char* p = in.begin();
    while (true) {
      if (p == in.end()) {
        if (!in.More(p)) return absl::OkStatus();
        p = in.begin();
        continue;
      }
      Wire w(std::string_view(p, static_cast<size_t>(in.end() - p)));
      uint32_t field = 0, wire_type = 0;
      uint64_t len = 0;
      const bool header = w.Tag(&field, &wire_type) && (wire_type != 2 || w.Varint(&len));
      const size_t header_bytes = static_cast<size_t>(reinterpret_cast<const char*>(w.p) - p);
      if (header && wire_type == 2 && len > kMaxRecordBytes) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: a trace packet of %d bytes is larger than the limit of %d MiB",
                            origin_, len, kMaxRecordBytes >> 20));
      }
      const bool whole = header && (wire_type != 2 || len <= static_cast<uint64_t>(w.e - w.p));
      if (!whole) {
        if (in.More(p)) {
          p = in.begin();
          continue;
        }
        if (!header && w.p < w.e && static_cast<size_t>(in.end() - p) >= 20) {
          return absl::InvalidArgumentError(origin_ + ": not a Perfetto trace (bad record header)");
        }
        ++truncated_;
        return absl::OkStatus();
      }
      if (field == 1 && wire_type == 2) {
        const std::string_view packet(p + header_bytes, static_cast<size_t>(len));
        if (!packet.empty()) Packet(packet, nesting);
        p += header_bytes + len;
      } else {
        // Non-packet top-level fields are skipped (Perfetto's tokenizer does the same).
        Wire skip(std::string_view(p, static_cast<size_t>(in.end() - p)));
        uint32_t f = 0, t = 0;
        if (!skip.Tag(&f, &t) || !skip.Skip(t)) {
          return absl::InvalidArgumentError(origin_ + ": not a Perfetto trace (bad record)");
        }
        p = reinterpret_cast<const char*>(skip.p);
      }
      in.Consumed(p);
    }
  }

  void Finish() {
    for (auto& [track, stack] : open_) out_->unpaired += stack.size();
    FillModelsFromRuntime();
    std::vector<ExecutionRow> rows;
    rows.reserve(executions_.size());
    for (size_t i = 0; i < executions_.size(); ++i) {
      const auto& [x, key] = executions_[i];
      rows.push_back({x.exec_id >= 0 ? key : key + "#" + std::to_string(i), x});
    }
    MergeExecutionRows(rows, out_);
    out_->device_on_host_clock = true;
    if (skipped_ > 0) {
      out_->runtime_warnings.push_back(absl::StrFormat(
          "%d Perfetto packets skipped: they need interned data their sequence lost (no "
          "packet cleared its incremental state first)",
          skipped_));
    }
    if (corrupt_ > 0) {
      out_->runtime_warnings.push_back(
          absl::StrFormat("%d Perfetto packets are not valid protobuf; skipped", corrupt_));
    }
    if (truncated_ > 0) {
      out_->runtime_warnings.push_back(
          "the last Perfetto packet is cut short (the writer may still be running); not read");
    }
  }

 private:
  void Packet(std::string_view bytes, int nesting) {
    Wire w(bytes);
    uint64_t ts = 0, seq = 0, flags = 0, cleared = 0, dropped = 0;
    std::string_view event, interned, defaults;
    std::vector<std::string_view> compressed;
    while (!w.Done()) {
      uint32_t field = 0, wt = 0;
      if (!w.Tag(&field, &wt)) return Corrupt();
      bool ok = true;
      if (wt == 0 && (field == 8 || field == 10 || field == 13 || field == 41 || field == 42)) {
        uint64_t v = 0;
        ok = w.Varint(&v);
        if (field == 8) ts = v;
        if (field == 10) seq = v;
        if (field == 13) flags = v;
        if (field == 41) cleared = v;
        if (field == 42) dropped = v;
      } else if (wt == 2 && field == 11) {
        ok = w.Len(&event);
      } else if (wt == 2 && field == 12) {
        ok = w.Len(&interned);
      } else if (wt == 2 && field == 59) {
        ok = w.Len(&defaults);
      } else if (wt == 2 && field == 50) {
        std::string_view c;
        ok = w.Len(&c);
        compressed.push_back(c);
      } else {
        ok = w.Skip(wt);
      }
      if (!ok) return Corrupt();
    }
    if (dropped != 0) ++out_->events_dropped;
    for (std::string_view c : compressed) Compressed(c, nesting);
    Sequence& s = sequences_[static_cast<uint32_t>(seq)];
    if (cleared != 0 || (flags & 1) != 0) {
      s = Sequence();
      s.valid = true;
    }
    if ((flags & 2) != 0 && !s.valid) {
      ++skipped_;
      return;
    }
    // Without a sequence id there is no interning scope (trace processor ignores both).
    if (seq != 0 && !interned.empty() && !Interned(interned, &s)) return Corrupt();
    if (seq != 0 && !defaults.empty() && !Defaults(defaults, &s)) return Corrupt();
    // Times past int64 ns (year 2262) are not a clock: consumers take end - start of slices,
    // which fits int64 only while both are non-negative.
    if (ts > static_cast<uint64_t>(INT64_MAX)) return Corrupt();
    if (!event.empty() && !TrackEvent(event, static_cast<int64_t>(ts), s)) return Corrupt();
  }

  void Corrupt() { ++corrupt_; }

  void Compressed(std::string_view c, int nesting) {
    if (nesting >= kMaxNesting) return Corrupt();
    z_stream zs{};
    if (inflateInit2(&zs, 32 + MAX_WBITS) != Z_OK) return Corrupt();
    std::string out;
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(c.data()));
    zs.avail_in = static_cast<uInt>(c.size());
    int rc = Z_OK;
    while (rc == Z_OK && out.size() < kMaxInflatedBytes) {
      const size_t at = out.size();
      out.resize(at + (size_t{1} << 16));
      zs.next_out = reinterpret_cast<Bytef*>(out.data() + at);
      zs.avail_out = 1u << 16;
      rc = inflate(&zs, Z_NO_FLUSH);
      out.resize(out.size() - zs.avail_out);
      if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;
    }
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) return Corrupt();
    stream::MemoryInput in(out.data(), out.size());
    (void)Records(in, nesting + 1);
  }

  static bool Entries(std::string_view bytes, std::unordered_map<uint64_t, std::string>* into) {
    Wire w(bytes);
    uint64_t iid = 0;
    std::string_view name;
    bool has_name = false;
    while (!w.Done()) {
      uint32_t f = 0, t = 0;
      if (!w.Tag(&f, &t)) return false;
      if (f == 1 && t == 0) {
        if (!w.Varint(&iid)) return false;
      } else if (f == 2 && t == 2) {
        if (!w.Len(&name)) return false;
        has_name = true;
      } else if (!w.Skip(t)) {
        return false;
      }
    }
    if (iid != 0 && has_name) (*into)[iid] = std::string(name);
    return true;
  }

  bool Interned(std::string_view bytes, Sequence* s) {
    Wire w(bytes);
    while (!w.Done()) {
      uint32_t f = 0, t = 0;
      if (!w.Tag(&f, &t)) return false;
      std::string_view entry;
      if (t == 2 && (f == 2 || f == 3 || f == 29)) {
        if (!w.Len(&entry)) return false;
        auto* table = f == 2 ? &s->names : f == 3 ? &s->annotation_names : &s->annotation_strings;
        if (!Entries(entry, table)) return false;
      } else if (!w.Skip(t)) {
        return false;
      }
    }
    return true;
  }

  // TracePacketDefaults.track_event_defaults (11) → TrackEventDefaults.track_uuid (11).
  static bool Defaults(std::string_view bytes, Sequence* s) {
    Wire w(bytes);
    while (!w.Done()) {
      uint32_t f = 0, t = 0;
      if (!w.Tag(&f, &t)) return false;
      std::string_view ted;
      if (f == 11 && t == 2) {
        if (!w.Len(&ted)) return false;
        Wire d(ted);
        while (!d.Done()) {
          uint32_t f2 = 0, t2 = 0;
          if (!d.Tag(&f2, &t2)) return false;
          uint64_t v = 0;
          if (f2 == 11 && t2 == 0) {
            if (!d.Varint(&v)) return false;
            s->default_track = v;
          } else if (!d.Skip(t2)) {
            return false;
          }
        }
      } else if (!w.Skip(t)) {
        return false;
      }
    }
    return true;
  }

  bool Annotation(std::string_view bytes, const Sequence& s, SliceArgs* args) {
    Wire w(bytes);
    std::string name;
    std::string text;
    std::optional<int64_t> number;
    while (!w.Done()) {
      uint32_t f = 0, t = 0;
      if (!w.Tag(&f, &t)) return false;
      uint64_t v = 0;
      std::string_view sv;
      if (t == 0 && (f == 1 || f == 3 || f == 4 || f == 17)) {
        if (!w.Varint(&v)) return false;
        if (f == 1) {
          auto it = s.annotation_names.find(v);
          if (it != s.annotation_names.end()) name = it->second;
        } else if (f == 17) {
          auto it = s.annotation_strings.find(v);
          if (it != s.annotation_strings.end()) text = it->second;
        } else if (f == 4 || v <= static_cast<uint64_t>(INT64_MAX)) {
          number = static_cast<int64_t>(v);  // int64 as two's complement; huge uint: absent
        }
      } else if (t == 2 && (f == 10 || f == 6)) {
        if (!w.Len(&sv)) return false;
        (f == 10 ? name : text) = std::string(sv);
      } else if (!w.Skip(t)) {
        return false;
      }
    }
    const std::string as_text = number ? std::to_string(*number) : text;
    if (name == "trace_event_source") args->source = text;
    if (name == "process_id") args->process = as_text;
    if (name == "lnc_idx" || (name == "nc_idx" && args->core.empty())) args->core = as_text;
    if (name == "exec_id") args->exec_id = number.value_or(-1);
    if (name == "nrt_sequence_id") args->sequence_id = number.value_or(-1);
    if (name == "model_name") args->model_name = text;
    if (name == "model_id") args->model_id = as_text;
    if (name == "device_profile") args->device_profile = text;
    return true;
  }

  bool TrackEvent(std::string_view bytes, int64_t ts, const Sequence& s) {
    Wire w(bytes);
    uint64_t type = 0;
    std::optional<uint64_t> track;
    std::string name;
    std::vector<std::string_view> annotations;
    while (!w.Done()) {
      uint32_t f = 0, t = 0;
      if (!w.Tag(&f, &t)) return false;
      uint64_t v = 0;
      std::string_view sv;
      if (t == 0 && (f == 9 || f == 10 || f == 11)) {
        if (!w.Varint(&v)) return false;
        if (f == 9) type = v;
        if (f == 11) track = v;
        if (f == 10) {
          auto it = s.names.find(v);
          name = it == s.names.end() ? std::string() : it->second;
        }
      } else if (t == 2 && (f == 23 || f == 4)) {
        if (!w.Len(&sv)) return false;
        if (f == 23) name = std::string(sv);
        if (f == 4) annotations.push_back(sv);
      } else if (!w.Skip(t)) {
        return false;
      }
    }
    ++out_->event_count;
    const uint64_t on = track ? *track : s.default_track.value_or(0);
    if (type == 1) {  // TYPE_SLICE_BEGIN
      OpenSlice slice{ts, std::move(name), {}};
      for (std::string_view a : annotations) {
        if (!Annotation(a, s, &slice.args)) return false;
      }
      open_[on].push_back(std::move(slice));
    } else if (type == 2) {  // TYPE_SLICE_END
      std::vector<OpenSlice>& stack = open_[on];
      if (stack.empty()) {
        ++out_->unpaired;
        return true;
      }
      OpenSlice begin = std::move(stack.back());
      stack.pop_back();
      Slice(begin, ts, on);
    }
    return true;
  }

  void Slice(const OpenSlice& b, int64_t end, uint64_t track) {
    if (end < b.ts) {
      if (!out_->invalid_reason) {
        out_->invalid_reason = absl::StrFormat(
            "Neuron system trace timestamps go backwards: %s on Perfetto track %d ends before it "
            "starts",
            Quote(b.name), track);
      }
      return;
    }
    if (IsExecutionName(b.name)) {
      NeuronExecution x;
      x.start_ns = b.ts;
      x.end_ns = end;
      x.queue = b.args.process.empty() && b.args.core.empty() ? "track " + std::to_string(track)
                                                              : b.args.process + "/" + b.args.core;
      x.exec_id = b.args.exec_id;
      x.sequence_id = b.args.sequence_id;
      SetModelIdentity(b.name, b.args.model_name, b.args.model_id, b.args.device_profile, &x);
      executions_.push_back({x, x.queue + "/" + std::to_string(x.exec_id)});
    } else if (b.args.source == "framework") {
      out_->framework.push_back({b.ts, end});
    } else if (!IsNeuronHardwareEvent(b.name.substr(0, b.name.find(' ')))) {
      out_->runtime.push_back({b.ts, end});
      if (!b.args.model_name.empty() && !(b.args.process.empty() && b.args.core.empty())) {
        runtime_models_.push_back({b.args.process + "/" + b.args.core, b.ts, b.args});
      }
    }
  }

  // The runtime slice that names the model an execution ran (`model_name` on nrt_execute and
  // the like, A4.4), for executions whose own slice does not say: on the execution's queue,
  // the one with its exec_id, else the latest that started at or before it.
  struct RuntimeModel {
    std::string queue;
    int64_t ts = 0;
    SliceArgs args;
  };
  void FillModelsFromRuntime() {
    if (runtime_models_.empty()) return;
    std::stable_sort(runtime_models_.begin(), runtime_models_.end(),
                     [](const RuntimeModel& a, const RuntimeModel& b) {
                       return a.queue != b.queue ? a.queue < b.queue : a.ts < b.ts;
                     });
    for (auto& [x, key] : executions_) {
      if (!x.neff.empty()) continue;
      auto lo =
          std::lower_bound(runtime_models_.begin(), runtime_models_.end(), x.queue,
                           [](const RuntimeModel& m, const std::string& q) { return m.queue < q; });
      const RuntimeModel* found = nullptr;
      for (auto it = lo; it != runtime_models_.end() && it->queue == x.queue; ++it) {
        if (x.exec_id >= 0 && it->args.exec_id == x.exec_id) {
          found = &*it;
          break;
        }
        if (it->ts <= x.start_ns && (x.exec_id < 0 || it->args.exec_id < 0)) found = &*it;
      }
      if (!found) continue;
      NeuronExecution named;
      SetModelIdentity("", found->args.model_name, found->args.model_id, found->args.device_profile,
                       &named);
      x.neff = named.neff;
      if (x.model_id.empty()) x.model_id = named.model_id;
    }
  }

  const std::string& origin_;
  NeuronSystemTrace* out_;
  std::unordered_map<uint32_t, Sequence> sequences_;
  std::unordered_map<uint64_t, std::vector<OpenSlice>> open_;
  std::vector<std::pair<NeuronExecution, std::string>> executions_;
  std::vector<RuntimeModel> runtime_models_;  // runtime slices with a model_name
  uint64_t skipped_ = 0;
  uint64_t corrupt_ = 0;
  uint64_t truncated_ = 0;
};

absl::StatusOr<NeuronSystemTrace> Decode(const unsigned char* bytes, size_t size,
                                         const std::string& origin) {
  NeuronSystemTrace out;
  out.form = "perfetto";
  if (size == 0) return absl::InvalidArgumentError(origin + ": empty file (0 bytes)");
  Decoder decoder(origin, &out);
  try {
    absl::Status st;
    if (stream::IsGzip(bytes, size)) {
      stream::GzipInput in(bytes, size);
      st = decoder.Records(in, 0);
    } else {
      stream::MappedInput in(reinterpret_cast<const char*>(bytes), size);
      st = decoder.Records(in, 0);
    }
    if (!st.ok()) return st;
  } catch (const stream::ParseError& e) {
    return absl::InvalidArgumentError(origin + ": " + e.message);
  }
  decoder.Finish();
  return out;
}

}  // namespace

bool IsPerfettoSystemTraceName(const std::string& name) {
  if (!(name.ends_with(".pftrace") || name.ends_with(".pftrace.gz"))) return false;
  return !name.starts_with("device_profile") && !name.starts_with("ntff.");
}

absl::StatusOr<NeuronSystemTrace> ParsePerfettoSystemTrace(std::string_view bytes,
                                                           const std::string& origin) {
  return Decode(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), origin);
}

absl::StatusOr<NeuronSystemTrace> ReadPerfettoSystemTrace(const std::filesystem::path& path) {
  absl::StatusOr<std::unique_ptr<stream::MappedFile>> file = stream::MappedFile::Open(path);
  if (!file.ok()) return file.status();
  return Decode((*file)->bytes(), (*file)->size(), path.string());
}

}  // namespace devtime::trace
