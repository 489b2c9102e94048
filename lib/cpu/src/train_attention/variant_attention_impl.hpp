// lib/cpu/src/train_attention/variant_attention_impl.hpp: the attention of every trained-model
// config the fused training kernel does not run (attn/cpu/variant_attention.hpp), written once over
// the scalar type: per (batch, head) pair in the reference's order, so that a padding mask can come
// from the tokens, a planted bug can break one step, dropout can go on the scores, a sparse pattern
// can mask pairs, and single heads can be zeroed or cut off from the gradient; the linear kinds go
// to attn/cpu/linear_attention.hpp. variant_attention.cpp instantiates it for float;
// lib/cpu/f64/variant_attention_f64.cpp for double (the tests' finite-difference checks, in
// attn_cpu_f64, which the library does not ship).
#pragma once

#include "attn/cpu/variant_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/tensor.hpp"
#include "attn/cpu/linear_attention.hpp"
#include "linear/linear_heads.hpp"

namespace attn::cpu {
namespace {

bool flag(const uint8_t* v, int64_t h) { return v != nullptr && v[h] != 0; }

// The sparse pattern of the softmax kinds (none for Softmax and the linear kinds). Every
// pattern lets query i see key i, so no row is empty.
Mask sparse_mask(const VariantKnobs& c) {
    switch (c.variant.kind) {
        case AttnKind::Window: return Mask::sliding_window(c.variant.window, c.causal);
        case AttnKind::Strided: return Mask::strided(c.variant.stride, c.causal);
        case AttnKind::GlobalLocal: return Mask::global_local(c.variant.global, c.variant.window, c.causal);
        default: return Mask{};
    }
}

// ---- linear attention (AttnKind EluPlusOne, Favor, CosFormer). The layers hold q, k, v as
// (B, T, H*Dh); attn/cpu/linear_attention.hpp wants (B, H, T, Dh): float runs its multi-head
// forward and backward, double (the finite-difference checks) its per-head double twins,
// which are the same templated code.
LinearOptions linear_options(const VariantKnobs& c) {
    LinearOptions o;
    o.map = c.variant.kind == AttnKind::EluPlusOne ? FeatureMap::EluPlusOne
            : c.variant.kind == AttnKind::Favor    ? FeatureMap::Favor
                                                   : FeatureMap::CosFormer;
    o.causal = c.causal;
    o.features = c.variant.features;
    o.seed = c.variant.feature_seed;  // the layer's own
    o.draw = 0;  // one fixed draw per layer for the whole training run
    return o;
}

// (B, T, H*Dh) -> pair (b, h) as [T, Dh]; and back, added
template <class S, class D>
void gather_pair(D* dst, const S* x, int64_t b, int64_t h, int64_t T, int64_t H, int64_t Dh) {
    for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < Dh; ++e) dst[t * Dh + e] = static_cast<D>(x[(b * T + t) * H * Dh + h * Dh + e]);
}
template <class S, class D>
void add_pair(S* x, const D* src, int64_t b, int64_t h, int64_t T, int64_t H, int64_t Dh) {
    for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < Dh; ++e) x[(b * T + t) * H * Dh + h * Dh + e] += static_cast<S>(src[t * Dh + e]);
}

