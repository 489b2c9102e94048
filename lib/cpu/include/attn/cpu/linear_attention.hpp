// attn/cpu/linear_attention.hpp: linear attention (C43), O(T) in the sequence length.
//
// Softmax attention weighs key j for query i by exp(q_i·k_j / sqrt(Dk)) / sum_j' (...),
// which needs every (i, j) pair: O(T²). Linear attention replaces exp(q·k) by a
// product of features φ(q)·φ(k), φ: R^Dk -> R^m with positive entries, so that
//     out_i = sum_j (φ(q_i)·φ(k_j)) v_j / sum_j φ(q_i)·φ(k_j)
//           = φ(q_i)ᵀ S / φ(q_i)·z,   S = sum_j φ(k_j) v_jᵀ  [m, Dv],  z = sum_j φ(k_j)  [m]
// S and z are computed once (non-causal) or as prefix sums over j <= i (causal), so
// the cost is O(T m Dv) instead of O(T² Dk). The feature maps:
//   EluPlusOne  φ(x) = elu(x) + 1, m = Dk (Katharopoulos et al., 2020, the "Linear
//               Transformer"). The article (C43) calls it an "exponential kernel": it is
//               not. elu(x) + 1 is e^x only for x <= 0 and 1 + x for x > 0, so φ(q)·φ(k)
//               is a sum of products of those pieces, not exp(q·k); it approximates no
//               softmax, it is a different (similarity) kernel that the model must be
//               trained with.
//   Favor       Performer's FAVOR+ (Choromanski et al., 2021): positive random features
//               φ(x) = exp(ω_r·x' - |x'|²/2) / sqrt(m), x' = x / Dk^(1/4), with m rows ω_r
//               drawn as blocks of orthogonal Gaussian directions scaled by chi(Dk) norms.
//               E[φ(q)·φ(k)] = exp(q·k / sqrt(Dk)): an unbiased estimate of the softmax
//               kernel, whose error falls as 1/sqrt(m). Seeded; `draw` selects a fresh set
//               (redraw: increase it, e.g. once per training step).
//   CosFormer   cosFormer (Qin et al., 2022): ReLU features re-weighted by
//               cos(π/2 · (i - j)/M), M = T, which splits as cos a cos b + sin a sin b into
//               φ(x_i) = [relu(x_i) cos θ_i, relu(x_i) sin θ_i], θ_i = π i / (2 T): m = 2 Dk.
//               Not an approximation of softmax either; it favours nearby keys.
// Numerics: Favor's exponents are shifted by a constant (per query row; one over all keys
// of a head), which cancels exactly between numerator and denominator. ReLU features may
// all be 0 for a query, so CosFormer adds eps = 1e-6 to the denominator (and the explicit
// form does the same); elu + 1 and Favor are positive, eps = 0.
//
// The causal form runs in chunks of `chunk` rows: inside a chunk the C×C products are
// explicit (masked j <= i), across chunks the prefix sums S, z carry the past (GEMM-sized
// work instead of a rank-1 update per row). The explicit form materialises the T×T
// matrix A_ij = φ(q_i)·φ(k_j) (masked j <= i when causal) and is the readable check.
//
// Shapes: q, k (B, H, T, Dk), v (B, H, T, Dv) -> (B, H, T, Dv); queries and keys have
// the same length (self-attention). Throws ShapeError otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

enum class FeatureMap { EluPlusOne, Favor, CosFormer };

// "elu+1", "favor+", "cosformer"
std::string feature_map_name(FeatureMap f);

struct LinearOptions {
    FeatureMap map = FeatureMap::EluPlusOne;
    bool causal = false;
    int64_t features = 256;  // Favor: the number m of random features (>= 1)
    uint64_t seed = 0;       // Favor: the random features' seed
    uint64_t draw = 0;       // Favor: which draw of that seed (a redraw increases it)
    int64_t chunk = 64;      // causal: rows per chunk (>= 1)
};

// Feature count m for keys of Dk dims: Dk, features, 2 Dk.
int64_t feature_count(const LinearOptions& opt, int64_t Dk);

// Favor's projection ω, row-major [m, Dk], for (seed, draw): the same at any thread count.
std::vector<double> favor_projection(int64_t m, int64_t Dk, uint64_t seed, uint64_t draw);

// O(T) forward (chunked prefix sums when causal); heads in parallel on `threads` (0: all).
Tensor linear_attention(const Tensor& q, const Tensor& k, const Tensor& v, const LinearOptions& opt, int threads = 0);
// The same function in its explicit O(T²) form (one T×T matrix per head at a time).
Tensor linear_attention_explicit(const Tensor& q, const Tensor& k, const Tensor& v, const LinearOptions& opt);

struct LinearGrads {
    Tensor dq, dk, dv;
};
// The O(T) backward of linear_attention for the upstream gradient dout (B, H, T, Dv).
LinearGrads linear_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const LinearOptions& opt,
                                      const Tensor& dout, int threads = 0);

// Working-set bytes of one forward call (float32): the inputs and output are not
// counted; per head in flight Φq, Φk [T, m], the state S [m, Dv] and z, and per causal
// chunk the C×C block; for the backward the per-chunk states (T/C · m · Dv). O(T).
double linear_attention_workspace_bytes(int64_t T, int64_t Dk, int64_t Dv, const LinearOptions& opt,
                                        int heads_in_flight, bool backward);

}  // namespace attn
