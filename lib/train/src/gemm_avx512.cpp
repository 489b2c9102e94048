// lib/train/src/gemm_avx512.cpp: the small-matrix GEMM (gemm_kernel.hpp) for AVX-512, 16
// lanes. Compiled for AVX-512 through a target pragma (also in the portable build) and
// used only where the CPU has it (gemm_dispatch.cpp). Standard headers come before the
// pragma so none of their inline functions is compiled for AVX-512.
#include <cstdint>

#include "gemm.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx2,fma")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "gemm_kernel.hpp"

namespace attn::train::detail {
namespace {

struct Avx512 {
    using V = __m512;
    static constexpr int W = 16;
    static V zero() { return _mm512_setzero_ps(); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V x) { _mm512_storeu_ps(p, x); }
    using M = __mmask16;
    static M mask(int n) { return static_cast<M>((1u << n) - 1u); }  // the first n lanes, n in [1, 16]
    static V load_m(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
    static void store_m(float* p, V x, M m) { _mm512_mask_storeu_ps(p, m, x); }
    static void prefetch(const float* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
    static V set1(float x) { return _mm512_set1_ps(x); }
    static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
};

// Register tiles (32 zmm): x . W^T, dx = dout . W, attention's scores: 6 rows x 4 vectors =
// 24 accumulators + 4 B vectors + 1 broadcast; a weight gradient G^T X (A read down a
// column, a piece of 32 output rows) and attention's dV, dK: 8 x 3, 24 FMAs per 3 loads + 8
// broadcasts; one vector wide (attention's P V and dQ at d_k = 16): 8 x 1. An FMA takes 4
// cycles and two issue per cycle, so a tile needs at least 8 independent accumulators:
// the 4 x 1 and 6 x 1 tiles these replaced ran at half speed or less (1.2 to 1.3 times
// slower in a hot-cache test here, 2.4 times in a training step).
void run(const GemmArgs& g) {
    if (g.sai == 1 && g.sak != 1) gemm_run<Avx512, 8, 3>(g);
    else if (g.Nc <= Avx512::W) gemm_run<Avx512, 8, 1>(g);
    else gemm_run<Avx512, 6, 4>(g);
}

}  // namespace

GemmFn gemm_avx512() { return &run; }

}  // namespace attn::train::detail
#pragma GCC pop_options

#else
namespace attn::train::detail {
GemmFn gemm_avx512() { return nullptr; }
}  // namespace attn::train::detail
#endif
