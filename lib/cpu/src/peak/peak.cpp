// lib/cpu/src/peak/peak.cpp: the kernels of the FMA peak (attn/cpu/peak.hpp): a register-only
// FMA loop and a register tile fed from L1, one variant per vector width, picked at run time as
// the flash kernels are; standard headers come before the target pragmas so none of their
// inline code is compiled for AVX.
#include "attn/cpu/peak.hpp"

#include <cmath>
#include <cstdint>

#include "attn/cpu/features.hpp"

namespace attn {
namespace {

// 12 independent accumulators: FMA latency (4 cycles) x FMA ports (2) = 8 in
// flight are needed to saturate the units; 12 leaves margin and fits 16 registers.
// Each call does iters * 12 vector FMAs; returns a value so the work is kept.
float fma_scalar(int64_t iters) {
    float a[12];
    for (int i = 0; i < 12; ++i) a[i] = static_cast<float>(i);
    const float b = 0.999f, c = 0.001f;
    for (int64_t it = 0; it < iters; ++it)
        for (int i = 0; i < 12; ++i) a[i] = std::fma(a[i], b, c);
    float s = 0;
    for (int i = 0; i < 12; ++i) s += a[i];
    return s;
}

// The tile loops below pass __m512 to lambdas of this file only: where the command line has
// no AVX-512 (the avx2 preset) GCC warns that such arguments change the ABI, which no caller
// outside this file can see.
#pragma GCC diagnostic ignored "-Wpsabi"

// The tile: kTileSteps steps of R rows x NV vectors, as the kernels' inner loops (flash's
// score and P.V tiles, the GEMMs' register tiles): per step NV vector loads from a [steps][NV W]
// panel and R broadcasts from R rows of a [R][steps] panel, R NV FMAs; then the R NV stores.
// The panels (16 KiB + 1.5 KiB at 16 lanes) stay in L1. Each call runs `iters` tiles; a
// different starting value per call keeps the work from being folded away.
constexpr int kTileSteps = kPeakTileSteps, kTileR = kPeakTileRows;

template <class V, int W, int NV, class Load, class Set1, class Fma, class Store>
float tile_loop(int64_t iters, Load load, Set1 set1, Fma fma, Store store) {
    alignas(64) float qt[kTileSteps * NV * W];
    alignas(64) float kr[kTileR * kTileSteps];
    alignas(64) float out[kTileR * NV * W];
    for (int i = 0; i < kTileSteps * NV * W; ++i) qt[i] = 1e-3f * static_cast<float>(i % 97);
    for (int i = 0; i < kTileR * kTileSteps; ++i) kr[i] = 1e-3f * static_cast<float>(i % 89);
    float sink = 0;
    for (int64_t it = 0; it < iters; ++it) {
        V acc[kTileR][NV];
        _Pragma("GCC unroll 8") for (int r = 0; r < kTileR; ++r)
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v) acc[r][v] = set1(static_cast<float>(it & 7));
        for (int d = 0; d < kTileSteps; ++d) {
            V q[NV];
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v) q[v] = load(qt + d * NV * W + v * W);
            _Pragma("GCC unroll 8") for (int r = 0; r < kTileR; ++r) {
                const V b = set1(kr[r * kTileSteps + d]);
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v) acc[r][v] = fma(b, q[v], acc[r][v]);
            }
        }
        _Pragma("GCC unroll 8") for (int r = 0; r < kTileR; ++r)
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v) store(out + (r * NV + v) * W, acc[r][v]);
        sink += out[static_cast<size_t>(it % (kTileR * NV * W))];
    }
    return sink;
}

float tile_scalar(int64_t iters) {
    return tile_loop<float, 1, 4>(
        iters, [](const float* p) { return *p; }, [](float x) { return x; },
        [](float a, float b, float c) { return std::fma(a, b, c); }, [](float* p, float x) { *p = x; });
}

}  // namespace
}  // namespace attn

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#pragma GCC diagnostic push
// GCC 12's own intrinsics headers trip these on _mm512_undefined_ps().
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
namespace attn {
namespace {
#define ATTN_FMA12(T, FMADD, SET1, ADD)                                                              \
    T b = SET1(0.999f), c = SET1(0.001f);                                                          \
    T a0 = SET1(0), a1 = SET1(1), a2 = SET1(2), a3 = SET1(3), a4 = SET1(4), a5 = SET1(5);          \
    T a6 = SET1(6), a7 = SET1(7), a8 = SET1(8), a9 = SET1(9), a10 = SET1(10), a11 = SET1(11);      \
    for (int64_t it = 0; it < iters; ++it) {                                                      \
        a0 = FMADD(a0, b, c), a1 = FMADD(a1, b, c), a2 = FMADD(a2, b, c), a3 = FMADD(a3, b, c);    \
        a4 = FMADD(a4, b, c), a5 = FMADD(a5, b, c), a6 = FMADD(a6, b, c), a7 = FMADD(a7, b, c);    \
        a8 = FMADD(a8, b, c), a9 = FMADD(a9, b, c), a10 = FMADD(a10, b, c), a11 = FMADD(a11, b, c); \
    }                                                                                              \
    T s = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));                       \
    s = ADD(s, ADD(ADD(a8, a9), ADD(a10, a11)));

float fma_avx512(int64_t iters) {
    ATTN_FMA12(__m512, _mm512_fmadd_ps, _mm512_set1_ps, _mm512_add_ps)
    return _mm512_reduce_add_ps(s);
}
float fma_avx2(int64_t iters) {
    ATTN_FMA12(__m256, _mm256_fmadd_ps, _mm256_set1_ps, _mm256_add_ps)
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[7];
}
#undef ATTN_FMA12
// 6 x 4 zmm as the AVX-512 flash kernel's tiles; 6 x 2 ymm as the AVX2 one's (16 registers)
float tile_avx512(int64_t iters) {
    return tile_loop<__m512, 16, 4>(
        iters, [](const float* p) { return _mm512_load_ps(p); }, [](float x) { return _mm512_set1_ps(x); },
        [](__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); },
        [](float* p, __m512 x) { _mm512_store_ps(p, x); });
}
float tile_avx2(int64_t iters) {
    return tile_loop<__m256, 8, 2>(
        iters, [](const float* p) { return _mm256_load_ps(p); }, [](float x) { return _mm256_set1_ps(x); },
        [](__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); },
        [](float* p, __m256 x) { _mm256_store_ps(p, x); });
}
}  // namespace
}  // namespace attn
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif


namespace attn {

PeakKernels peak_kernels() {
    PeakKernels k;
    k.fma = &fma_scalar;
    k.tile = &tile_scalar;
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512()) {
        k.fma = &fma_avx512, k.tile = &tile_avx512, k.lanes = 16, k.isa = "avx512", k.tile_shape = "6 x 4 zmm";
    } else if (cpu_has_avx2()) {
        k.fma = &fma_avx2, k.tile = &tile_avx2, k.lanes = 8, k.tile_nv = 2, k.isa = "avx2", k.tile_shape = "6 x 2 ymm";
    }
#endif
    return k;
}

}  // namespace attn
