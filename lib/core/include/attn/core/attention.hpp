// attn/core/attention.hpp: scaled dot-product attention, the readable reference.
//
//   scores  = Q K^T                      (B, H, Tq, Tk)   raw
//   scaled  = scores * scale (+ additive mask)
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
#pragma once

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

struct AttentionOptions {
    Scale scale;
    float fill = -std::numeric_limits<float>::infinity();
    float dropout = 0.0f;   // probability of dropping a weight, [0, 1)
    bool train = false;     // dropout only in training mode
    uint64_t seed = 0;      // dropout mask seed (counter-based: order independent)
};

// Everything a forward pass produced, all (B, H, Tq, Tk).
struct AttentionRecord {
    Tensor scores_raw, scores_scaled, scores_masked, weights, weights_dropped;
};

// Stable softmax over each of `rows` rows of length n, in place. A row whose
// entries are all -inf becomes all zeros (see above). T is float or double
// (the double instantiation is what the gradient checks run in).
template <class T>
void softmax_rows(T* x, int64_t rows, int64_t n);
inline void softmax_rows(float* x, int64_t rows, int64_t n) { softmax_rows<float>(x, rows, n); }

// q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv) -> out (B, H, Tq, Dv).
// Throws ShapeError when the shapes do not fit (Dk of q and k must agree, C6).
Tensor attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                           const AttentionOptions& opt, AttentionRecord* rec = nullptr);

// The rules every implementation checks first, so all of them refuse the same
// inputs with the same words: 4-D q, k, v agreeing on B and H, Dk of q and k
// equal (C6), as many values as keys, a mask that fits, dropout in [0, 1), a
// fill that is -inf or finite, a positive cosine temperature.
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
// attention_reference is attention_forward<float>; the gradient checks run the
// double instantiation (finite differences need more digits than float has).
// The arrays are row-major with the shapes below; inputs are not checked here
// beyond mask.check (check_attention_inputs is the Tensor entry's job).
struct AttentionSizes {
    int64_t B = 0, H = 0, Tq = 0, Tk = 0, Dk = 0, Dv = 0;
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
// their loops: the rows the scores are taken of (Q̂, K̂, L2-normalised, under the
// cosine scale; q and k themselves otherwise), the factor, and dropout's 1/(1-p).
template <class T>
struct ScoreInputs {
    std::vector<T> qn, kn;  // the normalised copies (cosine only)
    const T* q = nullptr;
    const T* k = nullptr;
    T scale = T(1);
    bool dropping = false;  // train mode with p > 0
    T keep_scale = T(1);
};
template <class T>
ScoreInputs<T> score_inputs(const T* q, const T* k, const AttentionSizes& n, const AttentionOptions& opt);
// out (B, H, Tq, Dv) from q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv).
template <class T>
void attention_forward(T* out, const T* q, const T* k, const T* v, const AttentionSizes& n, const Mask& mask,
                       const AttentionOptions& opt, AttentionSteps<T>* steps = nullptr);

}  // namespace attn
