// attn/cpu/rows.hpp: the row kernels under the fast ops of lib/nn (fast_ops_impl.hpp) and the training
// attention (attn/cpu/training_attention.hpp), which the training stack and the pretrained
// encoders (lib/model) share: LayerNorm, GELU (tanh and erf forms), attention's masked softmax and
// dS rows, and gather transposes.
// Internal to attn: an interface its modules share, not one for users.
//
// One template (src/rows/rows_kernel.hpp) over 16-lane traits, instantiated for AVX-512 (one zmm,
// src/rows/rows_avx512.cpp) and AVX2 + FMA (a pair of ymm registers, src/rows/rows_avx2.cpp), each
// compiled through a target pragma in every x86-64 build, and for AArch64 NEON (four q
// registers, src/rows/rows_neon.cpp); row_kernels() (src/rows/rows.cpp) picks the widest the CPU runs
// under the ATTN_ISA cap, or none: the caller then takes its plain loops, whose 16-lane sums
// give the same reduction order. Every row sum has the same 16 lanes and reduction tree on
// every instruction set.
#pragma once

#include <cstdint>

namespace attn::rows {

struct RowKernels {
    // dst[c * ldd + r] (=, or += when add) src[r * lds + c], r < rows, c < cols; callers keep
    // 16 * lds below 2^28 (the gather's 32-bit offsets)
    void (*transpose)(float* dst, int64_t ldd, const float* src, int64_t rows, int64_t cols, int64_t lds, bool add);
    // LayerNorm of N rows of D (a multiple of 16): out = (x - mean) rstd w + b, mean and rstd kept;
    // out may be inp (each element is read before it is written)
    void (*layernorm_forward)(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                              int64_t N, int64_t D, float eps);
    // dinp (=, or += when add) its gradient; dw and db accumulate
    void (*layernorm_backward)(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                               const float* mean, const float* rstd, int64_t N, int64_t D, bool add);
    void (*gelu_forward)(float* out, const float* inp, int64_t m);
    // dinp (=, or += when add) GELU'(inp) dout; dinp may be dout itself
    void (*gelu_backward)(float* dinp, const float* inp, const float* dout, int64_t m, bool add);
    // GELU, erf form: out = x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); out may be inp
    void (*gelu_erf_forward)(float* out, const float* inp, int64_t m);
    // dinp (=, or += when add) (Phi(x) + x phi(x)) dout; dinp may be dout itself
    void (*gelu_erf_backward)(float* dinp, const float* inp, const float* dout, int64_t m, bool add);
    // T rows of T in place: scaled by factor, masked (causal: row i keeps i + 1), softmax
    void (*softmax_rows)(float* P, int64_t T, float factor, bool causal);
    // dS = factor P o (dP - rowsum(P o dP)) over T rows of T, in place in dp
    void (*ds_rows)(float* dp, const float* P, int64_t T, float factor);
};

// Each table, or null where the build is not for its architecture (x86-64; AArch64 for
// NEON). The CPU is not asked here: pair each with cpu_has_avx512(), cpu_has_avx2(),
// cpu_has_neon() (attn/cpu/features.hpp).
const RowKernels* rows_avx512_kernels();
const RowKernels* rows_avx2_kernels();
const RowKernels* rows_neon_kernels();
// The table for this CPU under ATTN_ISA: AVX-512, else AVX2 with FMA, else NEON, else null.
// Decided once per process.
const RowKernels* row_kernels();

// dst (cols, rows) = src (rows, cols)^T, src with row stride lds: the table's transpose for
// float where there is one, else a loop that asks for src's rows 8 ahead (a head's V is cold
// memory in the backward pass, and hardware prefetch does not follow a stride of a few cache
// lines). S is float or double.
template <class S>
void transpose(S* dst, const S* src, int64_t rows, int64_t cols, int64_t lds);

}  // namespace attn::rows
