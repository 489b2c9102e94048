// attn/cpu/training_attention.hpp: the attention kernel the trained model's fast path runs
// (lib/nn's TrainableStack): per (batch, head) pair it materialises the weights P (B, H, T, T)
// and keeps them for the backward pass, with counter-based dropout on P (core's
// dropout_drops, so the mask is the reference's). The two products of a pair go through the
// float32 strided GEMM the caller passes (attn/cpu/gemm.hpp; lib/nn passes its training
// choice), or Eigen where it passes none (and always for double); the softmax and dS rows
// through the row kernels (attn/cpu/rows.hpp) where the CPU has them.
// Determinism: one (batch, head) pair is one work item, written by nobody else, so the result
// is bit-identical at any thread count. The results differ from core's reference
// (attention_reference, attention_backward_reference) only by float rounding (a different
// summation order); tests/test_nn_ops.cpp bounds the difference.
// Internal to attn: lib/nn's training path calls it. The library holds S = float; S = double, for
// the tests' finite-difference checks, is in attn_cpu_f64 (lib/cpu/f64), which only the tests link.
#pragma once

#include <cstdint>

#include "attn/cpu/gemm_types.hpp"

namespace attn::cpu {

// out = dropout(softmax(factor q_h k_h^T, causal)) v_h per head; P = the softmax (before
// dropout) saved in att (B, H, T, T).
// ld_qk, ld_v: the row strides of q, k (and dq, dk) and of v (and dv), in elements; 0 means
// packed (H*Dk, H*Dv). The model passes one fused (N, 2*H*Dk + H*Dv) q|k|v buffer this way.
// out and dout are always packed (B, T, H*Dv). b_first: the index in the whole batch of the
// first of these B sequences, so that a batch run in pieces draws the same dropout mask
// (its counter counts (batch, head) blocks of the whole batch). gemm_fn: the float32 kernel of
// the products, or null for Eigen (ignored for double).
template <class S>
void training_attention_forward(S* out, S* att, const S* q, const S* k, const S* v, int64_t B, int64_t T, int64_t H,
                                int64_t Dk, int64_t Dv, S factor, bool causal, float p, uint64_t seed, int threads,
                                gemm::StridedFn gemm_fn, int64_t ld_qk = 0, int64_t ld_v = 0, int64_t b_first = 0);

// The gradient of the forward from its saved weights att: dq, dk, dv (+)= (added when
// accumulate, else written whatever the buffers held: each pair writes its own block).
template <class S>
void training_attention_backward(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v,
                                 const S* att, int64_t B, int64_t T, int64_t H, int64_t Dk, int64_t Dv, S factor,
                                 float p, uint64_t seed, int threads, gemm::StridedFn gemm_fn, int64_t ld_qk = 0,
                                 int64_t ld_v = 0, bool accumulate = true, int64_t b_first = 0);

}  // namespace attn::cpu
