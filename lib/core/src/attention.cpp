// Scaled dot-product attention: the readable CPU reference, the source of truth
// every faster path is checked against (see attn/core/attention.hpp).
#include "attn/core/attention.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <Eigen/Core>
#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"

namespace attn {

using MatRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

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

bool dropout_drops(uint64_t seed, uint64_t flat_index, float p) {
    return p > 0.0f && counter_uniform(seed, flat_index) < p;
}

void softmax_rows(float* x, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; ++r) {
        float* row = x + r * n;
        // pass 1: row max (subtracting it keeps exp() <= 1: no overflow)
        float mx = -INFINITY;
        for (int64_t j = 0; j < n; ++j) mx = std::max(mx, row[j]);
        if (mx == -INFINITY) {
            // every key masked with -inf: defined as all-zero weights (see attention.hpp)
            std::fill(row, row + n, 0.0f);
            continue;
        }
        // pass 2: exp and sum
        float sum = 0.0f;
        for (int64_t j = 0; j < n; ++j) {
            row[j] = std::exp(row[j] - mx);
            sum += row[j];
        }
        // pass 3: normalise
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j < n; ++j) row[j] *= inv;
    }
}

void check_attention_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                            const AttentionOptions& opt) {
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
        throw ShapeError(fmt::format("attention wants 4-D (B, H, T, d) tensors, got Q {}, K {}, V {}",
                                     shape_str(q.shape), shape_str(k.shape), shape_str(v.shape)));
    if (q.dim(0) != k.dim(0) || q.dim(1) != k.dim(1) || v.dim(0) != k.dim(0) || v.dim(1) != k.dim(1))
        throw ShapeError(fmt::format("Q {}, K {}, V {} disagree on batch or heads", shape_str(q.shape),
                                     shape_str(k.shape), shape_str(v.shape)));
    if (q.dim(3) != k.dim(3))
        throw ShapeError(fmt::format("Q {} and K {} must share Dk for Q·Kᵀ (C6)", shape_str(q.shape), shape_str(k.shape)));
    if (k.dim(2) != v.dim(2))
        throw ShapeError(fmt::format("K {} and V {} must have the same number of keys", shape_str(k.shape),
                                     shape_str(v.shape)));
    mask.check(q.dim(0), q.dim(2), k.dim(2));
    if (!(opt.dropout >= 0.0f && opt.dropout < 1.0f))
        throw InputError(fmt::format("dropout must be in [0, 1), got {}", opt.dropout));
    if (std::isnan(opt.fill) || opt.fill == INFINITY) throw InputError("the fill must be -inf or a finite number");
    if (opt.scale.kind == ScaleKind::Cosine && !(opt.scale.value > 0.0f))
        throw InputError("the cosine temperature must be > 0");
}

void l2_normalize_rows(float* x, int64_t rows, int64_t d) {
    for (int64_t r = 0; r < rows; ++r) {
        float* row = x + r * d;
        double ss = 0;
        for (int64_t c = 0; c < d; ++c) ss += static_cast<double>(row[c]) * row[c];
        const float inv = 1.0f / static_cast<float>(std::max(std::sqrt(ss), 1e-12));
        for (int64_t c = 0; c < d; ++c) row[c] *= inv;
    }
}

