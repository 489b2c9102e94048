// attn/core/attention.hpp: scaled dot-product attention, the readable reference.
//
//   Q̃, K̃    = RoPE(Q), RoPE(K)           rotary positions, when asked (see below)
//   scores  = Q̃ K̃^T                      (B, H, Tq, Tk)   raw
//   scaled  = scores * scale, softcapped, + ALiBi bias (+ additive mask)
//   masked  = masked_fill(~allowed, fill)
//   weights = softmax(masked, dim=-1)    stable: the row max is subtracted
//   dropped = dropout(weights, p) * 1/(1-p)   training only (C38)
//   out     = dropped V                  (B, H, Tq, Dv)
//
// A fully masked row (every key disallowed):
//   fill = -inf : every score is -inf, softmax has no defined value (PyTorch
//                 returns NaN). attn defines the weights as all zeros, so the
//                 output row is 0 and nothing NaN spreads. Documented and tested.
//   fill finite (-1e9): every score equals the fill, so softmax is uniform
//                 (1/Tk on every key, padded ones included), exactly as PyTorch.
// A NaN score (a NaN in q, k, or an additive mask) makes its whole row NaN, as in
// PyTorch, even when every score of the row is NaN: that row is not "fully masked".
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/mask.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

enum class ScaleKind { InvSqrtDk, None, Constant, Cosine };

struct Scale {
    ScaleKind kind = ScaleKind::InvSqrtDk;
    // Constant: the factor scores are multiplied by (PyTorch's `scale`).
    // Cosine: the temperature tau; scores = cos(q, k) / tau.
    float value = 1.0f;
    // The factor applied to raw q.k for this Dk (Cosine: 1/tau; the
    // normalisation of q and k happens before the product).
    float factor(int64_t Dk) const;
};

// "sqrt", "none", the constant ("0.1") or "cosine" / "cosine:TAU".
std::string scale_name(const Scale& s);

// Options of the score computation that today's decoders use. The score of query
// i and key j of head h is built in this order (each step only when asked):
//
//   q̃, k̃ = RoPE(q_i, p_i), RoPE(k_j, j)   rotate-half (Llama, HF apply_rotary_pos_emb):
//            dims d and d + Dk/2 form a pair rotated by the angle pos·θ_d,
//            θ_d = rope_base^(−2d/Dk), d < Dk/2 (Dk must be even)
//   s = scale · q̃·k̃                      (cosine scale: of the normalised q̃, k̃)
//   s = c · tanh(s / c)                    logit softcap c > 0 (Gemma 2), after scaling
//   s = s − m_h · |p_i − j|                ALiBi, m_h the paper's slope of head h
//                                          (alibi_slopes); under a causal mask the
//                                          allowed keys have j <= p_i, so this is the
//                                          paper's −m_h (p_i − j); for keys after the
//                                          query (no causal mask) attn uses the distance
//                                          |p_i − j|, the symmetric choice
//   s = s + additive mask, then masked_fill(~allowed, fill) as below
//
// p_i = query_offset + i is query i's position and key j sits at position j: a
// decoder that feeds one new query against a cache of Tk keys sets query_offset.
// (The masks still compare i with j: causal means j <= i.)
//
// Grouped-query attention is not an option but a shape: k and v may carry fewer
// heads than q (H_q = g · H_kv); query head h then reads kv head h / g, as PyTorch's
// scaled_dot_product_attention(enable_gqa=True). Multi-query attention is H_kv = 1.
//
// Implementations that lack one of these refuse it (refuse_score_options).
struct AttentionOptions {
    Scale scale;
    float fill = -std::numeric_limits<float>::infinity();
    float dropout = 0.0f;   // probability of dropping a weight, [0, 1)
    bool train = false;     // dropout only in training mode
    uint64_t seed = 0;      // dropout mask seed (counter-based: order independent)
    bool rope = false;            // rotary position embedding of q and k
    float rope_base = 10000.0f;   // θ_d = base^(−2d/Dk); > 1
    bool alibi = false;           // linear distance bias, one slope per query head
    float softcap = 0.0f;         // c > 0: scores -> c·tanh(scores/c); 0: off
    int64_t query_offset = 0;     // position of query 0 (RoPE and ALiBi); keys start at 0
};

// The options and shape features an implementation may lack, named for a message
// ("grouped-query heads (H_q 8, H_kv 2), RoPE, softcap"); empty when none is used.
std::string score_features(const Tensor& q, const Tensor& k, const AttentionOptions& opt);
// Throws InputError "<who> does not implement <features> (the reference and the
// tiled CPU kernel do)" when score_features is not empty.
void refuse_score_options(const std::string& who, const Tensor& q, const Tensor& k, const AttentionOptions& opt);

// ALiBi's slopes for H heads (Press et al., 2022): for H a power of two the
// geometric sequence m_h = 2^(−8(h+1)/H), h = 0..H−1; otherwise the slopes of the
// largest power of two n < H, followed by every other slope of 2n (the odd
// exponents 2^(−4(2k+1)/n), k = 0..H−n−1), as the paper's reference code does.
std::vector<double> alibi_slopes(int64_t H);

// RoPE in place on rows (seqs, T, d): row t of every sequence sits at position
// pos0 + t and each pair (x_c, x_{c+d/2}), c < d/2, is rotated by the angle
// pos · base^(−2c/d) (angles and their cos/sin in double). d must be even.
template <class T>
void rope_rotate(T* x, int64_t seqs, int64_t rows, int64_t d, int64_t pos0, double base);

// Everything a forward pass produced, all (B, H, Tq, Tk).
struct AttentionRecord {
    Tensor scores_raw, scores_scaled, scores_masked, weights, weights_dropped;
};

