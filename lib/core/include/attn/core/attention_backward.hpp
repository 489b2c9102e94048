// attn/core/attention_backward.hpp: the backward pass of scaled dot-product
// attention, the readable reference (the forward is attn/core/attention.hpp).
//
// Given the upstream gradient dO = dL/d out (B, H, Tq, Dv), formula by formula,
// with P the weights and Pd the dropped weights (both (B, H, Tq, Tk)):
//   dV  = Pdᵀ · dO                         (B, H, Tk, Dv)
//   dPd = dO · Vᵀ                          (B, H, Tq, Tk)   d_weights_dropped
//   dP  = dPd ∘ keep / (1 − p)             (B, H, Tq, Tk)   d_weights (dP = dPd without dropout)
//   dS  = P ∘ (dP − rowsum(P ∘ dP))        (B, H, Tq, Tk)   d_scores: the softmax's Jacobian
//         then 0 wherever the mask disallows the key: masked_fill has zero
//         gradient there; the additive mask passes the gradient on unchanged
//   dQ̂  = dS · K̂ · scale                   (B, H, Tq, Dk)
//   dK̂  = dSᵀ · Q̂ · scale                  (B, H, Tk, Dk)
//   cosine scale: Q̂ = q / max(|q|, eps) per row (F.normalize, eps 1e-12), so
//         dq = (dq̂ − q̂ (q̂ · dq̂)) / |q|    when |q| > eps
//         dq = dq̂ / eps                      when |q| <= eps (the division is by the constant eps)
//   other scales: Q̂ = q, K̂ = k.
// The score options (attn/core/attention.hpp), each the transpose of its forward step:
//   softcap c: S = c·tanh(x/c) of x = scale·Q̂K̂ᵀ, so dx = dS ∘ (1 − tanh²(x/c)) feeds dQ̂, dK̂
//   ALiBi: a constant added to S, like the additive mask: nothing changes
//   RoPE: q̃ = R(pos)·q, a rotation, so dq = R(pos)ᵀ·dq̃ = R(−pos)·dq̃ (after the cosine step,
//         which acts on the rotated rows); k likewise at its positions
//   grouped-query heads: kv head g serves query heads g·G .. g·G + G − 1 (G = H / H_kv),
//         so its dK, dV are the sums of theirs
// keep is the forward's dropout decision (dropout_drops with the same seed and
// flat index), so the backward drops exactly what the forward dropped.
// A fully masked row: with fill = −inf its weights are all 0, so every
// gradient through it is 0; with a finite fill the weights are uniform but
// every key is masked, so dS = 0 there too and only V's gradient sees it.
#pragma once

#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

// dL/dq, dL/dk, dL/dv: the shapes of q, k and v.
struct AttentionGrads {
    Tensor dq, dk, dv;
};

// The (B, H, Tq, Tk) gradients of one backward pass:
//   d_weights_dropped  dL/d(dropped weights) = dO · Vᵀ
//   d_weights          dL/dP (the weights before dropout)
//   d_scores           dL/dS, S the scaled scores (after scale, softcap, ALiBi and
//                      additive mask, before masked_fill): 0 at every masked position
struct AttentionBackwardRecord {
    Tensor d_weights_dropped, d_weights, d_scores;
};

// q (B, H, Tq, Dk), k (B, H_kv, Tk, Dk), v (B, H_kv, Tk, Dv), dout (B, H, Tq, Dv) ->
// dq, dk, dv. Recomputes the forward (same mask, options and dropout seed).
// Throws ShapeError / InputError as attention_reference does, and ShapeError
// when dout is not (B, H, Tq, Dv).
AttentionGrads attention_backward_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                            const AttentionOptions& opt, const Tensor& dout,
                                            AttentionBackwardRecord* rec = nullptr);

// Throws ShapeError unless dout is (B, H, Tq, Dv) for these q and v (the check
// every backward implementation makes after check_attention_inputs).
void check_attention_dout(const Tensor& q, const Tensor& v, const Tensor& dout);

// ---- The same math on plain arrays, T = float or double ----
// The (B, H, Tq, Tk) gradients, as AttentionBackwardRecord.
template <class T>
struct AttentionBackwardSteps {
    std::vector<T> d_weights_dropped, d_weights, d_scores;
};
// Overwrites dq (B, H, Tq, Dk), dk (B, H_kv, Tk, Dk), dv (B, H_kv, Tk, Dv). factor: as in
// attention_reference (attn/core/attention.hpp), the factor on q·k in T when given.
template <class T>
void attention_backward_reference(T* dq, T* dk, T* dv, const T* q, const T* k, const T* v, const T* dout,
                                  const AttentionSizes& n, const Mask& mask, const AttentionOptions& opt,
                                  AttentionBackwardSteps<T>* steps = nullptr, const T* factor = nullptr);

}  // namespace attn
