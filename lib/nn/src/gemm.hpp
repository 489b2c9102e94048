// lib/nn/src/gemm.hpp: private. The fp32 small-matrix GEMM under the fast training ops:
// attn/cpu/gemm.hpp's strided kernel (one template per instruction set, lib/cpu), of the
// family the path in use names (attn/nn/fast_ops.hpp: gemm_path).
#pragma once

#include "attn/cpu/gemm.hpp"

namespace attn::nn::detail {

// C (M, Nc) = init + A (M, K) . B (K, Nc), A read through two strides (attn/cpu/gemm.hpp).
using GemmArgs = attn::gemm::StridedArgs;
using GemmFn = attn::gemm::StridedFn;

// The kernel of the path in use, null for Eigen.
GemmFn float_gemm();

}  // namespace attn::nn::detail
