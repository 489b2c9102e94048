// lib/model/src/bert_gemm.cpp: the encoder's AVX-512 GEMM (see bert_gemm.hpp). Compiled for
// AVX-512 through a target pragma (also in the portable build), called only where the CPU
// has it. Standard headers come before the pragma, so none of their inline code is
// compiled for AVX-512.
#include "bert_gemm.hpp"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f")
#include <immintrin.h>

namespace attn::detail {
namespace {

// A register tile of R rows x 2 vectors (32 columns) of out, kept in 2R zmm registers over
// the whole k loop; each k loads the strip's 32 floats of row k (contiguous in the packed
// layout) and broadcasts R values of x. m0, m1: the lanes of the two vectors that exist (the last columns may be fewer).
template <int R>
void tile(float* out, const float* x, const float* Wt, const float* b, int64_t n_in, int64_t n_out, int64_t i0,
          int64_t j0, __mmask16 m0, __mmask16 m1) {
    __m512 acc0[R], acc1[R];
    const __m512 b0 = b != nullptr ? _mm512_maskz_loadu_ps(m0, b + j0) : _mm512_setzero_ps();
    const __m512 b1 = b != nullptr ? _mm512_maskz_loadu_ps(m1, b + j0 + 16) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        acc0[r] = b0;
        acc1[r] = b1;
    }
    const float* xr = x + i0 * n_in;
    const float* w = Wt + j0 * n_in;  // the packed strip of columns j0..j0+31
    for (int64_t k = 0; k < n_in; ++k, w += 32) {
        const __m512 w0 = _mm512_maskz_loadu_ps(m0, w), w1 = _mm512_maskz_loadu_ps(m1, w + 16);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const __m512 a = _mm512_set1_ps(xr[r * n_in + k]);
            acc0[r] = _mm512_fmadd_ps(a, w0, acc0[r]);
            acc1[r] = _mm512_fmadd_ps(a, w1, acc1[r]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        float* o = out + (i0 + r) * n_out + j0;
        _mm512_mask_storeu_ps(o, m0, acc0[r]);
        _mm512_mask_storeu_ps(o + 16, m1, acc1[r]);
    }
}

constexpr int kRows = 12;  // 24 accumulators + 2 pieces of Wt + 1 broadcast of the 32 registers

template <int R>
void tail_rows(int rows, float* out, const float* x, const float* Wt, const float* b, int64_t n_in, int64_t n_out,
               int64_t i0, int64_t j0, __mmask16 m0, __mmask16 m1) {
    if constexpr (R >= 1) {
        if (rows == R) return tile<R>(out, x, Wt, b, n_in, n_out, i0, j0, m0, m1);
        tail_rows<R - 1>(rows, out, x, Wt, b, n_in, n_out, i0, j0, m0, m1);
    }
}

__mmask16 lanes(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u); }

}  // namespace

bool bert_gemm_avx512_available() { return __builtin_cpu_supports("avx512f"); }

void bert_gemm_avx512(float* out, const float* x, const float* Wt, const float* b, int64_t n_in, int64_t n_out,
                      int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    // columns outside (a 32-column strip of Wt is reused by every row tile), rows inside
    for (int64_t j0 = c0; j0 < c1; j0 += 32) {
        const __mmask16 m0 = lanes(c1 - j0), m1 = lanes(c1 - j0 - 16);
        int64_t i0 = r0;
        for (; i0 + kRows <= r1; i0 += kRows) tile<kRows>(out, x, Wt, b, n_in, n_out, i0, j0, m0, m1);
        if (i0 < r1) tail_rows<kRows - 1>(static_cast<int>(r1 - i0), out, x, Wt, b, n_in, n_out, i0, j0, m0, m1);
    }
}

}  // namespace attn::detail
#pragma GCC pop_options

#else
namespace attn::detail {
bool bert_gemm_avx512_available() { return false; }
void bert_gemm_avx512(float*, const float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                      int64_t) {}
}  // namespace attn::detail
#endif
