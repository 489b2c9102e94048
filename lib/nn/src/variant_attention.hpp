// lib/nn/src/variant_attention.hpp: private. The attention of the Transformer's variant
// configs (attn/nn/transformer.hpp: AttnKind, DropWhere, head_off, head_blocked), on the
// model's (B, T, H*d) layouts, per (batch, head) pair on `threads` threads (pairs are
// independent, so the numbers do not depend on the thread count). Templated on the scalar:
// float for the model, double for the finite-difference checks.
#pragma once

#include <cstdint>

#include "attn/nn/transformer.hpp"

namespace attn::nn {

// Softmax kinds: S = factor q_h k_h^T, then (Scores) dropout on S, the causal and sparse
// patterns (-inf: weight 0, so no gradient), P = softmax(S) saved in att (B, H, T, T),
// (Weights) dropout on P, out_h = P v_h (B, T, H*Dv). A head in head_off has P saved but
// out_h = 0. Linear kinds: out from attn/cpu/linear_attention.hpp, att untouched.
// p: the dropout probability of this pass (0 in evaluation); seed: the layer's.
template <class S>
void variant_attention_forward(S* out, S* att, const S* q, const S* k, const S* v, const ModelConfig& c, int64_t l,
                               int64_t B, int64_t T, S factor, float p, uint64_t seed, int threads);

// The exact gradient of the forward; ADDS into dq, dk, dv (the ops' convention). A head in
// head_off or head_blocked adds nothing to any of them.
template <class S>
void variant_attention_backward(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v, const S* att,
                                const ModelConfig& c, int64_t l, int64_t B, int64_t T, S factor, float p,
                                uint64_t seed, int threads);

}  // namespace attn::nn
