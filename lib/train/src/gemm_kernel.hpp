// lib/train/src/gemm_kernel.hpp: private. The small-matrix fp32 GEMM of the fast training
// ops, written once over a SIMD trait T (gemm_avx512.cpp, gemm_avx2.cpp include it inside
// their target regions, after <immintrin.h>).
//
//   C (M, Nc) = init + A (M, K) . B (K, Nc)       init: C itself (accumulate), the bias
//                                                 row, or 0
//   A is read through two strides, A(i, k) = A[i*sai + k*sak], so the same kernel does
//   x . W^T with W^T pre-transposed (sai = lda, sak = 1) and G^T . X for a weight
//   gradient (sai = 1, sak = ldg) without copying G.
//
// No packing: B's rows are read in place (a 64-wide weight block over K = 64 is 16 KiB,
// it stays in L1), a register tile of R rows x NV vectors of C is kept in registers over
// the whole K loop. Every element of C is init + A(i,0)B(0,j) + A(i,1)B(1,j) + ... in
// ascending k, one fused multiply-add per term, whatever tile or thread computes it: the
// result depends neither on M's split into pieces nor on the thread count.
#pragma once

#include "gemm.hpp"

namespace attn::train::detail {
namespace {

constexpr int64_t kPrefetchRows = 32;  // how far ahead a prefetching tile asks for B's rows

template <class T, int R, int NV, bool MASK, bool PF>
void gemm_tile(const GemmArgs& g, int64_t i0, int64_t j0, int tail) {
    using V = typename T::V;
    constexpr int W = T::W;
    constexpr int NF = MASK ? NV - 1 : NV;  // full vectors; the last one is masked when MASK
    const typename T::M km = T::mask(tail);
    const int64_t K = g.K, sai = g.sai, sak = g.sak, ldb = g.ldb, ldc = g.ldc;
    V acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        float* c = g.C + (i0 + r) * ldc + j0;
        const float* init = g.accumulate ? c : g.bias ? g.bias + j0 : nullptr;
#pragma GCC unroll 8
        for (int v = 0; v < NF; ++v) acc[r][v] = init ? T::load(init + v * W) : T::zero();
        if constexpr (MASK) acc[r][NV - 1] = init ? T::load_m(init + NF * W, km) : T::zero();
    }
    const float* a = g.A + i0 * sai;
    const float* b = g.B + j0;
    for (int64_t k = 0; k < K; ++k, a += sak, b += ldb) {
        if constexpr (PF) {  // B's row kPrefetchRows ahead, on its way to L1 (PF: B is cold memory)
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) T::prefetch(b + kPrefetchRows * ldb + v * W);
        }
        V bv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NF; ++v) bv[v] = T::load(b + v * W);
        if constexpr (MASK) bv[NV - 1] = T::load_m(b + NF * W, km);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const V av = T::set1(a[r * sai]);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[r][v] = T::fmadd(av, bv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        float* c = g.C + (i0 + r) * ldc + j0;
#pragma GCC unroll 8
        for (int v = 0; v < NF; ++v) T::store(c + v * W, acc[r][v]);
        if constexpr (MASK) T::store_m(c + NF * W, acc[r][NV - 1], km);
    }
}

template <class T, int R, int NV, bool PF>
void gemm_rows(const GemmArgs& g, int64_t i0, int64_t j0, int nvec, int tail) {
    const bool m = tail != T::W;
    // nvec in [1, NV]: one instantiation per vector count, masked or not
    if constexpr (NV >= 1)
        if (nvec == 1)
            return m ? gemm_tile<T, R, 1, true, PF>(g, i0, j0, tail) : gemm_tile<T, R, 1, false, PF>(g, i0, j0, tail);
    if constexpr (NV >= 2)
        if (nvec == 2)
            return m ? gemm_tile<T, R, 2, true, PF>(g, i0, j0, tail) : gemm_tile<T, R, 2, false, PF>(g, i0, j0, tail);
    if constexpr (NV >= 3)
        if (nvec == 3)
            return m ? gemm_tile<T, R, 3, true, PF>(g, i0, j0, tail) : gemm_tile<T, R, 3, false, PF>(g, i0, j0, tail);
    if constexpr (NV >= 4)
        if (nvec == 4)
            return m ? gemm_tile<T, R, 4, true, PF>(g, i0, j0, tail) : gemm_tile<T, R, 4, false, PF>(g, i0, j0, tail);
}

template <class T, int R, int NV>
void gemm_tail_rows(const GemmArgs& g, int64_t i0, int rows, int64_t j0, int nvec, int tail) {
    if constexpr (R > 1) {
        if (rows == R - 1) return gemm_rows<T, R - 1, NV, false>(g, i0, j0, nvec, tail);
        return gemm_tail_rows<T, R - 1, NV>(g, i0, rows, j0, nvec, tail);
    }
}

// Column blocks of NV vectors outside, row tiles of R inside: B's block is read from L1
// by every row tile. The first row tile of each block prefetches B's rows when g.prefetch_b
// (B cold in memory: the saved activations a weight gradient reads); the others find them
// in L1.
template <class T, int R, int NV>
void gemm_run(const GemmArgs& g) {
    constexpr int64_t BW = int64_t{NV} * T::W;
    for (int64_t j0 = 0; j0 < g.Nc; j0 += BW) {
        const int64_t nc = g.Nc - j0 < BW ? g.Nc - j0 : BW;
        const int nvec = static_cast<int>((nc + T::W - 1) / T::W);
        const int tail = static_cast<int>(nc - int64_t{nvec - 1} * T::W);
        int64_t i0 = 0;
        if (g.prefetch_b && i0 + R <= g.M) {
            gemm_rows<T, R, NV, true>(g, i0, j0, nvec, tail);
            i0 += R;
        }
        for (; i0 + R <= g.M; i0 += R) gemm_rows<T, R, NV, false>(g, i0, j0, nvec, tail);
        if (i0 < g.M) gemm_tail_rows<T, R, NV>(g, i0, static_cast<int>(g.M - i0), j0, nvec, tail);
    }
}

}  // namespace
}  // namespace attn::train::detail
