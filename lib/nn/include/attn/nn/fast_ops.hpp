// attn/nn/fast_ops.hpp: the fast twins of attn/nn/ops.hpp that the model trains with (attention's
// are kernels of lib/cpu: attn/cpu/training_attention.hpp).
//
// Same signatures as the reference ops plus a thread count, same "backward adds"
// rule by default (Into::Add); a backward op given Into::Set writes its input gradient
// instead of adding to it, so the caller need not zero the buffer first (a training step
// then skips a memset and a read of every fresh gradient buffer). Matrix products go through the float
// register-tile kernels (see training_gemm below) or Eigen GEMMs over row-major maps of the buffers; loops
// run on attn/core/parallel.hpp. The library holds S = float; S = double, for the tests'
// finite-difference checks, is in attn_nn_f64 (lib/nn/f64), which only the tests link.
// Determinism: work is cut into pieces whose size never depends on the thread count (kRowChunk rows of activations,
// kGemmRows rows of a GEMM, kOutChunk output rows of a weight gradient), and every
// sum across pieces is added in piece order, so the result is bit-identical at any
// thread count. The results differ from the reference ops only by float rounding
// (a different summation order); tests/test_nn_ops.cpp bounds the difference.
#pragma once

#include <cstdint>

#include "attn/cpu/gemm_types.hpp"
#include "attn/nn/gemm_choice.hpp"

namespace attn::nn {

inline constexpr int64_t kRowChunk = 64;    // rows of activations per work item (LayerNorm, GELU)
inline constexpr int64_t kGemmRows = 256;   // rows of a linear layer's input per GEMM work item
inline constexpr int64_t kOutChunk = 32;    // output rows of a weight gradient per work item
inline constexpr int64_t kGradRows = 128;   // tokens per pass of a weight gradient's register tiles
inline constexpr int64_t kChunkTokens = 512;  // tokens (whole sequences) per work item of a fast model step

// The float32 matrix products of the fast ops (linear layers, attention's per-head products)
// run on one GEMM of attn/nn/gemm_choice.hpp for the whole process, the register-tile kernels
// without packing for these small shapes or Eigen's GEMM (as every double op). At start: best.
GemmChoice training_gemm();           // the choice in use, resolved: never Best
void set_training_gemm(GemmChoice g);  // Best resolves; InputError where g does not run here
// The float32 kernel of that choice (attn/cpu/gemm.hpp's strided kernel of its family), null for
// Eigen: what the fast ops run, and what the model hands to the attention kernel of its fast
// path (attn/cpu/training_attention.hpp), which is not a fast op: a kernel of lib/cpu.
gemm::StridedFn training_gemm_kernel();

// How a backward op writes the gradient of its input: Add (dinp += ..., the reference
// ops' rule: gradients of a tensor used twice accumulate) or Set (dinp = ..., whatever
// the buffer held, NaN included).
enum class Into { Add, Set };

// WT: W^T (C, OC) row-major where the caller has it (the model transposes each weight once a
// step, not once per chunk), else null and the op transposes W itself (float kernels only;
// Eigen reads W).
template <class S>
void matmul_forward_fast(S* out, const S* inp, const S* W, const S* b, int64_t N, int64_t C, int64_t OC,
                         int threads, const S* WT = nullptr);
template <class S>
void matmul_backward_fast(S* dinp, S* dW, S* db, const S* dout, const S* inp, const S* W, int64_t N, int64_t C,
                          int64_t OC, int threads, Into into = Into::Add);
// A linear layer followed by its activation (the MLP's first layer), fused by row pieces
// so the activation reads the product while it is still in cache:
//   pre (N, OC) = inp (N, C) . W^T + b;  act = GELU(pre) or ReLU(pre)
// Same numbers as matmul_forward_fast then activation_forward_fast.
template <class S>
void matmul_act_forward_fast(S* pre, S* act, const S* inp, const S* W, const S* b, int64_t N, int64_t C, int64_t OC,
                             bool relu, int threads, const S* WT = nullptr);
// The backward of a linear layer whose input was act = GELU(pre) or ReLU(pre) (the MLP's
// second layer), through the activation as well:
//   dW += dout^T . act, db += colsum(dout), dpre = act'(pre) o (dout . W)   (dpre is Set)
// Same numbers as matmul_backward_fast into a zeroed dact, then activation_backward_fast
// into a zeroed dpre.
template <class S>
void matmul_act_backward_fast(S* dpre, S* dW, S* db, const S* dout, const S* act, const S* pre, const S* W, int64_t N,
                              int64_t C, int64_t OC, bool relu, int threads);
// LayerNorm as the reference's (eps 1e-5 unless given); out may be inp. Called with threads = 1
// it runs on the calling thread: the encoders call it on their own pieces of rows.
template <class S>
void layernorm_forward_fast(S* out, S* mean, S* rstd, const S* inp, const S* w, const S* b, int64_t N, int64_t D,
                            int threads, S eps = static_cast<S>(1e-5));
template <class S>
void layernorm_backward_fast(S* dinp, S* dw, S* db, const S* dout, const S* inp, const S* w, const S* mean,
                             const S* rstd, int64_t N, int64_t D, int threads, Into into = Into::Add);
// GELU (tanh) or ReLU on n elements; relu = true picks ReLU. out may be inp.
template <class S>
void activation_forward_fast(S* out, const S* inp, int64_t n, bool relu, int threads);
template <class S>
void activation_backward_fast(S* dinp, const S* inp, const S* dout, int64_t n, bool relu, int threads,
                              Into into = Into::Add);
// GELU in its exact erf form (gelu_erf_forward of the reference) on n elements; out may be inp.
// Float runs the row kernels' rational erf (Eigen's approximation for float, within a few ulps),
// double and a CPU without row kernels Eigen's erf. threads = 1: on the calling thread (the
// encoder's GEMM runs it on each piece of its output while the piece is in cache).
template <class S>
void gelu_erf_forward_fast(S* out, const S* inp, int64_t n, int threads);
template <class S>
void gelu_erf_backward_fast(S* dinp, const S* inp, const S* dout, int64_t n, int threads, Into into = Into::Add);
// Softmax cross-entropy by kRowChunk rows, each scored row as the reference computes it. An
// ignored row (target -1) gets loss 0 and probs of 0 without a softmax: its gradient is zero
// whatever they hold, and tasks that score one position of a sequence (recall) ignore most.
template <class S>
int64_t crossentropy_forward_fast(S* losses, S* probs, const S* logits, const int32_t* targets, int64_t N, int64_t V,
                                  int threads);
template <class S>
void crossentropy_backward_fast(S* dlogits, const S* probs, const int32_t* targets, S scale, int64_t N, int64_t V,
                                int threads, Into into = Into::Add);
// out = a + b; and the residual backward da += dout, db += dout, elementwise in pieces.
template <class S>
void residual_forward_fast(S* out, const S* a, const S* b, int64_t n, int threads);
template <class S>
void residual_backward_fast(S* da, S* db, const S* dout, int64_t n, int threads);
// x[0, n) = 0 in pieces.
template <class S>
void zero_fast(S* x, int64_t n, int threads);

}  // namespace attn::nn
