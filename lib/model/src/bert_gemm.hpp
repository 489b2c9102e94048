// lib/model/src/bert_gemm.hpp: private. The encoder's fp32 GEMM with AVX-512 (bert_gemm.cpp).
//
//   out (N, n_out) = x (N, n_in) . Wt (n_in, n_out) + b       x, out row-major
//
// Wt is packed in strips of 32 columns (attn::PackedWeight, bert.hpp): strip s holds
// Wt[k][32 s .. 32 s + 31] for k = 0..n_in-1, contiguously, zero-padded past n_out.
//
// Every element is b[j] + x(i,0) Wt(0,j) + x(i,1) Wt(1,j) + ... in ascending k, one fused
// multiply-add per term, in whichever register tile or thread computes it: the result
// depends neither on the split of the rows and columns nor on the thread count.
#pragma once

#include <cstdint>

namespace attn::detail {

// True when this CPU (and build) can run bert_gemm_avx512.
bool bert_gemm_avx512_available();

// Rows [r0, r1) and columns [c0, c1) of out (c0 a multiple of 32); b may be null (then 0). Needs the CPU to
// have AVX-512F (bert_gemm_avx512_available()).
void bert_gemm_avx512(float* out, const float* x, const float* Wt_packed, const float* b, int64_t n_in, int64_t n_out,
                      int64_t r0, int64_t r1, int64_t c0, int64_t c1);

}  // namespace attn::detail
