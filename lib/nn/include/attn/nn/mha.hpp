// attn/nn/mha.hpp: multi-head attention, batch_first, as nn.MultiheadAttention computes it.
//
//   x (B, T, D)
//   Q = x W_q^T + b_q  (B, T, H*Dk) -> split -> (B, H, T, Dk)     and K likewise
//   V = x W_v^T + b_v  (B, T, H*Dv) -> split -> (B, H, T, Dv)
//   head_out = attention(Q, K, V)            (B, H, T, Dv)
//   merged   = merge(head_out)               (B, T, H*Dv)   transpose, then reshape (C31)
//   out      = merged W_o^T + b_o            (B, T, D)
// Weights: W_q, W_k [H*Dk, D], W_v [H*Dv, D], W_o [D, H*Dv] (nn.Linear [out, in]).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "attn/core/attention.hpp"
#include "attn/core/linear.hpp"
#include "attn/nn/backend.hpp"

namespace attn {

struct MhaConfig {
    int64_t d_model = 16;
    int64_t heads = 1;
    int64_t d_k = 0;  // 0: d_model / heads (must divide)
    int64_t d_v = 0;  // 0: d_k
    bool bias = true;
    // Fills d_k/d_v defaults and validates; throws InputError on a size <= 0
    // (d_k, d_v < 0) or, without d_k, on heads that do not divide d_model.
    MhaConfig resolved() const;
};

// Every intermediate of one forward pass. Per-head tensors are (B, H, T, .).
struct ForwardRecord {
    Tensor x, Q, K, V;
    AttentionRecord attn;  // scores_raw .. weights_dropped, (B, H, T, T); empty unless the backend records
    Tensor head_out, merged, out;
};

// One step of the forward pass, reported as it happens.
struct TraceEvent {
    std::string name;     // "Q"
    std::string formula;  // "x·W_qᵀ + b_q"
    Shape shape;
};
using TraceFn = std::function<void(const TraceEvent&)>;

// (B, T, H*d) -> (B, H, T, d): view as (B, T, H, d), then transpose(1, 2).
Tensor split_heads(const Tensor& x, int64_t H);
// (B, H, T, d) -> (B, T, H*d): transpose(1, 2), then reshape. The right merge.
Tensor merge_heads(const Tensor& x);
// (B, H, T, d) -> (B, T, H*d) by reshape alone, without the transpose: the
// classic bug (C31). Same shape, scrambled contents. For lessons and tests.
Tensor merge_heads_wrong(const Tensor& x);

class MultiHeadAttention {
public:
    explicit MultiHeadAttention(const MhaConfig& cfg);
    const MhaConfig& config() const { return cfg_; }
    void init(const InitSpec& spec, Rng& rng);  // q, k, v, o in that order

    Linear q_proj, k_proj, v_proj, o_proj;

    // Self-attention: query = key = value = x (B, T, D).
    Tensor forward(const Tensor& x, const Mask& mask, const AttentionOptions& opt,
                   ForwardRecord* rec = nullptr, const TraceFn* trace = nullptr,
                   Backend backend = Backend::Reference) const;
    // General form: query (B, Tq, D), key and value (B, Tk, D).
    Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const Mask& mask,
                   const AttentionOptions& opt, ForwardRecord* rec = nullptr,
                   const TraceFn* trace = nullptr, Backend backend = Backend::Reference) const;

private:
    MhaConfig cfg_;
};

}  // namespace attn