template <class S>
void linear_forward(S* out, const S* q, const S* k, const S* v, const VariantKnobs& c, int64_t B, int64_t T,
                    int threads) {
    const int64_t H = c.heads, Dh = c.d_k, per = T * Dh;
    const LinearOptions o = linear_options(c);
    std::fill(out, out + B * T * H * Dh, S(0));
    if constexpr (std::is_same_v<S, float>) {
        Tensor tq({B, H, T, Dh}), tk({B, H, T, Dh}), tv({B, H, T, Dh});
        parallel_for(B * H, threads, [&](int64_t bh, int) {
            gather_pair(tq.ptr() + bh * per, q, bh / H, bh % H, T, H, Dh);
            gather_pair(tk.ptr() + bh * per, k, bh / H, bh % H, T, H, Dh);
            gather_pair(tv.ptr() + bh * per, v, bh / H, bh % H, T, H, Dh);
        });
        const Tensor to = linear_attention(tq, tk, tv, o, threads);
        parallel_for(B * H, threads,
                     [&](int64_t bh, int) { add_pair(out, to.ptr() + bh * per, bh / H, bh % H, T, H, Dh); });
    } else {
        parallel_for(B * H, threads, [&](int64_t bh, int) {
            std::vector<double> hq(static_cast<size_t>(per)), hk(hq.size()), hv(hq.size());
            gather_pair(hq.data(), q, bh / H, bh % H, T, H, Dh);
            gather_pair(hk.data(), k, bh / H, bh % H, T, H, Dh);
            gather_pair(hv.data(), v, bh / H, bh % H, T, H, Dh);
            std::vector<double> ho(hq.size());
            linear_heads::head_forward<double>(hq.data(), hk.data(), hv.data(), T, Dh, Dh, o, ho.data());
            add_pair(out, ho.data(), bh / H, bh % H, T, H, Dh);
        });
    }
}

template <class S>
void linear_backward(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v, const VariantKnobs& c,
                     int64_t B, int64_t T, int threads) {
    const int64_t H = c.heads, Dh = c.d_k, per = T * Dh;
    const LinearOptions o = linear_options(c);
    if constexpr (std::is_same_v<S, float>) {
        Tensor tq({B, H, T, Dh}), tk({B, H, T, Dh}), tv({B, H, T, Dh}), tdo({B, H, T, Dh});
        parallel_for(B * H, threads, [&](int64_t bh, int) {
            gather_pair(tq.ptr() + bh * per, q, bh / H, bh % H, T, H, Dh);
            gather_pair(tk.ptr() + bh * per, k, bh / H, bh % H, T, H, Dh);
            gather_pair(tv.ptr() + bh * per, v, bh / H, bh % H, T, H, Dh);
            gather_pair(tdo.ptr() + bh * per, dout, bh / H, bh % H, T, H, Dh);
        });
        const LinearGrads g = linear_attention_backward(tq, tk, tv, o, tdo, threads);
        parallel_for(B * H, threads, [&](int64_t bh, int) {
            add_pair(dq, g.dq.ptr() + bh * per, bh / H, bh % H, T, H, Dh);
            add_pair(dk, g.dk.ptr() + bh * per, bh / H, bh % H, T, H, Dh);
            add_pair(dv, g.dv.ptr() + bh * per, bh / H, bh % H, T, H, Dh);
        });
    } else {
        parallel_for(B * H, threads, [&](int64_t bh, int) {
            std::vector<double> hq(static_cast<size_t>(per)), hk(hq.size()), hv(hq.size()), hdo(hq.size()),
                gq(hq.size()), gk(hq.size()), gv(hq.size());
            gather_pair(hq.data(), q, bh / H, bh % H, T, H, Dh);
            gather_pair(hk.data(), k, bh / H, bh % H, T, H, Dh);
            gather_pair(hv.data(), v, bh / H, bh % H, T, H, Dh);
            gather_pair(hdo.data(), dout, bh / H, bh % H, T, H, Dh);
            linear_heads::head_backward<double>(hq.data(), hk.data(), hv.data(), T, Dh, Dh, o, hdo.data(), gq.data(),
                                                gk.data(), gv.data());
            add_pair(dq, gq.data(), bh / H, bh % H, T, H, Dh);
            add_pair(dk, gk.data(), bh / H, bh % H, T, H, Dh);
            add_pair(dv, gv.data(), bh / H, bh % H, T, H, Dh);
        });
    }
}

// Which keys query i of sequence b may see: the causal rule (inverted under the planted
// InvertedMask), the sparse pattern of the kind, and the padding mask from the tokens (on the
// keys; on the queries under the planted QuerySideMask).
struct Allowed {
    const VariantKnobs& c;
    const int32_t* tokens;
    int64_t T;
    Mask mask = sparse_mask(c);
    bool sparse = mask.is_sparse();
    MaskRow row = sparse ? mask.row(0, 0, T) : MaskRow{};
    bool operator()(int64_t b, int64_t i, int64_t j) const {
        bool k = !c.causal || j <= i;
        if (c.bug == AttnBug::InvertedMask) k = !k;
        if (sparse && !row.allowed(i, j)) k = false;
        if (c.pad_token >= 0) {
            const int64_t who = c.bug == AttnBug::QuerySideMask ? i : j;
            if (tokens[b * T + who] == c.pad_token) k = false;
        }
        return k;
    }
};

