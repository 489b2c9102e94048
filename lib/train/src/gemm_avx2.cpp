// lib/train/src/gemm_avx2.cpp: the small-matrix GEMM (gemm_kernel.hpp) for AVX2 + FMA, 8
// lanes. Compiled through a target pragma, used only where the CPU has AVX2 and FMA
// (gemm_dispatch.cpp).
#include <cstdint>

#include "gemm.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "gemm_kernel.hpp"

namespace attn::train::detail {
namespace {

struct Avx2 {
    using V = __m256;
    static constexpr int W = 8;
    static V zero() { return _mm256_setzero_ps(); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, V x) { _mm256_storeu_ps(p, x); }
    using M = __m256i;
    static M mask(int n) {  // the first n lanes, n in [1, 8]
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static V load_m(const float* p, M m) { return _mm256_maskload_ps(p, m); }
    static void store_m(float* p, V x, M m) { _mm256_maskstore_ps(p, m, x); }
    static void prefetch(const float* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
    static V set1(float x) { return _mm256_set1_ps(x); }
    static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
};

// Register tiles (16 ymm): 4 rows x 3 vectors = 12 accumulators + 3 B vectors + 1 broadcast.
void run(const GemmArgs& g) { gemm_run<Avx2, 4, 3>(g); }

}  // namespace

GemmFn gemm_avx2() { return &run; }

}  // namespace attn::train::detail
#pragma GCC pop_options

#else
namespace attn::train::detail {
GemmFn gemm_avx2() { return nullptr; }
}  // namespace attn::train::detail
#endif
