// devtime::trace internals — the 64-byte block loop of JsonScanner::SkipNested (json_scanner.h),
// written once for two instruction sets: SSE2 (json_scanner.cc, every x86-64 CPU) and AVX2 +
// PCLMUL (json_scanner_avx2.cc, built with -mavx2 -mpclmul), picked at run time by
// ScanBlocksFor() from what the CPU supports.
//
// Each translation unit instantiates ScanBlocks with its own `Ops` type in an anonymous
// namespace, so every instantiation has internal linkage and no AVX2 code can stand in for
// another unit's inline function. This header therefore includes nothing that defines
// functions, and ScanBlocks calls only its Ops and compiler builtins.
#pragma once

#include <cstdint>

namespace devtime::trace::stream {

// Where a block scan stopped and why.
struct BlockScan {
  enum Stop {
    kClosed,   // the container closed: p is just past its closing bracket
    kTooDeep,  // an opening bracket went past the nesting limit (at p)
    kEscape,   // a block at p holds a backslash: the caller goes on byte by byte
    kTail,     // fewer than 64 bytes left before the window's end
  };
  Stop stop = kTail;
  const char* p = nullptr;
  int level = 0;           // open containers, the one SkipNested started in included
  bool in_string = false;  // p is inside a string
};

// Skips whole 64-byte blocks from `p` (before `e`) inside a container at nesting `depth` with
// `level` containers open, tracking strings (quote masks, their prefix XOR) and bracket depth.
// Ops::Masks(p, &quote, &slash, &open, &close) fills one bit per byte of the block at p for '"',
// '\\', '{' or '[', and '}' or ']'; Ops::PrefixXor(x) sets each bit to the XOR of it and all
// lower ones (the bits inside strings).
template <typename Ops>
inline BlockScan ScanBlocks(const char* p, const char* e, int depth, int level, int max_depth) {
  uint64_t in_string = 0;  // all ones while the previous block ended inside a string
  while (e - p >= 64) {
    uint64_t quote = 0, slash = 0, open = 0, close = 0;
    Ops::Masks(p, &quote, &slash, &open, &close);
    if (slash != 0) return {BlockScan::kEscape, p, level, in_string != 0};
    const uint64_t inside = Ops::PrefixXor(quote) ^ in_string;
    open &= ~inside;
    close &= ~inside;
    uint64_t brackets = open | close;
    while (brackets != 0) {
      const int bit = __builtin_ctzll(brackets);
      brackets &= brackets - 1;
      if ((open >> bit) & 1) {
        if (depth + ++level > max_depth) return {BlockScan::kTooDeep, p + bit, level, false};
      } else if (--level == 0) {
        return {BlockScan::kClosed, p + bit + 1, level, false};
      }
    }
    in_string = (inside >> 63) ? ~uint64_t{0} : 0;
    p += 64;
  }
  return {BlockScan::kTail, p, level, in_string != 0};
}

using ScanBlocksFn = BlockScan (*)(const char* p, const char* e, int depth, int level,
                                   int max_depth);
BlockScan ScanBlocksSse2(const char* p, const char* e, int depth, int level, int max_depth);
// Only on a CPU with AVX2 and PCLMUL (ScanBlocksFor checks).
BlockScan ScanBlocksAvx2(const char* p, const char* e, int depth, int level, int max_depth);

// The fastest of the two this CPU runs (decided once, from __builtin_cpu_supports); the SSE2
// one where the AVX2 unit is not built (not x86-64). DEVTIME_TRACE_NO_AVX2=1 in the environment
// forces SSE2 (to compare the two).
ScanBlocksFn ScanBlocksFor();

}  // namespace devtime::trace::stream
