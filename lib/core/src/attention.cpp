// Scaled dot-product attention: the readable CPU reference, the source of truth
// every faster path is checked against (see attn/core/attention.hpp).
#include "attn/core/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <Eigen/Core>
#include <fmt/format.h>

#include "attn/core/dropout.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"

namespace attn {

float Scale::factor(int64_t Dk) const {
    switch (kind) {
        case ScaleKind::InvSqrtDk: return Dk > 0 ? 1.0f / std::sqrt(static_cast<float>(Dk)) : 1.0f;
        case ScaleKind::None: return 1.0f;
        case ScaleKind::Constant: return value;
        case ScaleKind::Cosine: return 1.0f / value;
    }
    return 1.0f;
}

std::string scale_name(const Scale& s) {
    switch (s.kind) {
        case ScaleKind::InvSqrtDk: return "sqrt";
        case ScaleKind::None: return "none";
        case ScaleKind::Constant: return fmt::format("{}", s.value);
        case ScaleKind::Cosine: return s.value == 1.0f ? "cosine" : fmt::format("cosine:{}", s.value);
    }
    return "?";
}

bool dropout_in_range(double p) { return p >= 0.0 && p < 1.0 && static_cast<float>(p) < 1.0f; }
void check_dropout(double p, std::string_view who) {
    if (!dropout_in_range(p)) throw InputError(fmt::format("{}: {}, got {}", who, kDropoutRule, p));
}

bool dropout_drops(uint64_t seed, uint64_t flat_index, float p) {
    return p > 0.0f && counter_uniform(seed, flat_index) < p;
}

template <class T>
void softmax_rows(T* x, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; ++r) {
        T* row = x + r * n;
        // pass 1: row max (subtracting it keeps exp() <= 1: no overflow); a NaN wins (max_nan)
        T mx = -std::numeric_limits<T>::infinity();
        for (int64_t j = 0; j < n; ++j) mx = max_nan(mx, row[j]);
        if (mx == -std::numeric_limits<T>::infinity()) {
            // every key masked with -inf: defined as all-zero weights (see attention.hpp)
            std::fill(row, row + n, T(0));
            continue;
        }
        // pass 2: exp and sum
        T sum = 0;
        for (int64_t j = 0; j < n; ++j) {
            row[j] = std::exp(row[j] - mx);
            sum += row[j];
        }
        // pass 3: normalise
        const T inv = T(1) / sum;
        for (int64_t j = 0; j < n; ++j) row[j] *= inv;
    }
}
template void softmax_rows<float>(float*, int64_t, int64_t);
template void softmax_rows<double>(double*, int64_t, int64_t);

void check_attention_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                            const AttentionOptions& opt) {
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
        throw ShapeError(fmt::format("attention wants 4-D (B, H, T, d) tensors, got Q {}, K {}, V {}",
                                     shape_str(q.shape), shape_str(k.shape), shape_str(v.shape)));
    if (q.dim(0) != k.dim(0) || v.dim(0) != k.dim(0) || v.dim(1) != k.dim(1))
        throw ShapeError(fmt::format("Q {}, K {}, V {} disagree on batch or heads", shape_str(q.shape),
                                     shape_str(k.shape), shape_str(v.shape)));
    if (k.dim(1) == 0 ? q.dim(1) != 0 : q.dim(1) % k.dim(1) != 0)
        throw ShapeError(fmt::format("Q {} has {} heads, not a multiple of the {} heads of K {} and V (grouped-query "
                                     "attention needs H_q = g·H_kv)",
                                     shape_str(q.shape), q.dim(1), k.dim(1), shape_str(k.shape)));
    if (q.dim(3) != k.dim(3))
        throw ShapeError(
            fmt::format("Q {} and K {} must share Dk for Q·Kᵀ (C6)", shape_str(q.shape), shape_str(k.shape)));
    if (k.dim(2) != v.dim(2))
        throw ShapeError(fmt::format("K {} and V {} must have the same number of keys", shape_str(k.shape),
                                     shape_str(v.shape)));
    mask.check(q.dim(0), q.dim(1), q.dim(2), k.dim(2));
    check_dropout(opt.dropout, "dropout");
    if (std::isnan(opt.fill) || opt.fill == INFINITY) throw InputError("the fill must be -inf or a finite number");
    if (opt.scale.kind == ScaleKind::Cosine && !(opt.scale.value > 0.0f))
        throw InputError("the cosine temperature must be > 0");
    if (opt.rope && q.dim(3) % 2 != 0)
        throw ShapeError(fmt::format("RoPE rotates pairs of dims (d, d + Dk/2): Dk must be even, got Q {}",
                                     shape_str(q.shape)));
    if (opt.rope && !(opt.rope_base > 1.0f && std::isfinite(opt.rope_base)))
        throw InputError(fmt::format("the RoPE base must be a finite number > 1, got {}", opt.rope_base));
    if (!(opt.softcap >= 0.0f && std::isfinite(opt.softcap)))
        throw InputError(fmt::format("the softcap must be a finite number > 0 (or 0: off), got {}", opt.softcap));
    if (opt.query_offset < 0)
        throw InputError(fmt::format("the query offset must be >= 0, got {}", opt.query_offset));
}

