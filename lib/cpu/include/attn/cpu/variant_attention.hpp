// attn/cpu/variant_attention.hpp: the attention of every trained-model config the fused
// training kernel (attn/cpu/training_attention.hpp) does not run: a pad token (the padding mask
// from the tokens), a planted AttnBug, and the experiments' knobs (AttnKind, DropWhere, heads
// switched off or cut from the gradient), all in attn/cpu/attention_knobs.hpp. On the model's
// (B, T, H*d) layouts, per (batch, head) pair on `threads` threads (pairs touch disjoint slices,
// so the numbers do not depend on the thread count), written out in the reference's order.
// Templated on the scalar: float for the model (the library), double for the finite-difference
// checks (attn_cpu_f64, lib/cpu/f64, which only the tests link).
// Internal to attn: lib/nn's trained model calls it.
#pragma once

#include <cstdint>

#include "attn/cpu/attention_knobs.hpp"

namespace attn::cpu {

// Softmax kinds: S = factor q_h k_h^T over the allowed keys (the causal rule, the sparse
// pattern, the padding mask of tokens (B, T); each as the planted bug bends it), a masked
// score -inf (weight 0; an all-masked row is all zeros) or, under FillZero, 0; (Scores)
// dropout on S; P = softmax(S) saved in att (B, H, T, T); (Weights) dropout on P;
// out_h = P v_h (B, T, H*Dv), or the wrong layout under HeadMerge. A head in head_off has P
// saved but out_h = 0. Linear kinds: out from attn/cpu/linear_attention.hpp, att untouched.
// p: the dropout probability of this pass (0 in evaluation); seed: the layer's.
template <class S>
void variant_attention_forward(S* out, S* att, const S* q, const S* k, const S* v, const int32_t* tokens,
                               const VariantKnobs& kn, int64_t B, int64_t T, S factor, float p, uint64_t seed,
                               int threads);

// The exact gradient of the forward (of the bugged forward, as autograd would give); ADDS
// into dq, dk, dv (the ops' convention). A masked score gets no gradient, and a head in
// head_off or head_blocked adds nothing to any of them.
template <class S>
void variant_attention_backward(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v, const S* att,
                                const int32_t* tokens, const VariantKnobs& kn, int64_t B, int64_t T, S factor, float p,
                                uint64_t seed, int threads);

}  // namespace attn::cpu
