// lib/cpu/src/flash/flash_bf16.cpp: the bf16 flash kernel for AVX-512 BF16 (vdpbf16ps).
// Q (scaled), K, V and the softmax weights P are rounded to bfloat16; every
// product pair is accumulated in float32, and the online softmax (max, exp2,
// sums, rescaling) stays float32. Same tiling and masks as the float32 kernel
// (flash_kernel.hpp); only the two GEMMs differ: each vdpbf16ps lane adds two
// products, so pass 2 loops over Dk/2 pairs of dims and pass 4 over BK/2 pairs
// of keys. K and V are converted once per call by flash.cpp (V into key pairs).
// Chosen at run time only where the CPU has avx512_bf16.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/rng.hpp"
#include "flash_args.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 12
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx512bf16,avx2,fma")
// GCC 12 reports its own _mm512_undefined_ps() inside the intrinsics headers as
// "may be used uninitialized"; the values are fully written by the intrinsic.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "flash_kernel.hpp"
#include "flash_avx512_traits.hpp"

namespace attn::flash_detail {
namespace {

struct Avx512Bf16 : Avx512 {
    using VP = __m512bh;  // 32 bf16 = 16 pairs
    static VP loadp(const uint32_t* p) { return (VP)_mm512_loadu_si512(p); }
    static VP set1p(uint32_t x) { return (VP)_mm512_set1_epi32(static_cast<int>(x)); }
    static V dp(V acc, VP a, VP b) { return _mm512_dpbf16_ps(acc, a, b); }
    // dst lane i = bf16(even[i]) | bf16(odd[i]) << 16 (round to nearest even)
    static void pack_pairs(uint32_t* dst, V even, V odd) {
        const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(odd, even);  // [even 0..15 | odd 0..15]
        const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                             6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(idx, both));
    }
};

// Same block sizes as the float32 AVX-512 kernel (see flash_avx512.cpp): the
// register tile is identical (24 float32 accumulators); bf16 operands halve the
// bytes of the K block and of P, so the working set only shrinks. Measured (T=2048,
// 1 thread, GFLOP/s per CPU-second): BK 64: 148, BK 128: 151 (float32 kernel: 96).
// Long key sequences: 256-query blocks, as for float32 (flash_avx512.cpp).
using KBf16 = FlashF32<Avx512Bf16, 4, 4, 6, 6, 128, true>;
using KBf16L = FlashF32<Avx512Bf16, 16, 4, 6, 6, 128, true>;
const Kernel kBf16Long{"avx512-bf16-long", KBf16L::BQ, &KBf16L::workspace_floats, &Ftz<&KBf16L::run_item>::call};
const Kernel kBf16{"avx512-bf16", KBf16::BQ, &KBf16::workspace_floats, &Ftz<&KBf16::run_item>::call, &kBf16Long};

}  // namespace

const Kernel* avx512_bf16_kernel() { return &kBf16; }

}  // namespace attn::flash_detail
#pragma GCC pop_options

#else
namespace attn::flash_detail {
const Kernel* avx512_bf16_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