std::string score_features(const Tensor& q, const Tensor& k, const AttentionOptions& opt) {
    std::string s;
    auto add = [&s](const std::string& w) { s += (s.empty() ? "" : ", ") + w; };
    if (q.rank() == 4 && k.rank() == 4 && q.dim(1) != k.dim(1))
        add(fmt::format("grouped-query heads (H_q {}, H_kv {})", q.dim(1), k.dim(1)));
    if (opt.rope) add("RoPE");
    if (opt.alibi) add("ALiBi");
    if (opt.softcap > 0.0f) add("softcap");
    if (opt.query_offset != 0) add("a query offset");
    return s;
}

void refuse_score_options(const std::string& who, const Tensor& q, const Tensor& k, const AttentionOptions& opt) {
    const std::string f = score_features(q, k, opt);
    if (!f.empty())
        throw InputError(fmt::format("{} does not implement {} (the reference and the tiled CPU kernel do)", who, f));
}

std::vector<double> alibi_slopes(int64_t H) {
    std::vector<double> m;
    if (H <= 0) return m;
    int64_t n = 1;  // the largest power of two <= H
    while (n * 2 <= H) n *= 2;
    for (int64_t h = 0; h < n; ++h) m.push_back(std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(n)));
    // the rest: every other slope of 2n heads, i.e. the odd steps 2^(-4(2k+1)/n)
    for (int64_t k = 0; k < H - n; ++k)
        m.push_back(std::exp2(-4.0 * static_cast<double>(2 * k + 1) / static_cast<double>(n)));
    return m;
}

template <class T>
void rope_rotate(T* x, int64_t seqs, int64_t rows, int64_t d, int64_t pos0, double base) {
    const int64_t half = d / 2;
    std::vector<double> theta(static_cast<size_t>(half));
    for (int64_t c = 0; c < half; ++c)
        theta[static_cast<size_t>(c)] = std::pow(base, -2.0 * static_cast<double>(c) / static_cast<double>(d));
    for (int64_t t = 0; t < rows; ++t) {
        const double pos = static_cast<double>(pos0 + t);
        for (int64_t c = 0; c < half; ++c) {
            const double a = pos * theta[static_cast<size_t>(c)];
            const T cs = static_cast<T>(std::cos(a)), sn = static_cast<T>(std::sin(a));
            for (int64_t s = 0; s < seqs; ++s) {
                T* row = x + (s * rows + t) * d;
                const T x1 = row[c], x2 = row[c + half];
                // rotate-half: x·cos + rotate_half(x)·sin, rotate_half(x) = (−x2, x1)
                row[c] = x1 * cs - x2 * sn;
                row[c + half] = x2 * cs + x1 * sn;
            }
        }
    }
}
template void rope_rotate<float>(float*, int64_t, int64_t, int64_t, int64_t, double);
template void rope_rotate<double>(double*, int64_t, int64_t, int64_t, int64_t, double);

template <class T>
void l2_normalize_rows(T* x, int64_t rows, int64_t d) {
    for (int64_t r = 0; r < rows; ++r) {
        T* row = x + r * d;
        double ss = 0;
        for (int64_t c = 0; c < d; ++c) ss += static_cast<double>(row[c]) * row[c];
        const T inv = T(1) / static_cast<T>(std::max(std::sqrt(ss), kL2NormalizeEps));
        for (int64_t c = 0; c < d; ++c) row[c] *= inv;
    }
}
template void l2_normalize_rows<float>(float*, int64_t, int64_t);
template void l2_normalize_rows<double>(double*, int64_t, int64_t);

