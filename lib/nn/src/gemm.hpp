// lib/nn/src/gemm.hpp: private. lib/nn's GEMM dispatcher inside (gemm_dispatch.cpp): the kernel
// family of a choice (attn/nn/gemm_choice.hpp), and the names the fast ops give attn/cpu/gemm.hpp's
// strided kernel (training_gemm_kernel() in attn/nn/fast_ops.hpp returns the one in use).
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

}  // namespace attn::nn::detail