// HeadMerge's wrong layout: (B, T, H, Dv) stored as if it were (B, H, T, Dv), then read as
// (B, T, H*Dv). to_bug: the forward's permutation; else its inverse (the gradient's).
template <class S>
void head_merge_permute(S* dst, const S* src, int64_t B, int64_t T, int64_t H, int64_t Dv, bool to_bug) {
    const int64_t VS = H * Dv;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < H; ++h)
                for (int64_t d = 0; d < Dv; ++d) {
                    const int64_t right = (b * T + t) * VS + h * Dv + d, wrong = b * T * VS + (h * T + t) * Dv + d;
                    if (to_bug) dst[wrong] = src[right];
                    else dst[right] = src[wrong];
                }
}

}  // namespace

template <class S>
void variant_attention_forward(S* out, S* att, const S* q, const S* k, const S* v, const int32_t* tokens,
                               const VariantKnobs& c, int64_t B, int64_t T, S factor, float p, uint64_t seed,
                               int threads) {
    if (attn_kind_linear(c.variant.kind)) return linear_forward(out, q, k, v, c, B, T, threads);
    const int64_t H = c.heads, Dk = c.d_k, Dv = c.d_v, QS = H * Dk, VS = H * Dv;
    if (c.bug == AttnBug::TransposedScores) std::swap(q, k);
    if (c.bug == AttnBug::NoScale) factor = S(1);
    const S inv_keep = S(1) / (S(1) - S(p));
    const bool on_scores = p > 0 && c.drop_where == DropWhere::Scores;
    const bool on_weights = p > 0 && c.drop_where == DropWhere::Weights;
    const S fill = c.bug == AttnBug::FillZero ? S(0) : -std::numeric_limits<S>::infinity();
    const Allowed allowed{c, tokens, T};
    std::vector<S> merged(c.bug == AttnBug::HeadMerge ? static_cast<size_t>(B * T * VS) : 0);
    S* const o_all = merged.empty() ? out : merged.data();
    parallel_for(B * H, threads, [&](int64_t bh, int) {
        const int64_t b = bh / H, h = bh % H;
        const bool off = flag(c.head_off, h);
        for (int64_t i = 0; i < T; ++i) {
            S* pr = att + (bh * T + i) * T;
            const S* qi = q + (b * T + i) * QS + h * Dk;
            S mx = -std::numeric_limits<S>::infinity();
            for (int64_t j = 0; j < T; ++j) {
                S s = fill;  // a masked score: -inf (weight 0, no gradient), or the planted FillZero's 0
                if (allowed(b, i, j)) {
                    const S* kj = k + (b * T + j) * QS + h * Dk;
                    s = 0;
                    for (int64_t e = 0; e < Dk; ++e) s += qi[e] * kj[e];
                    s *= factor;
                    if (on_scores)
                        s = dropout_drops(seed, static_cast<uint64_t>((bh * T + i) * T + j), p) ? S(0) : s * inv_keep;
                }
                pr[j] = s;
                mx = max_nan(mx, s);  // a NaN wins: its row is NaN, as in torch.softmax
            }
            const bool none = mx == -std::numeric_limits<S>::infinity();
            S sum = 0;
            for (int64_t j = 0; j < T; ++j) {  // a row with every key masked gets weight 0 everywhere
                pr[j] = none ? S(0) : std::exp(pr[j] - mx);
                sum += pr[j];
            }
            for (int64_t j = 0; j < T; ++j) pr[j] = none ? S(0) : pr[j] / sum;
            S* o = o_all + (b * T + i) * VS + h * Dv;
            for (int64_t e = 0; e < Dv; ++e) o[e] = 0;
            if (off) continue;  // ablated: the weights are kept, the output is zero
            for (int64_t j = 0; j < T; ++j) {
                if (pr[j] == S(0)) continue;  // a masked key (or an underflowed weight) adds nothing
                S w = pr[j];
                if (on_weights)
                    w = dropout_drops(seed, static_cast<uint64_t>((bh * T + i) * T + j), p) ? S(0) : w * inv_keep;
                const S* vj = v + (b * T + j) * VS + h * Dv;
                for (int64_t e = 0; e < Dv; ++e) o[e] += w * vj[e];
            }
        }
    });
    if (!merged.empty()) head_merge_permute(out, merged.data(), B, T, H, Dv, true);
}

