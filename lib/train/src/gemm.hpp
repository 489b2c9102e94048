// lib/train/src/gemm.hpp: private. The fp32 small-matrix GEMM under the fast training ops,
// one kernel per instruction set (gemm_kernel.hpp), chosen at run time.
#pragma once

#include <cstdint>

namespace attn::train::detail {

// C (M, Nc) = init + A (M, K) . B (K, Nc); A(i, k) = A[i*sai + k*sak], B and C row-major
// with leading dimensions ldb, ldc. init: C's own values when accumulate, else the bias
// row (Nc values) when bias is not null, else 0. Each element is summed over k in
// ascending order with fused multiply-adds (gemm_kernel.hpp).
struct GemmArgs {
    int64_t M = 0, Nc = 0, K = 0;
    const float* A = nullptr;
    int64_t sai = 0, sak = 0;
    const float* B = nullptr;
    int64_t ldb = 0;
    float* C = nullptr;
    int64_t ldc = 0;
    const float* bias = nullptr;
    bool accumulate = false;
    bool prefetch_b = false;  // B is cold memory: the first row tile prefetches its rows ahead
};

using GemmFn = void (*)(const GemmArgs&);

// Null where the build or the CPU lacks the instruction set.
GemmFn gemm_avx512();
GemmFn gemm_avx2();
// The kernel of the path in use (attn/train/fast_ops.hpp: gemm_path), null for Eigen.
GemmFn float_gemm();

}  // namespace attn::train::detail
