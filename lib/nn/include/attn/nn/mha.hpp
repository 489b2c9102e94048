// attn/nn/mha.hpp: multi-head attention, batch_first, as nn.MultiheadAttention computes it.
//
//   x (B, T, D)
//   Q = x W_q^T + b_q  (B, T, H*Dk) -> split -> (B, H, T, Dk)
//   K = x W_k^T + b_k  (B, T, H_kv*Dk) -> split -> (B, H_kv, T, Dk)
//   V = x W_v^T + b_v  (B, T, H_kv*Dv) -> split -> (B, H_kv, T, Dv)
//   head_out = attention(Q, K, V)            (B, H, T, Dv)
//   merged   = merge(head_out)               (B, T, H*Dv)   transpose, then reshape (C31)
//   out      = merged W_o^T + b_o            (B, T, D)
// Weights: W_q [H*Dk, D], W_k [H_kv*Dk, kdim], W_v [H_kv*Dv, vdim], W_o [D, H*Dv]
// (nn.Linear [out, in]); kdim = vdim = D unless set. H_kv = H is ordinary
// multi-head attention; H_kv < H (dividing H) is grouped-query attention, H_kv = 1
// multi-query attention: query head h reads kv head h / (H / H_kv)
// (attn/core/attention.hpp). RoPE, ALiBi and the softcap are AttentionOptions
// passed to forward(). Cross-attention: query (B, Tq, D), key (B, Tk, kdim) and
// value (B, Tk, vdim) inputs; the scores are (B, H, Tq, Tk).
//
// Backward (MultiHeadAttention::backward), for dout = dL/d out (B, Tq, D), each
// step the transpose of a forward one:
//   d_merged   = dout · W_o                      (B, Tq, H*Dv)   dW_o = doutᵀ·merged, db_o = Σ dout
//   d_head_out = split(d_merged)                 (B, H, Tq, Dv)  merge's backward is split
//   dQ, dK, dV = attention backward(d_head_out)  (B, H, T, Dk|Dv) attn/core/attention_backward.hpp
//   dQf        = merge(dQ)                       (B, Tq, H*Dk)   split's backward is merge
//   dquery     = dQf · W_q                       (B, Tq, D)      dW_q = dQfᵀ·query, db_q = Σ dQf
//   dkey, dvalue likewise through W_k, W_v;  self-attention: dx = dquery + dkey + dvalue
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "attn/core/attention.hpp"
#include "attn/core/attention_backward.hpp"
#include "attn/core/linear.hpp"
#include "attn/nn/backend.hpp"

