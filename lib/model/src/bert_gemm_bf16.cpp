// lib/model/src/bert_gemm_bf16.cpp: the encoder's GEMM on bfloat16 weights and inputs
// (see bert_gemm.hpp), for AVX-512 BF16's vdpbf16ps: each float32 lane adds the products
// of a PAIR of bf16 numbers, x(i,2p) W(2p,j) + x(i,2p+1) W(2p+1,j), so one instruction
// does the work of two float32 FMAs. Compiled through a target pragma (GCC 12 or later,
// also in the portable build), called only where the CPU has avx512_bf16. Standard
// headers come before the pragma, so none of their inline code is compiled for it.
#include "bert_gemm.hpp"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 12
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")
// GCC 12 reports its own _mm512_undefined_ps() inside the intrinsics headers as
// "may be used uninitialized"; the values are fully written by the intrinsic.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace attn::detail {
namespace {

// R rows x 32 columns of out in 2R accumulators over the whole k loop, as the float32
// tile (bert_gemm.cpp); each step takes a pair of k: two loads of the strip's 32 column
// pairs, R broadcasts of x's pair (one 32-bit load each).
template <int R>
void tile(float* out, const uint32_t* xp, const uint32_t* w, const float* b, int64_t kp, int64_t n_out, int64_t i0,
          int64_t j0, __mmask16 m0, __mmask16 m1) {
    __m512 acc0[R], acc1[R];
    const __m512 b0 = b != nullptr ? _mm512_maskz_loadu_ps(m0, b + j0) : _mm512_setzero_ps();
    const __m512 b1 = b != nullptr ? _mm512_maskz_loadu_ps(m1, b + j0 + 16) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        acc0[r] = b0;
        acc1[r] = b1;
    }
    const uint32_t* xr = xp + i0 * kp;
    for (int64_t p = 0; p < kp; ++p, w += 32) {
        const __m512bh w0 = (__m512bh)_mm512_loadu_si512(w), w1 = (__m512bh)_mm512_loadu_si512(w + 16);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(xr[r * kp + p]));
            acc0[r] = _mm512_dpbf16_ps(acc0[r], a, w0);
            acc1[r] = _mm512_dpbf16_ps(acc1[r], a, w1);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        float* o = out + (i0 + r) * n_out + j0;
        _mm512_mask_storeu_ps(o, m0, acc0[r]);
        _mm512_mask_storeu_ps(o + 16, m1, acc1[r]);
    }
}

constexpr int kRows = 12;  // 24 accumulators + 2 weight vectors + 1 broadcast of the 32 registers

template <int R>
void tail_rows(int rows, float* out, const uint32_t* xp, const uint32_t* w, const float* b, int64_t kp, int64_t n_out,
               int64_t i0, int64_t j0, __mmask16 m0, __mmask16 m1) {
    if constexpr (R >= 1) {
        if (rows == R) return tile<R>(out, xp, w, b, kp, n_out, i0, j0, m0, m1);
        tail_rows<R - 1>(rows, out, xp, w, b, kp, n_out, i0, j0, m0, m1);
    }
}

__mmask16 lanes(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u); }

}  // namespace

bool bert_gemm_bf16_available() {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

void bert_rows_to_bf16(uint16_t* dst, const float* x, int64_t rows, int64_t n_in, int64_t kp) {
    // each row becomes kp pairs (2 kp bf16 values, zeros past n_in), rounded to nearest
    // even by vcvtneps2bf16
    for (int64_t r = 0; r < rows; ++r) {
        const float* src = x + r * n_in;
        uint16_t* d = dst + r * 2 * kp;
        int64_t k = 0;
        for (; k + 16 <= n_in; k += 16)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + k), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + k)));
        for (; k < 2 * kp; k += 16) {  // the last values, then zeros up to 2 kp
            const __m256i h = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(lanes(n_in - k), src + k));
            _mm256_mask_storeu_epi16(d + k, lanes(2 * kp - k), h);
        }
    }
}

void bert_gemm_bf16(float* out, const uint32_t* xp, const uint32_t* w, const float* b, int64_t kp, int64_t n_out,
                    int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    for (int64_t j0 = c0; j0 < c1; j0 += 32) {
        const __mmask16 m0 = lanes(c1 - j0), m1 = lanes(c1 - j0 - 16);
        const uint32_t* strip = w + (j0 / 32) * kp * 32;
        int64_t i0 = r0;
        for (; i0 + kRows <= r1; i0 += kRows) tile<kRows>(out, xp, strip, b, kp, n_out, i0, j0, m0, m1);
        if (i0 < r1) tail_rows<kRows - 1>(static_cast<int>(r1 - i0), out, xp, strip, b, kp, n_out, i0, j0, m0, m1);
    }
}

}  // namespace attn::detail
#pragma GCC pop_options

#else
namespace attn::detail {
bool bert_gemm_bf16_available() { return false; }
void bert_rows_to_bf16(uint16_t*, const float*, int64_t, int64_t, int64_t) {}
void bert_gemm_bf16(float*, const uint32_t*, const uint32_t*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                    int64_t) {}
}  // namespace attn::detail
#endif
