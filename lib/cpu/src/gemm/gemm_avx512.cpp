// lib/cpu/src/gemm/gemm_avx512.cpp: the float32 GEMMs (gemm_kernel.hpp) for AVX-512, 16 lanes.
// Compiled for AVX-512 through a target pragma (also in the portable build) and used only
// where the CPU has it (gemm.cpp). Standard headers come before the pragma so none of
// their inline functions is compiled for AVX-512.
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
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
// GCC 12 reports its own _mm512_undefined_ps() inside the intrinsics headers as
// "may be used uninitialized"; the values are fully written by the intrinsic.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "flash/flash_kernel.hpp"
#include "flash/flash_avx512_traits.hpp"
#include "gemm_kernel.hpp"
#include "gemm_avx512_traits.hpp"

namespace attn::gemm {
namespace {

// Register tiles (32 zmm). Strided: x . W^T, dx = dout . W, attention's scores: 6 rows x 4
// vectors = 24 accumulators + 4 B vectors + 1 broadcast; a weight gradient G^T X (A read
// down a column, a piece of 32 output rows) and attention's dV, dK: 8 x 3, 24 FMAs per 3
// loads + 8 broadcasts; one vector wide (attention's P V and dQ at d_k = 16): 8 x 1. An FMA
// takes 4 cycles and two issue per cycle, so a tile needs at least 8 independent
// accumulators: the 4 x 1 and 6 x 1 tiles these replaced ran at half speed or less (1.2 to
// 1.3 times slower in a hot-cache test here, 2.4 times in a training step).
void strided_run(const StridedArgs& g) {
    if (g.sai == 1 && g.sak != 1) gemm_run<Avx512, 8, 3>(g);
    else if (g.Nc <= Avx512::W) gemm_run<Avx512, 8, 1>(g);
    else gemm_run<Avx512, 6, 4>(g);
}

// Strips: 12 rows x 2 vectors (the whole 32-column strip) = 24 accumulators + 2 strip
// vectors + 1 broadcast.
void strips_call(float* out, const float* x, const float* w, const float* b, int64_t n_in, int64_t n_out, int64_t r0,
                 int64_t r1, int64_t c0, int64_t c1) {
    strips_run<Avx512, 12, 2>(out, x, w, b, n_in, n_out, r0, r1, c0, c1);
}

}  // namespace

StridedFn detail::strided_avx512() { return &strided_run; }
StripsFn detail::strips_avx512() { return &strips_call; }

}  // namespace attn::gemm
#pragma GCC pop_options

#else
namespace attn::gemm {
StridedFn detail::strided_avx512() { return nullptr; }
StripsFn detail::strips_avx512() { return nullptr; }
}  // namespace attn::gemm
#endif
