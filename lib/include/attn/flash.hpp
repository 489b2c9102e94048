// attn/flash.hpp: tiled attention with an online softmax (FlashAttention's
// forward on the CPU). Same inputs and result as attention_reference (within
// float32 rounding), without ever holding the (Tq, Tk) score matrix.
#pragma once

#include "attn/attention.hpp"

namespace attn {

// q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv) -> (B, H, Tq, Dv).
// Masks, scales, the fully-masked-row rule and dropout as in attention_reference.
// threads = 0: all hardware threads.
Tensor attention_flash(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                       const AttentionOptions& opt, int threads = 0);

}  // namespace attn
