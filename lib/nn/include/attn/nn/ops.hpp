// attn/nn/ops.hpp: forward and backward of every piece of a small Transformer,
// the readable reference (plain loops, one thread), in the manner of llm.c.
//
// Legend: B batch, T sequence, D d_model, H heads, Dk, Dv per-head sizes, V vocabulary,
// N = B*T rows, C input features, OC output features, F = d_ff.
// Every buffer is row-major and contiguous. Each op is a pair
//   *_forward(outputs..., inputs..., sizes)   *_backward(input grads..., dout, saved..., sizes)
// with outputs first and sizes last. Backward functions ADD into their gradient buffers
// (dinp += ..., dW += ...), so a tensor used twice (the residual stream) collects both
// contributions; the caller zeroes gradients once per step.
//
// Templated on the scalar: instantiated for float (the model) and double (the
// finite-difference tests). Conventions follow PyTorch: nn.Linear weights [out, in],
// LayerNorm eps 1e-5 (unless given) with the biased variance, GELU with approximate='tanh'
// (the exact erf form beside it, for the pretrained encoders),
// cross_entropy with ignore_index = -1 and mean reduction over the scored rows.
#pragma once

#include <cstdint>

namespace attn::nn {

// ---- embedding ---------------------------------------------------------------
// out (B, T, D) = wte[tokens[b,t]] + pos[t];  tokens (B*T) in [0, V); wte (V, D); pos (Tmax, D), T <= Tmax.
// pos is the learned table (a parameter) or the fixed sinusoidal table below.
template <class S>
void embedding_forward(S* out, const int32_t* tokens, const S* wte, const S* pos, int64_t B, int64_t T, int64_t D);
// dwte[tokens[b,t]] += dout[b,t]; dpos[t] += dout[b,t] (dpos may be null: sinusoidal positions).
template <class S>
void embedding_backward(S* dwte, S* dpos, const S* dout, const int32_t* tokens, int64_t B, int64_t T, int64_t D);
// table (Tmax, D): PE[t, 2i] = sin(t / 10000^(2i/D)), PE[t, 2i+1] = cos(t / 10000^(2i/D))
// (Vaswani et al. 2017; computed in double, then rounded).
template <class S>
void sinusoidal_positions(S* table, int64_t Tmax, int64_t D);

// ---- layernorm ---------------------------------------------------------------
// out (N, D) = (x - mean) * rstd * w + b, mean = sum(x)/D, rstd = 1/sqrt(sum((x-mean)^2)/D + eps),
// eps 1e-5 as PyTorch's default (BERT's configs say 1e-12). out may be inp.
// Saves mean (N) and rstd (N) for the backward.
template <class S>
void layernorm_forward(S* out, S* mean, S* rstd, const S* inp, const S* w, const S* b, int64_t N, int64_t D,
                       S eps = static_cast<S>(1e-5));
// xhat = (x - mean) * rstd, g = dout * w:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  dw += sum_n dout * xhat,  db += sum_n dout.
template <class S>
void layernorm_backward(S* dinp, S* dw, S* db, const S* dout, const S* inp, const S* w, const S* mean,
                        const S* rstd, int64_t N, int64_t D);

// ---- activations -------------------------------------------------------------
// GELU, tanh approximation (PyTorch's approximate='tanh', GPT-2's):
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
//   gelu'(x) = 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
template <class S>
void gelu_forward(S* out, const S* inp, int64_t n);
template <class S>
void gelu_backward(S* dinp, const S* inp, const S* dout, int64_t n);
// GELU, exact (erf) form (PyTorch's approximate='none'; BERT's "gelu"):
//   gelu(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))
//   gelu'(x) = Phi(x) + x phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
template <class S>
void gelu_erf_forward(S* out, const S* inp, int64_t n);
template <class S>
void gelu_erf_backward(S* dinp, const S* inp, const S* dout, int64_t n);
// relu(x) = max(x, 0); relu'(x) = 1 for x > 0, else 0 (PyTorch's choice at 0).
template <class S>
void relu_forward(S* out, const S* inp, int64_t n);
template <class S>
void relu_backward(S* dinp, const S* inp, const S* dout, int64_t n);

// ---- residual ----------------------------------------------------------------
// out = a + b (n);  da += dout, db += dout.
template <class S>
void residual_forward(S* out, const S* a, const S* b, int64_t n);
template <class S>
void residual_backward(S* da, S* db, const S* dout, int64_t n);

// ---- linear (matmul with bias) ------------------------------------------------
// out (N, OC) = inp (N, C) . W^T + b;  W (OC, C) as nn.Linear, b (OC) or null.
template <class S>
void matmul_forward(S* out, const S* inp, const S* W, const S* b, int64_t N, int64_t C, int64_t OC);
// dinp (N, C) += dout . W;  dW (OC, C) += dout^T . inp;  db (OC) += sum_n dout (db may be null;
// dinp may be null when the input needs no gradient).
template <class S>
void matmul_backward(S* dinp, S* dW, S* db, const S* dout, const S* inp, const S* W, int64_t N, int64_t C,
                     int64_t OC);

// ---- cosine scale: per-head L2 normalisation ----------------------------------
// x, out (N, H*Dd): each (n, h) slice of Dd values divided by its norm, as F.normalize(eps=1e-12):
//   out = x / max(|x|, 1e-12);  saves norm (N*H) = max(|x|, 1e-12).
template <class S>
void headnorm_forward(S* out, S* norm, const S* inp, int64_t N, int64_t H, int64_t Dd);
// dx += (dout - out * (out . dout)) / norm   (where |x| > 1e-12; else dx += dout / 1e-12).
template <class S>
void headnorm_backward(S* dinp, const S* dout, const S* out, const S* norm, int64_t N, int64_t H, int64_t Dd);

// ---- learned cosine temperature -------------------------------------------------
// Scores S = f * qn . kn with f = exp(-log_tau) are bilinear in (qn, kn), so the
// attention backward's dqn = f dS kn gives sum(qn o dqn) = sum(dS o S) over all
// (b, h, i, j); with dS/d log_tau = -S, d loss / d log_tau = -sum(qn o dqn) (n values).
// Summed in double, in order, whatever S is.
template <class S>
double temperature_backward(const S* qn, const S* dqn, int64_t n);

// ---- self-attention on (B, T, H*d) layouts -------------------------------------
// Not a second copy: core's readable reference (attention_reference and
// attention_backward_reference, attn/core/attention*.hpp) run on this layout, which they
// take as (B, H, T, d). The fast twins are attention_*_fast (fast_ops.hpp).
// q, k (B, T, H*Dk), v (B, T, H*Dv): head h of token t is the slice [h*Dk, (h+1)*Dk).
//   S = factor * q_h k_h^T (T, T);  causal: S[i, j] = -inf for j > i
//   P = softmax(S, dim=-1)          saved in att (B, H, T, T)
//   Pd = dropout(P): P[i,j] * 1/(1-p), or 0 where dropout_drops(seed, flat index of (b,h,i,j), p)
//        (attn/core/attention.hpp: the same counter-based mask as the forward pass everywhere)
//   out_h = Pd v_h                  out (B, T, H*Dv): heads already merged (C31's transpose)
// p = 0: no dropout (the caller passes 0 outside training). factor is used exactly, in S.
template <class S>
void self_attention_forward(S* out, S* att, const S* q, const S* k, const S* v, int64_t B, int64_t T, int64_t H,
                            int64_t Dk, int64_t Dv, S factor, bool causal, float p, uint64_t seed);
// dPd = dout_h v_h^T;  dv_h += Pd^T dout_h;  dP = dPd * keep/(1-p);
// dS = P o (dP - rowsum(P o dP));  dq_h += factor dS k_h;  dk_h += factor dS^T q_h.
// Masked positions have P = 0, so they get zero gradient. P is recomputed from q, k (core's
// reference keeps nothing between calls), with the forward's causal, p and seed.
template <class S>
void self_attention_backward(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v, int64_t B,
                             int64_t T, int64_t H, int64_t Dk, int64_t Dv, S factor, bool causal, float p,
                             uint64_t seed);

// ---- softmax cross-entropy -----------------------------------------------------
// logits (N, V), targets (N) with -1 = not scored.
//   probs (N, V) = softmax(logits) (stable: the row max is subtracted; log-sum-exp)
//   losses (N) = logsumexp(logits[n]) - logits[n, target]  (0 for an ignored row)
// Returns the number of scored rows; the mean loss is sum(losses) / scored.
template <class S>
int64_t crossentropy_forward(S* losses, S* probs, const S* logits, const int32_t* targets, int64_t N, int64_t V);
// dlogits[n] += scale * (probs[n] - onehot(target[n])) for scored rows (scale = 1/scored
// for the mean loss); ignored rows get nothing.
template <class S>
void crossentropy_backward(S* dlogits, const S* probs, const int32_t* targets, S scale, int64_t N, int64_t V);

}  // namespace attn::nn