template <class S>
void variant_attention_backward(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v, const S* att,
                                const int32_t* tokens, const VariantKnobs& c, int64_t B, int64_t T, S factor, float p,
                                uint64_t seed, int threads) {
    if (attn_kind_linear(c.variant.kind)) return linear_backward(dq, dk, dv, dout, q, k, v, c, B, T, threads);
    const int64_t H = c.heads, Dk = c.d_k, Dv = c.d_v, QS = H * Dk, VS = H * Dv;
    if (c.bug == AttnBug::TransposedScores) {
        std::swap(q, k);
        std::swap(dq, dk);
    }
    if (c.bug == AttnBug::NoScale) factor = S(1);
    std::vector<S> unmerged;
    if (c.bug == AttnBug::HeadMerge) {  // the permutation's gradient: the inverse permutation
        unmerged.resize(static_cast<size_t>(B * T * VS));
        head_merge_permute(unmerged.data(), dout, B, T, H, Dv, false);
        dout = unmerged.data();
    }
    const S inv_keep = S(1) / (S(1) - S(p));
    const bool on_scores = p > 0 && c.drop_where == DropWhere::Scores;
    const bool on_weights = p > 0 && c.drop_where == DropWhere::Weights;
    const Allowed allowed{c, tokens, T};
    parallel_for(B * H, threads, [&](int64_t bh, int) {
        const int64_t b = bh / H, h = bh % H;
        if (flag(c.head_off, h) || flag(c.head_blocked, h)) return;
        std::vector<S> dP(static_cast<size_t>(T));
        for (int64_t i = 0; i < T; ++i) {
            const S* doi = dout + (b * T + i) * VS + h * Dv;
            const S* pr = att + (bh * T + i) * T;
            S rs = 0;
            for (int64_t j = 0; j < T; ++j) {
                if (pr[j] == S(0)) {  // a masked key (or an underflowed weight): every term below is 0
                    dP[static_cast<size_t>(j)] = 0;
                    continue;
                }
                const bool drop = on_weights && dropout_drops(seed, static_cast<uint64_t>((bh * T + i) * T + j), p);
                const S wkeep = on_weights ? (drop ? S(0) : inv_keep) : S(1);
                const S* vj = v + (b * T + j) * VS + h * Dv;
                S* dvj = dv + (b * T + j) * VS + h * Dv;
                S d = 0;
                for (int64_t e = 0; e < Dv; ++e) {
                    d += doi[e] * vj[e];
                    dvj[e] += pr[j] * wkeep * doi[e];
                }
                dP[static_cast<size_t>(j)] = d * wkeep;
                rs += pr[j] * dP[static_cast<size_t>(j)];
            }
            const S* qi = q + (b * T + i) * QS + h * Dk;
            S* dqi = dq + (b * T + i) * QS + h * Dk;
            for (int64_t j = 0; j < T; ++j) {
                // ds = 0 for a zero weight; a masked score is a constant (FillZero's 0 too): no gradient
                if (pr[j] == S(0) || !allowed(b, i, j)) continue;
                S ds = pr[j] * (dP[static_cast<size_t>(j)] - rs);
                if (on_scores)
                    ds = dropout_drops(seed, static_cast<uint64_t>((bh * T + i) * T + j), p) ? S(0) : ds * inv_keep;
                ds *= factor;
                const S* kj = k + (b * T + j) * QS + h * Dk;
                S* dkj = dk + (b * T + j) * QS + h * Dk;
                for (int64_t e = 0; e < Dk; ++e) {
                    dqi[e] += ds * kj[e];
                    dkj[e] += ds * qi[e];
                }
            }
        }
    });
}

}  // namespace attn::cpu
