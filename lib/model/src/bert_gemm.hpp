// lib/model/src/bert_gemm.hpp: private. The encoder's bf16 GEMMs (its float32 GEMM is
// attn/cpu/gemm.hpp's packed-strip kernel, AVX-512 or AVX2).
#pragma once

#include <cstdint>

namespace attn::detail {

// ---- bfloat16 weights and inputs (bert_gemm_bf16.cpp; AVX-512 BF16's vdpbf16ps)
//
//   out (N, n_out) = bf16(x) . bf16(Wt) + b, products of bf16 pairs summed in float32
//
// x goes in as rows of kp pairs of bf16 (bert_rows_to_bf16; kp = ceil(n_in / 2) rounded up
// to a multiple of 16, the pairs past n_in zero); the weight
// as strips of 32 columns of pairs (attn::PackedWeightBf16): strip s, pair p, column c
// is bf16(Wt[2p][32 s + c]) | bf16(Wt[2p + 1][32 s + c]) << 16. Each element is
// b[j] + (pair 0) + (pair 1) + ... in ascending p, whatever the split or thread count.

// True when this CPU (and build) can run the two functions below.
bool bert_gemm_bf16_available();
// dst (rows, 2 kp) bf16 = x (rows, n_in) rounded to nearest even; past n_in: 0.
void bert_rows_to_bf16(uint16_t* dst, const float* x, int64_t rows, int64_t n_in, int64_t kp);
// Rows [r0, r1) and columns [c0, c1) of out (c0 a multiple of 32); b may be null.
void bert_gemm_bf16(float* out, const uint32_t* x_pairs, const uint32_t* w_pairs, const float* b, int64_t kp,
                    int64_t n_out, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

// The same two on AVX-512 CPUs without the bf16 dot product (bert_gemm_bf16_avx512f.cpp):
// the same operands, each pair's products as two float32 FMAs. Need AVX-512F
// (attn::cpu_has_avx512()).
void bert_rows_to_bf16_avx512f(uint16_t* dst, const float* x, int64_t rows, int64_t n_in, int64_t kp);
void bert_gemm_bf16_avx512f(float* out, const uint32_t* x_pairs, const uint32_t* w_pairs, const float* b, int64_t kp,
                            int64_t n_out, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

// The same on AMX tiles (bert_gemm_amx.cpp), where attn::cpu_amx_bf16_usable(): rows
// [r0, r1) (r0 a multiple of 32) and columns [c0, c1) (c0 a multiple of 32) of out's N rows.
// kp must be a multiple of 16 and x_pairs must hold whole blocks of 32 rows (zeros past N).
void bert_gemm_amx(float* out, const uint32_t* x_pairs, const uint32_t* w_pairs, const float* b, int64_t kp,
                   int64_t n_out, int64_t N, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

}  // namespace attn::detail