namespace attn {

struct MhaConfig {
    int64_t d_model = 16;
    int64_t heads = 1;
    int64_t d_k = 0;  // 0: d_model / heads (must divide)
    int64_t d_v = 0;  // 0: d_k
    bool bias = true;
    // Widths of the key and value inputs (nn.MultiheadAttention's kdim, vdim): W_k is
    // [H_kv*Dk, kdim], W_v [H_kv*Dv, vdim]. 0: d_model. Cross-attention reads another
    // sequence (an encoder's output) whose width may differ from the query's.
    int64_t kdim = 0, vdim = 0;
    int64_t kv_heads = 0;  // H_kv, heads of K and V; 0: heads (must divide heads)
    // Fills d_k/d_v/kdim/vdim/kv_heads defaults and validates; throws InputError on a
    // size <= 0 (d_k, d_v, kdim, vdim, kv_heads < 0), without d_k on heads that do not
    // divide d_model, and on kv_heads that do not divide heads.
    MhaConfig resolved() const;
};

// Every intermediate of one forward pass. Per-head tensors are (B, H, T, .).
struct ForwardRecord {
    Tensor x, Q, K, V;     // x is the query input; K, V have H_kv heads
    Tensor key, value;     // the key and value inputs (B, Tk, D): x again for self-attention
    bool self_attention = false;  // made by the one-input forward: backward sums dx
    AttentionRecord attn;  // scores_raw .. weights_dropped, (B, H, T, T); empty unless the backend records
    Tensor head_out, merged, out;
};

// One step of the forward pass, reported as it happens.
struct TraceEvent {
    std::string name;     // "Q"
    std::string formula;  // "x·W_qᵀ + b_q"
    Shape shape;
    const Tensor* value = nullptr;  // the tensor itself, valid during the call (for its norm)
};
using TraceFn = std::function<void(const TraceEvent&)>;

// (B, T, H*d) -> (B, H, T, d): view as (B, T, H, d), then transpose(1, 2).
Tensor split_heads(const Tensor& x, int64_t H);
// (B, H, T, d) -> (B, T, H*d): transpose(1, 2), then reshape. The right merge.
Tensor merge_heads(const Tensor& x);
// The backward of each is the other: a permutation's gradient is the inverse
// permutation. split_heads_backward(dy (B, H, T, d)) = merge_heads(dy) (B, T, H*d);
// merge_heads_backward(dy (B, T, H*d), H) = split_heads(dy, H) (B, H, T, d).
inline Tensor split_heads_backward(const Tensor& dy) { return merge_heads(dy); }
inline Tensor merge_heads_backward(const Tensor& dy, int64_t H) { return split_heads(dy, H); }
// (B, H, T, d) -> (B, T, H*d) by reshape alone, without the transpose: the
// classic bug (C31). Same shape, scrambled contents. For lessons and tests.
Tensor merge_heads_wrong(const Tensor& x);

// Every gradient of one MHA backward pass (shapes of what they differentiate).
struct MhaGrads {
    Tensor dquery, dkey, dvalue;  // (B, Tq, D), (B, Tk, D), (B, Tk, D)
    Tensor dx;                    // self-attention: dquery + dkey + dvalue; empty for cross-attention
    Tensor dW_q, db_q, dW_k, db_k, dW_v, db_v, dW_o, db_o;  // db_* empty without bias
};

// Every intermediate gradient of one backward pass.
struct MhaBackwardRecord {
    Tensor d_out;                 // dout (B, Tq, D)
    Tensor d_merged;              // (B, Tq, H*Dv)
    Tensor d_head_out;            // (B, H, Tq, Dv)
    AttentionBackwardRecord attn; // (B, H, Tq, Tk) gradients; empty unless the backend's backward records
    Tensor dQ, dK, dV;            // per head: (B, H, Tq, Dk), (B, H, Tk, Dk), (B, H, Tk, Dv)
};

class MultiHeadAttention {
public:
    explicit MultiHeadAttention(const MhaConfig& cfg);
    const MhaConfig& config() const { return cfg_; }
    void init(const InitSpec& spec, Rng& rng);  // q, k, v, o in that order

    Linear q_proj, k_proj, v_proj, o_proj;

    // Self-attention: query = key = value = x (B, T, D).
    // threads: for the CPU backends, 0 = all (attention()'s argument).
    Tensor forward(const Tensor& x, const Mask& mask, const AttentionOptions& opt,
                   ForwardRecord* rec = nullptr, const TraceFn* trace = nullptr,
                   Backend backend = Backend::Reference, int threads = 0) const;
    // General form: query (B, Tq, D), key (B, Tk, kdim) and value (B, Tk, vdim).
    Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const Mask& mask,
                   const AttentionOptions& opt, ForwardRecord* rec = nullptr,
                   const TraceFn* trace = nullptr, Backend backend = Backend::Reference, int threads = 0) const;

    // The backward pass for dout = dL/d out (B, Tq, D) of the forward that filled
    // `fwd` (with the same mask and options: dropout's mask comes from opt.seed).
    // The attention step runs on `backend`'s backward (InputError when it has
    // none). Trace events name each gradient with its formula and shape.
    MhaGrads backward(const ForwardRecord& fwd, const Tensor& dout, const Mask& mask, const AttentionOptions& opt,
                      MhaBackwardRecord* rec = nullptr, const TraceFn* trace = nullptr,
                      Backend backend = Backend::Reference, int threads = 0) const;

private:
    MhaConfig cfg_;
};

}  // namespace attn
