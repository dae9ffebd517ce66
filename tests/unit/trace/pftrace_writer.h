// Writes Perfetto TracePacket records by hand for the .pftrace tests, following
// tests/fixtures/trace/mini_perfetto.proto (field numbers from perfetto-neuron-monitor.md A2).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace devtime::trace::testing {

// One protobuf message being built.
class Proto {
 public:
  Proto& Varint(uint32_t field, uint64_t v) {
    Raw((uint64_t{field} << 3) | 0);
    Raw(v);
    return *this;
  }
  Proto& Bytes(uint32_t field, std::string_view s) {
    Raw((uint64_t{field} << 3) | 2);
    Raw(s.size());
    bytes_.append(s);
    return *this;
  }
  Proto& Msg(uint32_t field, const Proto& m) { return Bytes(field, m.bytes_); }
  // Appends `m`'s fields to this message's.
  Proto& Append(const Proto& m) {
    bytes_.append(m.bytes_);
    return *this;
  }
  Proto& Fixed32(uint32_t field, uint32_t v) {
    Raw((uint64_t{field} << 3) | 5);
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  void Raw(uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<char>(v));
  }
  std::string bytes_;
};

// A `Trace.packet` record (0A len packet): files are concatenations of these.
inline std::string Record(const Proto& packet) { return Proto().Msg(1, packet).bytes(); }

// DebugAnnotation helpers.
inline Proto IntArg(std::string_view name, int64_t v) {
  return Proto().Bytes(10, name).Varint(4, static_cast<uint64_t>(v));
}
inline Proto StringArg(std::string_view name, std::string_view v) {
  return Proto().Bytes(10, name).Bytes(6, v);
}

// zlib (not raw deflate) of `in`, as compressed_packets holds.
inline std::string Zlib(const std::string& in) {
  uLongf n = compressBound(static_cast<uLong>(in.size()));
  std::string out(n, '\0');
  compress(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(in.data()),
           static_cast<uLong>(in.size()));
  out.resize(n);
  return out;
}

}  // namespace devtime::trace::testing
