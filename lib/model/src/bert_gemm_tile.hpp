// lib/model/src/bert_gemm_tile.hpp: private. The encoder's register-tile GEMM on bf16 pairs,
// written once over an operand type O and included by bert_gemm_bf16.cpp (AVX-512 BF16's
// vdpbf16ps) and bert_gemm_bf16_avx512f.cpp (the pairs widened, two FMAs) inside their
// target regions, after <immintrin.h>; each gets its own copy, compiled for its own
// instructions. (The float32 encoder GEMM is lib/cpu's strips kernel, attn/cpu/gemm.hpp,
// the same tiling over SIMD traits.)
//
//   O::E      the element of an x row and of a weight strip row (a uint32_t pair of bf16)
//   O::load   16 lanes of a strip row;  O::bcast: one x element in every lane
//   O::madd   acc + (the lane's product(s)), float32 accumulation
//
// Weights are packed in strips of 32 columns, kn rows of 32 elements each (bert.hpp:
// PackedWeightBf16), zero-padded to whole strips, so a tile always loads
// whole strip rows; the lanes past n_out are never stored. x rows hold kn elements.
// Every element of out is b + term 0 + term 1 + ... in ascending k, one madd per term,
// whichever tile or thread computes it.
#pragma once

#include <cstdint>

namespace attn::detail {
namespace {

// A register tile of R rows x 2 vectors (32 columns) of out, kept in 2R zmm registers over
// the whole k loop; each k loads the strip's 32 columns of row k and broadcasts R values
// of x. m0, m1: the lanes of the two vectors that exist (the last columns may be fewer).
template <class O, int R>
void tile(float* out, const typename O::E* x, const typename O::E* w, const float* b, int64_t kn, int64_t n_out,
          int64_t i0, int64_t j0, __mmask16 m0, __mmask16 m1) {
    __m512 acc0[R], acc1[R];
    const __m512 b0 = b != nullptr ? _mm512_maskz_loadu_ps(m0, b + j0) : _mm512_setzero_ps();
    const __m512 b1 = b != nullptr ? _mm512_maskz_loadu_ps(m1, b + j0 + 16) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        acc0[r] = b0;
        acc1[r] = b1;
    }
    const typename O::E* xr = x + i0 * kn;
    for (int64_t k = 0; k < kn; ++k, w += 32) {
        const auto w0 = O::load(w), w1 = O::load(w + 16);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const auto a = O::bcast(xr[r * kn + k]);
            acc0[r] = O::madd(acc0[r], a, w0);
            acc1[r] = O::madd(acc1[r], a, w1);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        float* o = out + (i0 + r) * n_out + j0;
        _mm512_mask_storeu_ps(o, m0, acc0[r]);
        _mm512_mask_storeu_ps(o + 16, m1, acc1[r]);
    }
}

constexpr int kTileRows = 12;  // 24 accumulators + 2 strip vectors + 1 broadcast of the 32 registers

template <class O, int R>
void tail_rows(int rows, float* out, const typename O::E* x, const typename O::E* w, const float* b, int64_t kn,
               int64_t n_out, int64_t i0, int64_t j0, __mmask16 m0, __mmask16 m1) {
    if constexpr (R >= 1) {
        if (rows == R) return tile<O, R>(out, x, w, b, kn, n_out, i0, j0, m0, m1);
        tail_rows<O, R - 1>(rows, out, x, w, b, kn, n_out, i0, j0, m0, m1);
    }
}

inline __mmask16 lanes(int64_t n) {
    return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u);
}

// Rows [r0, r1) and columns [c0, c1) (c0 a multiple of 32) of out = x . strips + b: columns
// outside (a strip is reused by every row tile), rows inside.
template <class O>
void gemm_strips(float* out, const typename O::E* x, const typename O::E* strips, const float* b, int64_t kn,
                 int64_t n_out, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    for (int64_t j0 = c0; j0 < c1; j0 += 32) {
        const __mmask16 m0 = lanes(c1 - j0), m1 = lanes(c1 - j0 - 16);
        const typename O::E* w = strips + (j0 / 32) * kn * 32;
        int64_t i0 = r0;
        for (; i0 + kTileRows <= r1; i0 += kTileRows) tile<O, kTileRows>(out, x, w, b, kn, n_out, i0, j0, m0, m1);
        if (i0 < r1) tail_rows<O, kTileRows - 1>(static_cast<int>(r1 - i0), out, x, w, b, kn, n_out, i0, j0, m0, m1);
    }
}

}  // namespace
}  // namespace attn::detail
