// lib/nn/src/gemm.hpp: private. lib/nn's GEMM dispatcher inside (gemm_dispatch.cpp): the kernel
// family of a choice (attn/nn/gemm_choice.hpp), and the fp32 small-matrix GEMM under the fast
// training ops: attn/cpu/gemm.hpp's strided kernel of the family the training choice names.
#pragma once

#include <optional>

#include "attn/cpu/features.hpp"
#include "attn/cpu/gemm.hpp"
#include "attn/nn/gemm_choice.hpp"

namespace attn::nn::detail {

// The kernel family g runs (Best resolved); nothing for Eigen (or Best on a CPU without SIMD).
std::optional<Isa> gemm_family(GemmChoice g);

// C (M, Nc) = init + A (M, K) . B (K, Nc), A read through two strides (attn/cpu/gemm.hpp).
using GemmArgs = attn::gemm::StridedArgs;
using GemmFn = attn::gemm::StridedFn;

// The kernel of the training choice (attn/nn/fast_ops.hpp: training_gemm), null for Eigen.
GemmFn float_gemm();

}  // namespace attn::nn::detail
