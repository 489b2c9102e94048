// attn/cpu/flash_backward.hpp: the tiled (FlashAttention-2) backward pass on the
// CPU. Same gradients as attention_backward_reference (attn/core/attention_backward.hpp,
// within float32 rounding) without ever holding a (Tq, Tk) matrix: the weights of
// each (query block, key block) tile are recomputed from the row log-sum-exp L
// that the forward saved (attention_flash_with(..., &lse), attn/cpu/flash.hpp):
//
//   D   = rowsum(dO ∘ O)                    (B, H, Tq)
//   per tile:  S = Q̂ K̂ᵀ scale (+ additive mask), masked_fill(~allowed, fill)
//              P = exp(S - L)               the forward's weights, exactly re-made
//              Pd = P ∘ keep/(1-p)          dropout: the forward's counter-based mask
//              dV += Pdᵀ dO;  dP = (dO Vᵀ) ∘ keep/(1-p)
//              dS = P ∘ (dP - D), 0 where masked
//              dQ̂ += dS K̂ scale;  dK̂ += dSᵀ Q̂ scale
//   cosine scale: Q̂, K̂ are the normalised rows; dq, dk go back through the
//   normalisation as in the reference.
//
// Work and determinism: the work items are (b, h, chunk g) with G chunks of key
// blocks per head (G depends on the sizes only: enough items for 16 threads,
// at most one per key block). An item owns the dK, dV rows of its key blocks and
// writes its share of dQ̂ into a buffer of its own; the G shares are summed in
// chunk order afterwards. No result depends on which thread ran what, so the
// gradients are bit-identical at any thread count.
//
// Memory beyond q, k, v, o, dO and the three gradients: O(T) — packed copies of
// Q̂ and dO (rows padded to 16 floats), L and D, the G dQ shares
// (G B H Tq Dk floats) and per thread O((64 + Dk + Dv) 64) floats of tiles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/attention_backward.hpp"

namespace attn {

// What one call did: its kernel, its key-block chunks per head, and every byte
// of scratch it allocated besides the three gradients it returns (one allocation).
struct FlashBackwardStats {
    std::string kernel;
    int64_t key_chunks = 0;
    size_t scratch_bytes = 0;
};

// The backward kernels this build can run on this CPU, best first ("avx512",
// "avx2", "generic"; on AArch64 "neon", "generic").
std::vector<std::string> flash_backward_kernels();

// q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv); out (B, H, Tq, Dv) and
// lse (B, H, Tq) from the forward with the same inputs, mask and options;
// dout (B, H, Tq, Dv) -> dq, dk, dv. kernel: "auto" or a name from
// flash_backward_kernels(). threads = 0: all hardware threads.
// Throws ShapeError / InputError as the forward does, and ShapeError when out,
// lse or dout do not have their shapes.
AttentionGrads attention_flash_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                        const Tensor& lse, const Mask& mask, const AttentionOptions& opt,
                                        const Tensor& dout, int threads = 0, std::string_view kernel = "auto",
                                        FlashBackwardStats* stats = nullptr);

// The same from the inputs alone: runs the flash forward (saving L), then the backward.
AttentionGrads attention_flash_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                        const AttentionOptions& opt, const Tensor& dout, int threads = 0);

}  // namespace attn
