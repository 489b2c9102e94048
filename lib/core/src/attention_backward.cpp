// The backward pass of scaled dot-product attention: the readable CPU reference
// (formulas and shapes in attn/core/attention_backward.hpp).
#include "attn/core/attention_backward.hpp"

#include <algorithm>
#include <cmath>

#include <Eigen/Core>
#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

namespace {

// dx for x̂ = x / max(|x|, eps), row by row (rows, d): x holds the raw rows, dxh
// the gradient at x̂ on entry and the gradient at x on exit.
template <class T>
void l2_normalize_rows_backward(T* dxh, const T* x, int64_t rows, int64_t d) {
    for (int64_t r = 0; r < rows; ++r) {
        const T* x_r = x + r * d;
        T* g_r = dxh + r * d;
        double ss = 0;
        for (int64_t c = 0; c < d; ++c) ss += static_cast<double>(x_r[c]) * x_r[c];
        const double norm = std::sqrt(ss);
        if (norm > kL2NormalizeEps) {
            // x̂ = x/|x|: dx = (dx̂ − x̂ (x̂·dx̂)) / |x|
            const T inv = static_cast<T>(1.0 / norm);
            T dot = 0;  // x̂ · dx̂
            for (int64_t c = 0; c < d; ++c) dot += x_r[c] * inv * g_r[c];
            for (int64_t c = 0; c < d; ++c) g_r[c] = (g_r[c] - x_r[c] * inv * dot) * inv;
        } else {
            // x̂ = x/eps, a constant divisor: dx = dx̂ / eps
            const T inv = static_cast<T>(1.0 / kL2NormalizeEps);
            for (int64_t c = 0; c < d; ++c) g_r[c] *= inv;
        }
    }
}

// The transpose of rope_rotate (attn/core/attention.hpp): each pair (c, c + d/2) at
// position pos turned by −pos·base^(−2c/d), the inverse of a rotation.
template <class T>
void rope_rotate_back(T* x, int64_t seqs, int64_t rows, int64_t d, int64_t pos0, double base) {
    const int64_t half = d / 2;
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t c = 0; c < half; ++c) {
            const double a =
                static_cast<double>(pos0 + t) * std::pow(base, -2.0 * static_cast<double>(c) / static_cast<double>(d));
            const T cs = static_cast<T>(std::cos(a)), sn = static_cast<T>(std::sin(a));
            for (int64_t s = 0; s < seqs; ++s) {
                T* row = x + (s * rows + t) * d;
                const T g1 = row[c], g2 = row[c + half];
                row[c] = g1 * cs + g2 * sn;
                row[c + half] = g2 * cs - g1 * sn;
            }
        }
}

}  // namespace

