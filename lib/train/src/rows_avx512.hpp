// The AVX-512 row kernels of the fast ops (fast_ops.cpp): LayerNorm, GELU, attention's
// softmax and dS rows, and the gather transposes. Compiled for AVX-512 through a target
// pragma in every x86-64 build (portable or -march=native), and chosen at run time by
// rows_avx512() only when the CPU has AVX-512 and ATTN_ISA allows it; otherwise
// fast_ops.cpp takes its plain loops, whose 16-lane sums give the same reduction order.
#pragma once
#include <cstdint>

#include "attn/train/fast_ops.hpp"

namespace attn::train::detail {

struct RowsAvx512 {
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
};

// The kernels, or null where the CPU lacks AVX-512, ATTN_ISA caps below it, or the build is
// not for x86-64. Decided once per process.
const RowsAvx512* rows_avx512();

}  // namespace attn::train::detail