Tensor attention_reference(const Tensor& q_in, const Tensor& k_in, const Tensor& v, const Mask& mask,
                           const AttentionOptions& opt, AttentionRecord* rec) {
    // q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv) -> out (B, H, Tq, Dv)
    // scores, weights are (B, H, Tq, Tk)
    check_attention_inputs(q_in, k_in, v, mask, opt);
    const int64_t B = q_in.dim(0), H = q_in.dim(1), Tq = q_in.dim(2), Tk = k_in.dim(2);
    const int64_t Dk = q_in.dim(3), Dv = v.dim(3);

    const bool cosine = opt.scale.kind == ScaleKind::Cosine;
    Tensor qn, kn;
    if (cosine) {
        qn = q_in;
        kn = k_in;
        l2_normalize_rows(qn.ptr(), B * H * Tq, Dk);
        l2_normalize_rows(kn.ptr(), B * H * Tk, Dk);
    }
    const Tensor& q = cosine ? qn : q_in;
    const Tensor& k = cosine ? kn : k_in;
    const float scale = opt.scale.factor(Dk);
    const bool dropping = opt.train && opt.dropout > 0.0f;
    const float keep_scale = dropping ? 1.0f / (1.0f - opt.dropout) : 1.0f;

    const Shape sshape{B, H, Tq, Tk};
    if (rec != nullptr) {
        rec->scores_raw = Tensor(sshape);
        rec->scores_scaled = Tensor(sshape);
        rec->scores_masked = Tensor(sshape);
        rec->weights = Tensor(sshape);
        rec->weights_dropped = Tensor(sshape);
    }
    Tensor out(Shape{B, H, Tq, Dv});
    MatRM s(Tq, Tk);  // scores of one (b, h)
    for (int64_t b = 0; b < B; ++b) {
        const MaskRow mask_b = mask.row(b, Tk);
        for (int64_t h = 0; h < H; ++h) {
            const int64_t bh = b * H + h;
            Eigen::Map<const MatRM> q_bh(q.ptr() + bh * Tq * Dk, Tq, Dk);
            Eigen::Map<const MatRM> k_bh(k.ptr() + bh * Tk * Dk, Tk, Dk);
            Eigen::Map<const MatRM> v_bh(v.ptr() + bh * Tk * Dv, Tk, Dv);
            Eigen::Map<MatRM> out_bh(out.ptr() + bh * Tq * Dv, Tq, Dv);
            const size_t off = static_cast<size_t>(bh * Tq * Tk);

            // pass 1: raw scores Q Kᵀ (Tq, Tk)
            s.noalias() = q_bh * k_bh.transpose();
            if (rec != nullptr) std::copy(s.data(), s.data() + Tq * Tk, rec->scores_raw.ptr() + off);
            // pass 2: scale, add the additive mask, masked_fill(~allowed, fill)
            for (int64_t i = 0; i < Tq; ++i)
                for (int64_t j = 0; j < Tk; ++j) s(i, j) = s(i, j) * scale + mask_b.additive_at(i, j);
            if (rec != nullptr) std::copy(s.data(), s.data() + Tq * Tk, rec->scores_scaled.ptr() + off);
            if (!mask.is_none())
                for (int64_t i = 0; i < Tq; ++i)
                    for (int64_t j = 0; j < Tk; ++j)
                        if (!mask_b.allowed(i, j)) s(i, j) = opt.fill;
            if (rec != nullptr) std::copy(s.data(), s.data() + Tq * Tk, rec->scores_masked.ptr() + off);
            // pass 3: softmax over keys
            softmax_rows(s.data(), Tq, Tk);
            if (rec != nullptr) std::copy(s.data(), s.data() + Tq * Tk, rec->weights.ptr() + off);
            // pass 4: dropout on the weights (after softmax, C38), kept ones scaled by 1/(1-p)
            if (dropping)
                for (int64_t i = 0; i < Tq; ++i)
                    for (int64_t j = 0; j < Tk; ++j) {
                        const uint64_t flat = static_cast<uint64_t>(off) + static_cast<uint64_t>(i * Tk + j);
                        s(i, j) = dropout_drops(opt.seed, flat, opt.dropout) ? 0.0f : s(i, j) * keep_scale;
                    }
            if (rec != nullptr) std::copy(s.data(), s.data() + Tq * Tk, rec->weights_dropped.ptr() + off);
            // pass 5: weighted sum of values (Tq, Dv)
            out_bh.noalias() = s * v_bh;
        }
    }
    return out;
}

}  // namespace attn