template <class T>
void attention_backward_reference(T* dq_p, T* dk_p, T* dv_p, const T* q_in, const T* k_in, const T* v_p,
                                  const T* dout_p, const AttentionSizes& n, const Mask& mask,
                                  const AttentionOptions& opt, AttentionBackwardSteps<T>* rec, const T* factor) {
    // q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv), dout (B, H, Tq, Dv)
    // P, Pd, dPd, dP, dS are (B, H, Tq, Tk)
    using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const int64_t B = n.B, H = n.H, Tq = n.Tq, Tk = n.Tk, Dk = n.Dk, Dv = n.Dv, Hkv = n.kv_heads();
    const T cap = static_cast<T>(opt.softcap);

    // pass 0: the forward again, for P and Pd (a reference keeps nothing between calls)
    std::vector<T> out(static_cast<size_t>(B * H * Tq * Dv));
    AttentionSteps<T> fwd;
    attention_reference(out.data(), q_in, k_in, v_p, n, mask, opt, &fwd, factor);
    const bool cosine = opt.scale.kind == ScaleKind::Cosine;
    const ScoreInputs<T> in = score_inputs(q_in, k_in, n, opt);  // Q̂, K̂ under the cosine scale
    const T* q = in.q;
    const T* k = in.k;
    const T scale = factor != nullptr ? *factor : in.scale;

    const size_t nscores = static_cast<size_t>(B * H * Tq * Tk);
    if (rec != nullptr)
        for (auto* s : {&rec->d_weights_dropped, &rec->d_weights, &rec->d_scores}) s->assign(nscores, T(0));
    // grouped-query heads: each kv head sums the gradients of the query heads that read it
    std::fill(dk_p, dk_p + B * Hkv * Tk * Dk, T(0));
    std::fill(dv_p, dv_p + B * Hkv * Tk * Dv, T(0));
    Mat dP(Tq, Tk), dS(Tq, Tk);
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t h = 0; h < H; ++h) {
            const MaskRow mask_b = mask.row(b, h, Tk);
            const int64_t bh = b * H + h;
            const int64_t bkv = b * Hkv + n.kv_head(h);
            const size_t off = static_cast<size_t>(bh * Tq * Tk);
            Eigen::Map<const Mat> P(fwd.weights.data() + off, Tq, Tk);
            Eigen::Map<const Mat> Pd(fwd.weights_dropped.data() + off, Tq, Tk);
            Eigen::Map<const Mat> q_bh(q + bh * Tq * Dk, Tq, Dk);
            Eigen::Map<const Mat> k_bh(k + bkv * Tk * Dk, Tk, Dk);
            Eigen::Map<const Mat> v_bh(v_p + bkv * Tk * Dv, Tk, Dv);
            Eigen::Map<const Mat> dO(dout_p + bh * Tq * Dv, Tq, Dv);
            Eigen::Map<Mat> dq_bh(dq_p + bh * Tq * Dk, Tq, Dk);
            Eigen::Map<Mat> dk_bh(dk_p + bkv * Tk * Dk, Tk, Dk);
            Eigen::Map<Mat> dv_bh(dv_p + bkv * Tk * Dv, Tk, Dv);

            // step 1: dV = Pdᵀ · dO (Tk, Dv)
            dv_bh.noalias() += Pd.transpose() * dO;
            // step 2: dPd = dO · Vᵀ (Tq, Tk)
            dP.noalias() = dO * v_bh.transpose();
            if (rec != nullptr) std::copy(dP.data(), dP.data() + Tq * Tk, rec->d_weights_dropped.data() + off);
            // step 3: through dropout: dP = dPd ∘ keep / (1 − p), the forward's own mask
            in.drop(dP, off, opt);
            if (rec != nullptr) std::copy(dP.data(), dP.data() + Tq * Tk, rec->d_weights.data() + off);
            // step 4: through softmax: dS = P ∘ (dP − rowsum(P ∘ dP)), then masked_fill's zero gradient
            for (int64_t i = 0; i < Tq; ++i) {
                T dot = 0;  // Σ_j P_ij dP_ij
                for (int64_t j = 0; j < Tk; ++j) dot += P(i, j) * dP(i, j);
                for (int64_t j = 0; j < Tk; ++j)
                    dS(i, j) = mask_b.allowed(i, j) ? P(i, j) * (dP(i, j) - dot) : T(0);
            }
            if (rec != nullptr) std::copy(dS.data(), dS.data() + Tq * Tk, rec->d_scores.data() + off);
            // step 4b: through the softcap S = c·tanh(x/c), x = scale·raw: dx = dS ∘ (1 − tanh²(x/c));
            // ALiBi and the additive mask are constants added to S: dS passes unchanged
            if (cap > T(0))
                for (int64_t i = 0; i < Tq; ++i)
                    for (int64_t j = 0; j < Tk; ++j) {
                        const T th = std::tanh(fwd.scores_raw[off + static_cast<size_t>(i * Tk + j)] * scale / cap);
                        dS(i, j) *= T(1) - th * th;
                    }
            // step 5: through x = Q̂·K̂ᵀ·scale
            dq_bh.noalias() = dS * k_bh;               // (Tq, Dk)
            dq_bh *= scale;
            dk_bh.noalias() += scale * (dS.transpose() * q_bh);   // (Tk, Dk), summed over the group
        }
    }
    // step 6: cosine: back through q̂ = q̃ / max(|q̃|, eps), k̂ likewise (q̃ = q, or RoPE(q))
    if (cosine) {
        std::vector<T> qr(q_in, q_in + B * H * Tq * Dk), kr(k_in, k_in + B * Hkv * Tk * Dk);
        if (opt.rope) {
            rope_rotate(qr.data(), B * H, Tq, Dk, opt.query_offset, static_cast<double>(opt.rope_base));
            rope_rotate(kr.data(), B * Hkv, Tk, Dk, 0, static_cast<double>(opt.rope_base));
        }
        l2_normalize_rows_backward(dq_p, qr.data(), B * H * Tq, Dk);
        l2_normalize_rows_backward(dk_p, kr.data(), B * Hkv * Tk, Dk);
    }
    // step 7: RoPE: back through the rotation, i.e. rotate the gradients by the opposite angles
    if (opt.rope) {
        rope_rotate_back(dq_p, B * H, Tq, Dk, opt.query_offset, static_cast<double>(opt.rope_base));
        rope_rotate_back(dk_p, B * Hkv, Tk, Dk, 0, static_cast<double>(opt.rope_base));
    }
}
template void attention_backward_reference<float>(float*, float*, float*, const float*, const float*,
                                                  const float*, const float*, const AttentionSizes&, const Mask&,
                                                  const AttentionOptions&, AttentionBackwardSteps<float>*,
                                                  const float*);
template void attention_backward_reference<double>(double*, double*, double*, const double*, const double*,
                                                   const double*, const double*, const AttentionSizes&, const Mask&,
                                                   const AttentionOptions&, AttentionBackwardSteps<double>*,
                                                   const double*);

void check_attention_dout(const Tensor& q, const Tensor& v, const Tensor& dout) {
    const Shape want{q.dim(0), q.dim(1), q.dim(2), v.dim(3)};
    if (dout.shape != want)
        throw ShapeError(fmt::format("the output gradient dO must have the output's shape {} (B, H, Tq, Dv), got {}",
                                     shape_str(want), shape_str(dout.shape)));
}

AttentionGrads attention_backward_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                            const AttentionOptions& opt, const Tensor& dout,
                                            AttentionBackwardRecord* rec) {
    check_attention_inputs(q, k, v, mask, opt);
    check_attention_dout(q, v, dout);
    const AttentionSizes n{q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3), k.dim(1)};
    AttentionGrads g{Tensor(q.shape), Tensor(k.shape), Tensor(v.shape)};
    AttentionBackwardSteps<float> steps;
    attention_backward_reference(g.dq.ptr(), g.dk.ptr(), g.dv.ptr(), q.ptr(), k.ptr(), v.ptr(), dout.ptr(), n, mask,
                                 opt, rec != nullptr ? &steps : nullptr);
    if (rec != nullptr) {
        const Shape sshape{n.B, n.H, n.Tq, n.Tk};
        rec->d_weights_dropped = Tensor::from(sshape, std::move(steps.d_weights_dropped));
        rec->d_weights = Tensor::from(sshape, std::move(steps.d_weights));
        rec->d_scores = Tensor::from(sshape, std::move(steps.d_scores));
    }
    return g;
}

}  // namespace attn
