// The AVX2 + PCLMUL instantiation of ScanBlocks (json_blocks.h); this file alone is built with
// -mavx2 -mpclmul (CMakeLists.txt) and runs only where ScanBlocksFor() found both.
#include <immintrin.h>

#include "agents/trace/io/json_blocks.h"

namespace devtime::trace::stream {
namespace {

struct Avx2 {
  static uint64_t Eq(__m256i lo, __m256i hi, char c) {
    const __m256i x = _mm256_set1_epi8(c);
    const auto l = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, x)));
    const auto h = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, x)));
    return uint64_t{l} | (uint64_t{h} << 32);
  }
  static void Masks(const char* p, uint64_t* quote, uint64_t* slash, uint64_t* open,
                    uint64_t* close) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    *quote = Eq(lo, hi, '"');
    *slash = Eq(lo, hi, '\\');
    *open = Eq(lo, hi, '{') | Eq(lo, hi, '[');
    *close = Eq(lo, hi, '}') | Eq(lo, hi, ']');
  }
  // Carry-less multiplication by all ones is the prefix XOR, in one instruction.
  static uint64_t PrefixXor(uint64_t x) {
    const __m128i r = _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<int64_t>(x)),
                                           _mm_set1_epi8(static_cast<char>(0xFF)), 0);
    return static_cast<uint64_t>(_mm_cvtsi128_si64(r));
  }
};

}  // namespace

BlockScan ScanBlocksAvx2(const char* p, const char* e, int depth, int level, int max_depth) {
  return ScanBlocks<Avx2>(p, e, depth, level, max_depth);
}

}  // namespace devtime::trace::stream