template <class T>
T scale_factor(const Scale& s, int64_t Dk) {
    if constexpr (std::is_same_v<T, float>) {
        return s.factor(Dk);
    } else {
        switch (s.kind) {
            case ScaleKind::InvSqrtDk: return Dk > 0 ? T(1) / std::sqrt(static_cast<T>(Dk)) : T(1);
            case ScaleKind::None: return T(1);
            case ScaleKind::Constant: return static_cast<T>(s.value);
            case ScaleKind::Cosine: return T(1) / static_cast<T>(s.value);
        }
        return T(1);
    }
}
template float scale_factor<float>(const Scale&, int64_t);
template double scale_factor<double>(const Scale&, int64_t);

template <class T>
ScoreInputs<T> score_inputs(const T* q, const T* k, const AttentionSizes& n, const AttentionOptions& opt) {
    ScoreInputs<T> in;
    in.q = q;
    in.k = k;
    const bool cosine = opt.scale.kind == ScaleKind::Cosine;
    if (cosine || opt.rope) {
        in.qn.assign(q, q + n.B * n.H * n.Tq * n.Dk);
        in.kn.assign(k, k + n.B * n.kv_heads() * n.Tk * n.Dk);
        if (opt.rope) {
            // queries at query_offset + i, keys at j; the rotation keeps norms, so the
            // order against the cosine normalisation does not matter
            rope_rotate(in.qn.data(), n.B * n.H, n.Tq, n.Dk, opt.query_offset, static_cast<double>(opt.rope_base));
            rope_rotate(in.kn.data(), n.B * n.kv_heads(), n.Tk, n.Dk, 0, static_cast<double>(opt.rope_base));
        }
        if (cosine) {
            l2_normalize_rows(in.qn.data(), n.B * n.H * n.Tq, n.Dk);
            l2_normalize_rows(in.kn.data(), n.B * n.kv_heads() * n.Tk, n.Dk);
        }
        in.q = in.qn.data();
        in.k = in.kn.data();
    }
    in.scale = scale_factor<T>(opt.scale, n.Dk);
    in.dropping = opt.train && opt.dropout > 0.0f;
    in.keep_scale = in.dropping ? T(1) / (T(1) - static_cast<T>(opt.dropout)) : T(1);
    return in;
}
template ScoreInputs<float> score_inputs<float>(const float*, const float*, const AttentionSizes&,
                                                const AttentionOptions&);
template ScoreInputs<double> score_inputs<double>(const double*, const double*, const AttentionSizes&,
                                                  const AttentionOptions&);