// The running maximum of a softmax row: the larger of m and x, or NaN once either is NaN, so
// that a NaN score makes its row NaN as in torch.softmax (std::max skips a NaN x, and a row of
// NaN alone would then pass for a fully masked one).
template <class T>
inline T max_nan(T m, T x) {
    return std::isnan(x) || x > m ? x : m;
}

// Stable softmax over each of `rows` rows of length n, in place. A row whose
// entries are all -inf becomes all zeros (see above). T is float or double
// (the double instantiation is what the gradient checks run in).
template <class T>
void softmax_rows(T* x, int64_t rows, int64_t n);
inline void softmax_rows(float* x, int64_t rows, int64_t n) { softmax_rows<float>(x, rows, n); }

// q (B, H, Tq, Dk), k (B, H_kv, Tk, Dk), v (B, H_kv, Tk, Dv) -> out (B, H, Tq, Dv).
// Throws ShapeError when the shapes do not fit (Dk of q and k must agree, C6).
Tensor attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                           const AttentionOptions& opt, AttentionRecord* rec = nullptr);

// The rules every implementation checks first, so all of them refuse the same
// inputs with the same words: 4-D q, k, v agreeing on B, k and v on their heads
// H_kv, which divide q's heads H_q, Dk of q and k equal (C6), as many values as
// keys, a mask that fits, dropout in [0, 1), a fill that is -inf or finite, a
// positive cosine temperature; RoPE with an even Dk and a base > 1, a softcap
// >= 0 and finite, a query offset >= 0.
// Throws ShapeError / InputError.
void check_attention_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                            const AttentionOptions& opt);

// L2-normalise each row of x (rows, d) in place, as F.normalize(eps=1e-12)
// (sum of squares in double): what the cosine scale does to q and k first.
// x / max(|x|, eps); T is float or double.
template <class T>
void l2_normalize_rows(T* x, int64_t rows, int64_t d);
inline void l2_normalize_rows(float* x, int64_t rows, int64_t d) { l2_normalize_rows<float>(x, rows, d); }
inline constexpr double kL2NormalizeEps = 1e-12;

// The dropout keep/drop decision used by every implementation: element
// (b, h, i, j) of a (B, H, Tq, Tk) weight tensor is dropped iff
// counter_uniform(seed, flat index) < p.
bool dropout_drops(uint64_t seed, uint64_t flat_index, float p);

// ---- The same reference math on plain arrays, for T = float or double ----
// The Tensor entry attention_reference runs attention_reference<float>; the gradient checks
// run the double instantiation (finite differences need more digits than float has).
// The arrays are row-major with the shapes below; inputs are not checked here
// beyond mask.check (check_attention_inputs is the Tensor entry's job).
struct AttentionSizes {
    int64_t B = 0, H = 0, Tq = 0, Tk = 0, Dk = 0, Dv = 0;
    int64_t Hkv = 0;  // heads of k and v (grouped-query attention); 0: H
    int64_t kv_heads() const { return Hkv > 0 ? Hkv : H; }
    // The kv head query head h reads: h / (H / H_kv).
    int64_t kv_head(int64_t h) const { return h / (H / kv_heads()); }
};
// Every (B, H, Tq, Tk) step of one forward pass, as AttentionRecord.
template <class T>
struct AttentionSteps {
    std::vector<T> scores_raw, scores_scaled, scores_masked, weights, weights_dropped;
};
// The factor applied to q.k in precision T (float: exactly Scale::factor).
template <class T>
T scale_factor(const Scale& s, int64_t Dk);
// What the forward and the backward both derive from q, k and the options before
// their loops: the rows the scores are taken of (rotated by RoPE when asked, then
// Q̂, K̂, L2-normalised, under the cosine scale; q and k themselves otherwise), the
// factor, and dropout's 1/(1-p).
template <class T>
struct ScoreInputs {
    std::vector<T> qn, kn;  // the rotated / normalised copies (RoPE or cosine only)
    const T* q = nullptr;
    const T* k = nullptr;
    T scale = T(1);
    bool dropping = false;  // train mode with p > 0
    T keep_scale = T(1);
    // Dropout on one head's (Tq, Tk) block x (an Eigen matrix) whose element (0, 0) is element
    // `off` of the (B, H, Tq, Tk) tensor: dropped ones 0, kept ones x 1/(1-p). The forward drops
    // the weights with it and the backward their gradient, with the same decisions.
    template <class M>
    void drop(M& x, int64_t off, const AttentionOptions& opt) const {
        if (!dropping) return;
        for (int64_t i = 0; i < x.rows(); ++i)
            for (int64_t j = 0; j < x.cols(); ++j) {
                const uint64_t flat = static_cast<uint64_t>(off) + static_cast<uint64_t>(i * x.cols() + j);
                x(i, j) = dropout_drops(opt.seed, flat, opt.dropout) ? T(0) : x(i, j) * keep_scale;
            }
    }
};
template <class T>
ScoreInputs<T> score_inputs(const T* q, const T* k, const AttentionSizes& n, const AttentionOptions& opt);
// out (B, H, Tq, Dv) from q (B, H, Tq, Dk), k (B, H_kv, Tk, Dk), v (B, H_kv, Tk, Dv).
// factor: when given, the factor on q·k in precision T in place of opt.scale's (whose kind
// must then not be cosine): for a caller that holds its factor in T, such as a learned
// temperature in double in the gradient checks (a float Scale would round it).
template <class T>
void attention_reference(T* out, const T* q, const T* k, const T* v, const AttentionSizes& n, const Mask& mask,
                         const AttentionOptions& opt, AttentionSteps<T>* steps = nullptr,
                         const T* factor = nullptr);

}  // namespace attn
