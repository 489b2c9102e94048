// lib/model/src/bert_gemm.cpp: the encoder's AVX-512 GEMM (see bert_gemm.hpp). Compiled for
// AVX-512 through a target pragma (also in the portable build), called only where the CPU
// has it. Standard headers come before the pragma, so none of their inline code is
// compiled for AVX-512.
#include "bert_gemm.hpp"

#include "attn/cpu/features.hpp"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f")
#include <immintrin.h>

#include "bert_gemm_tile.hpp"

namespace attn::detail {
namespace {

struct F32 {
    using E = float;
    static __m512 load(const float* w) { return _mm512_loadu_ps(w); }
    static __m512 bcast(float x) { return _mm512_set1_ps(x); }
    static __m512 madd(__m512 acc, __m512 a, __m512 w) { return _mm512_fmadd_ps(a, w, acc); }
};

}  // namespace

bool bert_gemm_avx512_available() { return attn::cpu_has_avx512(); }

void bert_gemm_avx512(float* out, const float* x, const float* Wt, const float* b, int64_t n_in, int64_t n_out,
                      int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    gemm_strips<F32>(out, x, Wt, b, n_in, n_out, r0, r1, c0, c1);
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