template <class T>
void attention_reference(T* out_p, const T* q_in, const T* k_in, const T* v_p, const AttentionSizes& n,
                         const Mask& mask, const AttentionOptions& opt, AttentionSteps<T>* rec, const T* factor) {
    // q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv) -> out (B, H, Tq, Dv)
    // scores, weights are (B, H, Tq, Tk)
    using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const int64_t B = n.B, H = n.H, Tq = n.Tq, Tk = n.Tk, Dk = n.Dk, Dv = n.Dv, Hkv = n.kv_heads();
    mask.check(B, H, Tq, Tk);
    const std::vector<double> slopes = opt.alibi ? alibi_slopes(H) : std::vector<double>{};
    const T cap = static_cast<T>(opt.softcap);

    const ScoreInputs<T> in = score_inputs(q_in, k_in, n, opt);
    const T* q = in.q;
    const T* k = in.k;
    const T scale = factor != nullptr ? *factor : in.scale;

    const size_t nscores = static_cast<size_t>(B * H * Tq * Tk);
    if (rec != nullptr)
        for (auto* v :
             {&rec->scores_raw, &rec->scores_scaled, &rec->scores_masked, &rec->weights, &rec->weights_dropped})
            v->assign(nscores, T(0));
    Mat s(Tq, Tk);  // scores of one (b, h)
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t h = 0; h < H; ++h) {
            const MaskRow mask_b = mask.row(b, h, Tk);
            const int64_t bh = b * H + h;
            const int64_t bkv = b * Hkv + n.kv_head(h);  // grouped-query: the kv head this query head reads
            Eigen::Map<const Mat> q_bh(q + bh * Tq * Dk, Tq, Dk);
            Eigen::Map<const Mat> k_bh(k + bkv * Tk * Dk, Tk, Dk);
            Eigen::Map<const Mat> v_bh(v_p + bkv * Tk * Dv, Tk, Dv);
            Eigen::Map<Mat> out_bh(out_p + bh * Tq * Dv, Tq, Dv);
            const size_t off = static_cast<size_t>(bh * Tq * Tk);

            // pass 1: raw scores Q Kᵀ (Tq, Tk)
            s.noalias() = q_bh * k_bh.transpose();
            if (rec != nullptr) std::copy(s.data(), s.data() + Tq * Tk, rec->scores_raw.data() + off);
            // pass 2: scale, softcap, ALiBi's bias, the additive mask, then masked_fill(~allowed, fill)
            for (int64_t i = 0; i < Tq; ++i)
                for (int64_t j = 0; j < Tk; ++j) {
                    T x = s(i, j) * scale;
                    if (cap > T(0)) x = cap * std::tanh(x / cap);
                    if (opt.alibi) {
                        const double dist = std::abs(static_cast<double>(opt.query_offset + i - j));
                        x -= static_cast<T>(slopes[static_cast<size_t>(h)] * dist);
                    }
                    s(i, j) = x + static_cast<T>(mask_b.additive_at(i, j));
                }
            if (rec != nullptr) std::copy(s.data(), s.data() + Tq * Tk, rec->scores_scaled.data() + off);
            if (!mask.is_none())
                for (int64_t i = 0; i < Tq; ++i)
                    for (int64_t j = 0; j < Tk; ++j)
                        if (!mask_b.allowed(i, j)) s(i, j) = static_cast<T>(opt.fill);
            if (rec != nullptr) std::copy(s.data(), s.data() + Tq * Tk, rec->scores_masked.data() + off);
            // pass 3: softmax over keys
            softmax_rows(s.data(), Tq, Tk);
            if (rec != nullptr) std::copy(s.data(), s.data() + Tq * Tk, rec->weights.data() + off);
            // pass 4: dropout on the weights (after softmax, C38), kept ones scaled by 1/(1-p)
            in.drop(s, off, opt);
            if (rec != nullptr) std::copy(s.data(), s.data() + Tq * Tk, rec->weights_dropped.data() + off);
            // pass 5: weighted sum of values (Tq, Dv)
            out_bh.noalias() = s * v_bh;
        }
    }
}
template void attention_reference<float>(float*, const float*, const float*, const float*, const AttentionSizes&,
                                         const Mask&, const AttentionOptions&, AttentionSteps<float>*, const float*);
template void attention_reference<double>(double*, const double*, const double*, const double*,
                                          const AttentionSizes&, const Mask&, const AttentionOptions&,
                                          AttentionSteps<double>*, const double*);

Tensor attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                           const AttentionOptions& opt, AttentionRecord* rec) {
    // q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv) -> out (B, H, Tq, Dv): attention_reference<float>
    check_attention_inputs(q, k, v, mask, opt);
    const AttentionSizes n{q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3), k.dim(1)};
    Tensor out(Shape{n.B, n.H, n.Tq, n.Dv});
    AttentionSteps<float> steps;
    attention_reference(out.ptr(), q.ptr(), k.ptr(), v.ptr(), n, mask, opt, rec != nullptr ? &steps : nullptr);
    if (rec != nullptr) {
        const Shape sshape{n.B, n.H, n.Tq, n.Tk};
        rec->scores_raw = Tensor::from(sshape, std::move(steps.scores_raw));
        rec->scores_scaled = Tensor::from(sshape, std::move(steps.scores_scaled));
        rec->scores_masked = Tensor::from(sshape, std::move(steps.scores_masked));
        rec->weights = Tensor::from(sshape, std::move(steps.weights));
        rec->weights_dropped = Tensor::from(sshape, std::move(steps.weights_dropped));
    }
    return out;
}

}  // namespace attn
