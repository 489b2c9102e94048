// lib/cpu/src/gemm/gemm_avx2.cpp: the float32 GEMMs (gemm_kernel.hpp) for AVX2 + FMA, 8 lanes.
// Compiled through a target pragma (also in the portable build) and used only where the
// CPU has AVX2 and FMA (gemm.cpp). Standard headers come before the pragma so none of their
// inline functions is compiled for AVX2.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "attn/core/attention.hpp"
#include "flash/flash_args.hpp"
#include "gemm_variants.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "flash/flash_kernel.hpp"
#include "flash/flash_avx2_traits.hpp"
#include "gemm_kernel.hpp"
#include "gemm_avx2_traits.hpp"

namespace attn::gemm {
namespace {

// Register tiles (16 ymm). Strided: 4 rows x 3 vectors = 12 accumulators + 3 B vectors + 1
// broadcast.
void strided_run(const StridedArgs& g) { gemm_run<Avx2, 4, 3>(g); }

// Strips: 6 rows x 2 vectors (half a 32-column strip; the strip in two passes) = 12
// accumulators + 2 strip vectors + 1 broadcast = 15 registers. The whole strip (4 vectors)
// would leave room for 2 rows only: 8 accumulators, just the 4-cycle latency x 2 ports an FMA
// needs to keep both ports busy, and 6 loads per 8 FMAs; 3 x 4 needs 17 registers. 6 x 2
// loads 2 strip vectors + 6 broadcasts per 12 FMAs, so the two FMA ports, not the two load
// ports, set the pace.
void strips_call(float* out, const float* x, const float* w, const float* b, int64_t n_in, int64_t n_out, int64_t r0,
                 int64_t r1, int64_t c0, int64_t c1) {
    strips_run<Avx2, 6, 2>(out, x, w, b, n_in, n_out, r0, r1, c0, c1);
}

// bf16 pairs widened (WidenedPairs): 4 rows x 2 vectors = 8 accumulators + 2 widened strip
// pairs (4 registers) + 1 widened x pair (2) = 14 of the 16 ymm registers.
void strips_widened_call(float* out, const uint32_t* xp, const uint32_t* w, const float* b, int64_t kp, int64_t n_out,
                         int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    strips_run<WidenedPairs<Avx2>, 4, 2>(out, xp, w, b, kp, n_out, r0, r1, c0, c1);
}

}  // namespace

StridedFn detail::strided_avx2() { return &strided_run; }
StripsFn detail::strips_avx2() { return &strips_call; }
StripsPairsFn detail::strips_widened_avx2() { return &strips_widened_call; }

}  // namespace attn::gemm
#pragma GCC pop_options

#else
namespace attn::gemm {
StridedFn detail::strided_avx2() { return nullptr; }
StripsFn detail::strips_avx2() { return nullptr; }
StripsPairsFn detail::strips_widened_avx2() { return nullptr; }
}  // namespace attn::gemm
#endif
