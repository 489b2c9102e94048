// The row kernels of the fast ops (fast_ops.cpp): LayerNorm, GELU, attention's softmax and dS
// rows, and the gather transposes, one table per instruction set: rows_avx512.cpp (AVX-512)
// and rows_avx2.cpp (AVX2 + FMA, the same 16-lane sums over pairs of ymm registers), each
// compiled through a target pragma in every x86-64 build. row_kernels() (rows.cpp) picks the
// widest the CPU has under ATTN_ISA, or none: then fast_ops.cpp takes its plain loops, whose
// 16-lane sums give the same reduction order.
#pragma once
#include <cstdint>

#include "attn/train/fast_ops.hpp"

namespace attn::train::detail {

struct RowKernels {
    // dst[c * ldd + r] (=, or += when add) src[r * lds + c], r < rows, c < cols; callers keep
    // 16 * lds below 2^28 (the gather's 32-bit offsets)
    void (*transpose)(float* dst, int64_t ldd, const float* src, int64_t rows, int64_t cols, int64_t lds, bool add);
    // D a multiple of 16
    void (*layernorm_forward)(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                              int64_t N, int64_t D, float eps);
    void (*layernorm_backward)(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                               const float* mean, const float* rstd, int64_t N, int64_t D, Into into);
    void (*gelu_forward)(float* out, const float* inp, int64_t m);
    void (*gelu_backward)(float* dinp, const float* inp, const float* dout, int64_t m, Into into);
    void (*softmax_rows)(float* P, int64_t T, float factor, bool causal);
    void (*ds_rows)(float* dp, const float* P, int64_t T, float factor);
    const char* name;  // "avx512", "avx2"
};

// Each table, or null where the build is not for x86-64 (the CPU is not asked here).
const RowKernels* rows_avx512_kernels();
const RowKernels* rows_avx2_kernels();
// The table for this CPU under ATTN_ISA: AVX-512, else AVX2 with FMA, else null. Decided once
// per process.
const RowKernels* row_kernels();

}  // namespace attn::train::detail
