// attn/core/cost.hpp: what attention costs (C29, C30, C40). FLOPs count a
// multiply-add as 2. attention_flops is the one FLOP count of the attention
// core: the layer's cost, the CPU bench and the CUDA bench all use it.
#pragma once

#include <cstdint>
#include <string>

#include "attn/core/mask.hpp"

namespace attn {

// FLOPs of the attention core of one call, Q K^T and weights V:
// 2·(Dk + Dv) per (b, h, i, j) the mask allows (4 B H T² Dk unmasked, Dv = Dk).
// The softmax and the projections are not counted.
double attention_flops(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t Dk, int64_t Dv, const Mask& mask);

struct AttentionCost {
    int64_t params_q = 0, params_k = 0, params_v = 0, params_o = 0, params_total = 0;
    double flops_projections = 0;  // Q, K, V, O projections
    double flops_scores = 0;       // Q K^T: 2 B H T T Dk (attention_flops with Dv = 0)
    double flops_weighted_sum = 0; // weights V: 2 B H T T Dv (attention_flops with Dk = 0)
    double flops_total = 0;
    double bytes_score_matrix = 0; // one float32 (B, H, T, T) tensor
};

AttentionCost attention_cost(int64_t B, int64_t T, int64_t D, int64_t H, int64_t Dk, int64_t Dv,
                             bool bias = true);

// "1.5 GiB", "512 B"
std::string format_bytes(double bytes);

}  // namespace attn
