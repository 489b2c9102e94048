// attn/cost.hpp: what a multi-head attention layer costs (C29, C30, C40).
// FLOPs count a multiply-add as 2.
#pragma once

#include <cstdint>
#include <string>

namespace attn {

struct AttentionCost {
    int64_t params_q = 0, params_k = 0, params_v = 0, params_o = 0, params_total = 0;
    double flops_projections = 0;  // Q, K, V, O projections
    double flops_scores = 0;       // Q K^T: 2 B H T T Dk
    double flops_weighted_sum = 0; // weights V: 2 B H T T Dv
    double flops_total = 0;
    double bytes_score_matrix = 0; // one float32 (B, H, T, T) tensor
};

AttentionCost attention_cost(int64_t B, int64_t T, int64_t D, int64_t H, int64_t Dk, int64_t Dv,
                             bool bias = true);

// "1.5 GiB", "512 B"
std::string format_bytes(double bytes);

}  // namespace attn
