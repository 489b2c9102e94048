// The GPU kernels' mask rule, written once (attn/cuda/cuda.hpp: cuda_check_mask): one mask
// row per batch row for all heads, so a per-head mask is refused naming the kernel. It is
// compiled in every build, so `attn forward` refuses before any work with or without CUDA.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "attn/core/errors.hpp"
#include "attn/cuda/cuda.hpp"

TEST_CASE("gpu mask rule: a per-head mask is refused naming the kernel, one row per batch row passes") {
    const std::vector<uint8_t> two_heads = {1, 0, 1, 1, 1, 1, 1, 1};  // B 1, H 2, T 2, Tk 2: the heads differ
    const attn::Mask per_head = attn::Mask::custom_heads(1, 2, 2, 2, two_heads);
    REQUIRE(per_head.heads() == 2);
    for (const attn::CudaKernel k : attn::all_cuda_kernels()) {
        CAPTURE(attn::cuda_kernel_name(k));
        CHECK_THROWS_WITH_AS(attn::cuda_check_mask(k, per_head),
                             (std::string("a per-head mask runs on the CPU backends; ") + attn::cuda_kernel_name(k) +
                              " takes one mask row for all heads")
                                 .c_str(),
                             attn::InputError);
        CHECK_NOTHROW(attn::cuda_check_mask(k, attn::Mask::make_causal()));
        CHECK_NOTHROW(attn::cuda_check_mask(k, attn::Mask::custom(1, 2, 2, {1, 0, 1, 1})));
    }
}
