// The experiments' small Transformer (attn/experiments/lab_model.hpp): forward and
// backward written op by op on the attn/train ops, attention written here so that
// dropout can go on the scores and single heads can be zeroed or cut off from the gradient.
#include "attn/experiments/lab_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "attn/core/attention.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "attn/cpu/linear_attention.hpp"
#include "attn/nn/fast_ops.hpp"
#include "attn/nn/ops.hpp"

namespace attn::lab {

const char* positions_name(Positions p) {
    switch (p) {
        case Positions::None: return "none";
        case Positions::Learned: return "learned";
        case Positions::Sinusoidal: return "sinusoidal";
    }
    return "?";
}

const char* attn_kind_name(AttnKind k) {
    switch (k) {
        case AttnKind::Softmax: return "softmax";
        case AttnKind::Window: return "window";
        case AttnKind::Strided: return "strided";
        case AttnKind::GlobalLocal: return "global+local";
        case AttnKind::EluPlusOne: return "elu+1";
        case AttnKind::Favor: return "favor+";
        case AttnKind::CosFormer: return "cosformer";
    }
    return "?";
}

bool attn_kind_linear(AttnKind k) {
    return k == AttnKind::EluPlusOne || k == AttnKind::Favor || k == AttnKind::CosFormer;
}

namespace {

int64_t dff(const LabConfig& c) { return c.d_ff > 0 ? c.d_ff : 4 * c.d_model; }

// Index of every tensor in the parameter list.
struct Layout {
    int64_t tok = 0, pos = -1;
    struct L {
        int64_t ln1w, ln1b, qw, qb, kw, kb, vw, vb, ow, ob, ln2w = -1, ln2b = -1, f1w = -1, f1b = -1, f2w = -1,
            f2b = -1;
    };
    std::vector<L> layers;
    int64_t lnfw = 0, lnfb = 0, head = 0, count = 0;
};

Layout layout_of(const LabConfig& c) {
    Layout y;
    int64_t i = 0;
    y.tok = i++;
    if (c.pos == Positions::Learned) y.pos = i++;
    for (int64_t l = 0; l < c.layers; ++l) {
        Layout::L a{};
        a.ln1w = i++, a.ln1b = i++, a.qw = i++, a.qb = i++, a.kw = i++, a.kb = i++, a.vw = i++, a.vb = i++;
        a.ow = i++, a.ob = i++;
        if (c.mlp) a.ln2w = i++, a.ln2b = i++, a.f1w = i++, a.f1b = i++, a.f2w = i++, a.f2b = i++;
        y.layers.push_back(a);
    }
    y.lnfw = i++, y.lnfb = i++, y.head = i++;
    y.count = i;
    return y;
}

void validate(const LabConfig& c) {
    auto bad = [](const std::string& s) { throw InputError(s); };
    if (c.vocab < 2) bad(fmt::format("lab model: vocab must be >= 2 (got {})", c.vocab));
    if (c.max_seq < 1) bad(fmt::format("lab model: max_seq must be >= 1 (got {})", c.max_seq));
    if (c.d_model < 2 || c.heads < 1 || c.d_head < 1 || c.layers < 1)
        bad("lab model: d_model >= 2, heads >= 1, d_head >= 1, layers >= 1");
    if (c.pos == Positions::Sinusoidal && c.d_model % 2 != 0) bad("lab model: sinusoidal positions need an even d_model");
    if (!(c.dropout >= 0.0f && c.dropout < 1.0f)) bad(fmt::format("lab model: dropout must be in [0, 1) (got {})", c.dropout));
    const auto n = static_cast<size_t>(c.layers * c.heads);
    if (!c.head_off.empty() && c.head_off.size() != n) bad("lab model: head_off needs layers * heads entries");
    if (!c.head_blocked.empty() && c.head_blocked.size() != n) bad("lab model: head_blocked needs layers * heads entries");
    const LabAttention& a = c.attn;
    if ((a.kind == AttnKind::Window || a.kind == AttnKind::GlobalLocal) && a.window < 1)
        bad(fmt::format("lab model: the attention window must be >= 1 (got {})", a.window));
    if (a.kind == AttnKind::Strided && a.stride < 1) bad(fmt::format("lab model: the stride must be >= 1 (got {})", a.stride));
    if (a.kind == AttnKind::GlobalLocal && a.global < 0)
        bad(fmt::format("lab model: the global token count must be >= 0 (got {})", a.global));
    if (a.kind == AttnKind::Favor && a.features < 1)
        bad(fmt::format("lab model: FAVOR+ needs >= 1 feature (got {})", a.features));
    if (attn_kind_linear(a.kind) && (c.dropout > 0.0f || !c.head_off.empty() || !c.head_blocked.empty()))
        bad(fmt::format("lab model: {} attention takes no dropout, head_off or head_blocked", attn_kind_name(a.kind)));
}

bool flag(const std::vector<uint8_t>& v, int64_t l, int64_t H, int64_t h) {
    return !v.empty() && v[static_cast<size_t>(l * H + h)] != 0;
}

// The sparse pattern of the softmax kinds (none for Softmax and the linear kinds). Every
// pattern lets query i see key i, so no row is empty.
Mask sparse_mask(const LabConfig& c) {
    switch (c.attn.kind) {
        case AttnKind::Window: return Mask::sliding_window(c.attn.window, c.causal);
        case AttnKind::Strided: return Mask::strided(c.attn.stride, c.causal);
        case AttnKind::GlobalLocal: return Mask::global_local(c.attn.global, c.attn.window, c.causal);
        default: return Mask{};
    }
}

// Attention of one layer on q, k, v (N, H*Dh) -> out (N, H*Dh), saving P (B, H, T, T).
// Sparse kinds: masked pairs get weight 0 (their score is -inf), so the backward below,
// which multiplies by P, sends them exactly no gradient.
// keep/(1-p) applied to P (Weights) or to the scores before softmax (Scores).
template <class S>
void attn_fwd(S* out, S* P, const S* q, const S* k, const S* v, const LabConfig& c, int64_t l, int64_t B, int64_t T,
              bool train, uint64_t seed, int threads) {
    const int64_t H = c.heads, Dh = c.d_head, HD = H * Dh;
    const S f = S(1) / std::sqrt(S(Dh));
    const float p = train ? c.dropout : 0.0f;
    const S inv_keep = S(1) / (S(1) - S(p));
    const Mask mask = sparse_mask(c);
    const bool sparse = mask.is_sparse();
    const MaskRow mr = sparse ? mask.row(0, 0, T) : MaskRow{};
    parallel_for(B * H, threads, [&](int64_t bh, int) {
        const int64_t b = bh / H, h = bh % H;
        S* Pb = P + bh * T * T;
        const bool off = flag(c.head_off, l, H, h);
        std::vector<S> s(static_cast<size_t>(T));
        for (int64_t i = 0; i < T; ++i) {
            S* o = out + (b * T + i) * HD + h * Dh;
            S* pr = Pb + i * T;
            const int64_t jn = c.causal ? i + 1 : T;
            const S* qi = q + (b * T + i) * HD + h * Dh;
            S mx = -std::numeric_limits<S>::infinity();
            for (int64_t j = 0; j < jn; ++j) {
                const S* kj = k + (b * T + j) * HD + h * Dh;
                S d = 0;
                for (int64_t e = 0; e < Dh; ++e) d += qi[e] * kj[e];
                d *= f;
                if (p > 0 && c.drop_where == DropWhere::Scores)
                    d = dropout_drops(seed, static_cast<uint64_t>(bh * T * T + i * T + j), p) ? S(0) : d * inv_keep;
                if (sparse && !mr.allowed(i, j)) {  // the sparse pattern (C42): weight 0, so no gradient
                    s[static_cast<size_t>(j)] = -std::numeric_limits<S>::infinity();
                    continue;
                }
                s[static_cast<size_t>(j)] = d;
                mx = std::max(mx, d);
            }
            S sum = 0;
            for (int64_t j = 0; j < jn; ++j) sum += (pr[j] = std::exp(s[static_cast<size_t>(j)] - mx));
            for (int64_t j = 0; j < jn; ++j) pr[j] /= sum;
            for (int64_t j = jn; j < T; ++j) pr[j] = 0;
            for (int64_t e = 0; e < Dh; ++e) o[e] = 0;
            if (off) continue;
            for (int64_t j = 0; j < jn; ++j) {
                if (sparse && pr[j] == S(0)) continue;  // a masked key adds nothing
                S w = pr[j];
                if (p > 0 && c.drop_where == DropWhere::Weights)
                    w = dropout_drops(seed, static_cast<uint64_t>(bh * T * T + i * T + j), p) ? S(0) : w * inv_keep;
                const S* vj = v + (b * T + j) * HD + h * Dh;
                for (int64_t e = 0; e < Dh; ++e) o[e] += w * vj[e];
            }
        }
    });
}

// dq, dk, dv (N, H*Dh) overwritten. Zeroed heads pass nothing back; blocked heads pass
// nothing to q, k, v (their dq, dk, dv slices stay 0).
template <class S>
void attn_bwd(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v, const S* P, const LabConfig& c,
              int64_t l, int64_t B, int64_t T, bool train, uint64_t seed, int threads) {
    const int64_t H = c.heads, Dh = c.d_head, HD = H * Dh;
    const S f = S(1) / std::sqrt(S(Dh));
    const float p = train ? c.dropout : 0.0f;
    const S inv_keep = S(1) / (S(1) - S(p));
    parallel_for(B * H, threads, [&](int64_t bh, int) {
        const int64_t b = bh / H, h = bh % H;
        for (int64_t i = 0; i < T; ++i)
            for (int64_t e = 0; e < Dh; ++e) {
                const int64_t at = (b * T + i) * HD + h * Dh + e;
                dq[at] = dk[at] = dv[at] = 0;
            }
        if (flag(c.head_off, l, H, h) || flag(c.head_blocked, l, H, h)) return;
        const S* Pb = P + bh * T * T;
        const bool sparse = c.attn.kind == AttnKind::Window || c.attn.kind == AttnKind::Strided ||
                            c.attn.kind == AttnKind::GlobalLocal;
        std::vector<S> dP(static_cast<size_t>(T));
        for (int64_t i = 0; i < T; ++i) {
            const int64_t jn = c.causal ? i + 1 : T;
            const S* doi = dout + (b * T + i) * HD + h * Dh;
            const S* pr = Pb + i * T;
            S rs = 0;
            for (int64_t j = 0; j < jn; ++j) {
                const uint64_t idx = static_cast<uint64_t>(bh * T * T + i * T + j);
                const bool drop = p > 0 && dropout_drops(seed, idx, p);
                const S wkeep = (p > 0 && c.drop_where == DropWhere::Weights) ? (drop ? S(0) : inv_keep) : S(1);
                if (sparse && pr[j] == S(0)) {  // a masked key (or an underflowed weight): every term below is 0
                    dP[static_cast<size_t>(j)] = 0;
                    continue;
                }
                const S* vj = v + (b * T + j) * HD + h * Dh;
                S* dvj = dv + (b * T + j) * HD + h * Dh;
                S d = 0;
                for (int64_t e = 0; e < Dh; ++e) {
                    d += doi[e] * vj[e];
                    dvj[e] += pr[j] * wkeep * doi[e];
                }
                dP[static_cast<size_t>(j)] = d * wkeep;
                rs += pr[j] * dP[static_cast<size_t>(j)];
            }
            const S* qi = q + (b * T + i) * HD + h * Dh;
            S* dqi = dq + (b * T + i) * HD + h * Dh;
            for (int64_t j = 0; j < jn; ++j) {
                if (sparse && pr[j] == S(0)) continue;  // ds = 0
                S ds = pr[j] * (dP[static_cast<size_t>(j)] - rs);
                if (p > 0 && c.drop_where == DropWhere::Scores)
                    ds = dropout_drops(seed, static_cast<uint64_t>(bh * T * T + i * T + j), p) ? S(0) : ds * inv_keep;
                ds *= f;
                const S* kj = k + (b * T + j) * HD + h * Dh;
                S* dkj = dk + (b * T + j) * HD + h * Dh;
                for (int64_t e = 0; e < Dh; ++e) {
                    dqi[e] += ds * kj[e];
                    dkj[e] += ds * qi[e];
                }
            }
        }
    });
}

// ---- linear attention (AttnKind EluPlusOne, Favor, CosFormer), kept apart from the softmax code above.
// The layers hold q, k, v as (B, T, H*Dh); attn/cpu/linear_attention.hpp wants (B, H, T, Dh):
// float runs its multi-head forward and backward, double (the finite-difference checks) its
// per-head double twins, which are the same templated code.
LinearOptions linear_options(const LabConfig& c, int64_t l) {
    LinearOptions o;
    o.map = c.attn.kind == AttnKind::EluPlusOne ? FeatureMap::EluPlusOne
            : c.attn.kind == AttnKind::Favor    ? FeatureMap::Favor
                                                : FeatureMap::CosFormer;
    o.causal = c.causal;
    o.features = c.attn.features;
    o.seed = c.attn.feature_seed + static_cast<uint64_t>(l);
    o.draw = 0;  // one fixed draw per layer for the whole training run
    return o;
}

// (B, T, H*Dh) -> pair (b, h) as [T, Dh], and back (add = false: overwrite).
template <class S, class D>
void gather_pair(D* dst, const S* x, int64_t b, int64_t h, int64_t T, int64_t H, int64_t Dh) {
    for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < Dh; ++e) dst[t * Dh + e] = static_cast<D>(x[(b * T + t) * H * Dh + h * Dh + e]);
}
template <class S, class D>
void scatter_pair(S* x, const D* src, int64_t b, int64_t h, int64_t T, int64_t H, int64_t Dh) {
    for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < Dh; ++e) x[(b * T + t) * H * Dh + h * Dh + e] = static_cast<S>(src[t * Dh + e]);
}

template <class S>
void linear_fwd(S* out, const S* q, const S* k, const S* v, const LabConfig& c, int64_t l, int64_t B, int64_t T,
                int threads) {
    const int64_t H = c.heads, Dh = c.d_head, per = T * Dh;
    const LinearOptions o = linear_options(c, l);
    if constexpr (std::is_same_v<S, float>) {
        Tensor tq({B, H, T, Dh}), tk({B, H, T, Dh}), tv({B, H, T, Dh});
        parallel_for(B * H, threads, [&](int64_t bh, int) {
            gather_pair(tq.ptr() + bh * per, q, bh / H, bh % H, T, H, Dh);
            gather_pair(tk.ptr() + bh * per, k, bh / H, bh % H, T, H, Dh);
            gather_pair(tv.ptr() + bh * per, v, bh / H, bh % H, T, H, Dh);
        });
        const Tensor to = linear_attention(tq, tk, tv, o, threads);
        parallel_for(B * H, threads, [&](int64_t bh, int) { scatter_pair(out, to.ptr() + bh * per, bh / H, bh % H, T, H, Dh); });
    } else {
        parallel_for(B * H, threads, [&](int64_t bh, int) {
            std::vector<double> hq(static_cast<size_t>(per)), hk(hq.size()), hv(hq.size());
            gather_pair(hq.data(), q, bh / H, bh % H, T, H, Dh);
            gather_pair(hk.data(), k, bh / H, bh % H, T, H, Dh);
            gather_pair(hv.data(), v, bh / H, bh % H, T, H, Dh);
            const std::vector<double> ho = linear_head_f64(hq, hk, hv, T, Dh, Dh, o, false);
            scatter_pair(out, ho.data(), bh / H, bh % H, T, H, Dh);
        });
    }
}

template <class S>
void linear_bwd(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v, const LabConfig& c, int64_t l,
                int64_t B, int64_t T, int threads) {
    const int64_t H = c.heads, Dh = c.d_head, per = T * Dh;
    const LinearOptions o = linear_options(c, l);
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
            scatter_pair(dq, g.dq.ptr() + bh * per, bh / H, bh % H, T, H, Dh);
            scatter_pair(dk, g.dk.ptr() + bh * per, bh / H, bh % H, T, H, Dh);
            scatter_pair(dv, g.dv.ptr() + bh * per, bh / H, bh % H, T, H, Dh);
        });
    } else {
        parallel_for(B * H, threads, [&](int64_t bh, int) {
            std::vector<double> hq(static_cast<size_t>(per)), hk(hq.size()), hv(hq.size()), hdo(hq.size()), gq, gk, gv;
            gather_pair(hq.data(), q, bh / H, bh % H, T, H, Dh);
            gather_pair(hk.data(), k, bh / H, bh % H, T, H, Dh);
            gather_pair(hv.data(), v, bh / H, bh % H, T, H, Dh);
            gather_pair(hdo.data(), dout, bh / H, bh % H, T, H, Dh);
            linear_head_backward_f64(hq, hk, hv, T, Dh, Dh, o, hdo, gq, gk, gv);
            scatter_pair(dq, gq.data(), bh / H, bh % H, T, H, Dh);
            scatter_pair(dk, gk.data(), bh / H, bh % H, T, H, Dh);
            scatter_pair(dv, gv.data(), bh / H, bh % H, T, H, Dh);
        });
    }
}

template <class S>
using Buf = std::vector<S>;

}  // namespace

std::vector<std::pair<std::string, Shape>> lab_param_shapes(const LabConfig& c) {
    validate(c);
    const int64_t D = c.d_model, HD = c.heads * c.d_head, F = dff(c);
    std::vector<std::pair<std::string, Shape>> v;
    v.push_back({"tok_emb.weight", {c.vocab, D}});
    if (c.pos == Positions::Learned) v.push_back({"pos_emb.weight", {c.max_seq, D}});
    for (int64_t l = 0; l < c.layers; ++l) {
        const std::string p = fmt::format("blocks.{}.", l);
        v.push_back({p + "ln1.weight", {D}});
        v.push_back({p + "ln1.bias", {D}});
        for (const char* n : {"q_proj", "k_proj", "v_proj"}) {
            v.push_back({p + "attn." + n + ".weight", {HD, D}});
            v.push_back({p + "attn." + n + ".bias", {HD}});
        }
        v.push_back({p + "attn.o_proj.weight", {D, HD}});
        v.push_back({p + "attn.o_proj.bias", {D}});
        if (c.mlp) {
            v.push_back({p + "ln2.weight", {D}});
            v.push_back({p + "ln2.bias", {D}});
            v.push_back({p + "mlp.fc1.weight", {F, D}});
            v.push_back({p + "mlp.fc1.bias", {F}});
            v.push_back({p + "mlp.fc2.weight", {D, F}});
            v.push_back({p + "mlp.fc2.bias", {D}});
        }
    }
    v.push_back({"ln_f.weight", {D}});
    v.push_back({"ln_f.bias", {D}});
    v.push_back({"head.weight", {c.vocab, D}});
    return v;
}

template <class S>
LabStats lab_pass(const LabConfig& c, const std::vector<const S*>& W, const std::vector<S*>& G, const int32_t* tok,
                  const int32_t* tgt, int64_t B, int64_t T, bool train, uint64_t seed, int threads,
                  std::vector<std::vector<float>>* weights_out) {
    using namespace attn::nn;
    validate(c);
    const Layout y = layout_of(c);
    if (static_cast<int64_t>(W.size()) != y.count) throw InputError("lab model: wrong number of parameter tensors");
    if (T > c.max_seq || T < 1 || B < 1) throw InputError(fmt::format("lab model: T must be in [1, {}]", c.max_seq));
    const bool bwd = !G.empty();
    const int64_t D = c.d_model, HD = c.heads * c.d_head, F = dff(c), N = B * T, V = c.vocab, L = c.layers;
    const auto n = [](int64_t a) { return static_cast<size_t>(a); };
    for (int64_t i = 0; i < N; ++i)
        if (tok[i] < 0 || tok[i] >= V) throw InputError(fmt::format("lab model: token {} outside [0, {})", tok[i], V));

    // ---- forward, saving what the backward needs
    Buf<S> pos_table;
    const S* pos = nullptr;
    if (c.pos == Positions::Learned) pos = W[n(y.pos)];
    if (c.pos == Positions::Sinusoidal) {
        pos_table.resize(n(T * D));
        sinusoidal_positions(pos_table.data(), T, D);
        pos = pos_table.data();
    }
    Buf<S> zeros_pos;
    if (!pos) {
        zeros_pos.assign(n(T * D), S(0));
        pos = zeros_pos.data();
    }
    struct Acts {
        Buf<S> x_in, h1, m1, r1, q, k, v, P, att, x_mid, h2, m2, r2, fpre, fact;
    };
    std::vector<Acts> A(n(L));
    Buf<S> x(n(N * D));
    embedding_forward(x.data(), tok, W[n(y.tok)], pos, B, T, D);
    for (int64_t l = 0; l < L; ++l) {
        Acts& a = A[n(l)];
        const auto& ly = y.layers[n(l)];
        a.x_in = x;
        a.h1.resize(n(N * D)), a.m1.resize(n(N)), a.r1.resize(n(N));
        layernorm_forward_fast(a.h1.data(), a.m1.data(), a.r1.data(), x.data(), W[n(ly.ln1w)], W[n(ly.ln1b)], N, D,
                               threads);
        a.q.resize(n(N * HD)), a.k.resize(n(N * HD)), a.v.resize(n(N * HD));
        matmul_forward_fast(a.q.data(), a.h1.data(), W[n(ly.qw)], W[n(ly.qb)], N, D, HD, threads);
        matmul_forward_fast(a.k.data(), a.h1.data(), W[n(ly.kw)], W[n(ly.kb)], N, D, HD, threads);
        matmul_forward_fast(a.v.data(), a.h1.data(), W[n(ly.vw)], W[n(ly.vb)], N, D, HD, threads);
        a.att.resize(n(N * HD));
        const uint64_t lseed = mix64(seed ^ (0x1ab0000ULL + static_cast<uint64_t>(l)));
        if (attn_kind_linear(c.attn.kind)) {
            linear_fwd(a.att.data(), a.q.data(), a.k.data(), a.v.data(), c, l, B, T, threads);
        } else {
            a.P.resize(n(B * c.heads * T * T));
            attn_fwd(a.att.data(), a.P.data(), a.q.data(), a.k.data(), a.v.data(), c, l, B, T, train, lseed, threads);
        }
        Buf<S> o(n(N * D));
        matmul_forward_fast(o.data(), a.att.data(), W[n(ly.ow)], W[n(ly.ob)], N, HD, D, threads);
        for (int64_t i = 0; i < N * D; ++i) x[n(i)] += o[n(i)];
        a.x_mid = x;
        if (c.mlp) {
            a.h2.resize(n(N * D)), a.m2.resize(n(N)), a.r2.resize(n(N));
            layernorm_forward_fast(a.h2.data(), a.m2.data(), a.r2.data(), x.data(), W[n(ly.ln2w)], W[n(ly.ln2b)], N,
                                   D, threads);
            a.fpre.resize(n(N * F)), a.fact.resize(n(N * F));
            matmul_forward_fast(a.fpre.data(), a.h2.data(), W[n(ly.f1w)], W[n(ly.f1b)], N, D, F, threads);
            activation_forward_fast(a.fact.data(), a.fpre.data(), N * F, false, threads);
            matmul_forward_fast(o.data(), a.fact.data(), W[n(ly.f2w)], W[n(ly.f2b)], N, F, D, threads);
            for (int64_t i = 0; i < N * D; ++i) x[n(i)] += o[n(i)];
        }
        if (weights_out) {
            if (l == 0) weights_out->assign(n(L), {});
            (*weights_out)[n(l)].assign(a.P.begin(), a.P.end());
        }
    }
    Buf<S> hf(n(N * D)), mf(n(N)), rf(n(N)), logits(n(N * V)), probs(n(N * V)), losses(n(N));
    layernorm_forward_fast(hf.data(), mf.data(), rf.data(), x.data(), W[n(y.lnfw)], W[n(y.lnfb)], N, D, threads);
    matmul_forward_fast(logits.data(), hf.data(), W[n(y.head)], static_cast<const S*>(nullptr), N, D, V, threads);
    const int64_t scored = crossentropy_forward_fast(losses.data(), probs.data(), logits.data(), tgt, N, V, threads);
    LabStats st;
    double sum = 0;
    for (int64_t i = 0; i < N; ++i) {
        if (tgt[i] < 0) continue;
        sum += double(losses[n(i)]);
        const S* r = logits.data() + i * V;
        const int64_t am = std::max_element(r, r + V) - r;
        st.correct += (am == tgt[i]);
    }
    st.counted = scored;
    st.loss = scored ? sum / double(scored) : 0.0;
    if (!bwd) return st;

    // ---- backward
    const auto shapes = lab_param_shapes(c);
    for (int64_t t = 0; t < y.count; ++t) std::fill_n(G[n(t)], n(shape_numel(shapes[n(t)].second)), S(0));
    Buf<S> dlogits(n(N * V), S(0)), dh(n(N * D), S(0)), dx(n(N * D), S(0));
    if (scored > 0)
        crossentropy_backward_fast(dlogits.data(), probs.data(), tgt, S(1) / S(scored), N, V, threads);
    matmul_backward_fast(dh.data(), G[n(y.head)], static_cast<S*>(nullptr), dlogits.data(), hf.data(), W[n(y.head)], N, D,
                         V, threads);
    layernorm_backward_fast(dx.data(), G[n(y.lnfw)], G[n(y.lnfb)], dh.data(), x.data(), W[n(y.lnfw)], mf.data(),
                            rf.data(), N, D, threads);
    for (int64_t l = L - 1; l >= 0; --l) {
        Acts& a = A[n(l)];
        const auto& ly = y.layers[n(l)];
        if (c.mlp) {
            Buf<S> dfact(n(N * F), S(0)), dfpre(n(N * F), S(0)), dh2(n(N * D), S(0));
            matmul_backward_fast(dfact.data(), G[n(ly.f2w)], G[n(ly.f2b)], dx.data(), a.fact.data(), W[n(ly.f2w)], N,
                                 F, D, threads);
            activation_backward_fast(dfpre.data(), a.fpre.data(), dfact.data(), N * F, false, threads);
            matmul_backward_fast(dh2.data(), G[n(ly.f1w)], G[n(ly.f1b)], dfpre.data(), a.h2.data(), W[n(ly.f1w)], N, D,
                                 F, threads);
            layernorm_backward_fast(dx.data(), G[n(ly.ln2w)], G[n(ly.ln2b)], dh2.data(), a.x_mid.data(),
                                    W[n(ly.ln2w)], a.m2.data(), a.r2.data(), N, D, threads);
        }
        Buf<S> datt(n(N * HD), S(0)), dq(n(N * HD)), dk(n(N * HD)), dv(n(N * HD)), dh1(n(N * D), S(0));
        matmul_backward_fast(datt.data(), G[n(ly.ow)], G[n(ly.ob)], dx.data(), a.att.data(), W[n(ly.ow)], N, HD, D,
                             threads);
        const uint64_t lseed = mix64(seed ^ (0x1ab0000ULL + static_cast<uint64_t>(l)));
        if (attn_kind_linear(c.attn.kind))
            linear_bwd(dq.data(), dk.data(), dv.data(), datt.data(), a.q.data(), a.k.data(), a.v.data(), c, l, B, T,
                       threads);
        else
            attn_bwd(dq.data(), dk.data(), dv.data(), datt.data(), a.q.data(), a.k.data(), a.v.data(), a.P.data(), c,
                     l, B, T, train, lseed, threads);
        matmul_backward_fast(dh1.data(), G[n(ly.qw)], G[n(ly.qb)], dq.data(), a.h1.data(), W[n(ly.qw)], N, D, HD,
                             threads);
        matmul_backward_fast(dh1.data(), G[n(ly.kw)], G[n(ly.kb)], dk.data(), a.h1.data(), W[n(ly.kw)], N, D, HD,
                             threads);
        matmul_backward_fast(dh1.data(), G[n(ly.vw)], G[n(ly.vb)], dv.data(), a.h1.data(), W[n(ly.vw)], N, D, HD,
                             threads);
        layernorm_backward_fast(dx.data(), G[n(ly.ln1w)], G[n(ly.ln1b)], dh1.data(), a.x_in.data(), W[n(ly.ln1w)],
                                a.m1.data(), a.r1.data(), N, D, threads);
    }
    embedding_backward(G[n(y.tok)], y.pos >= 0 ? G[n(y.pos)] : static_cast<S*>(nullptr), dx.data(), tok, B, T, D);
    return st;
}

template LabStats lab_pass<float>(const LabConfig&, const std::vector<const float*>&, const std::vector<float*>&,
                                  const int32_t*, const int32_t*, int64_t, int64_t, bool, uint64_t, int,
                                  std::vector<std::vector<float>>*);
template LabStats lab_pass<double>(const LabConfig&, const std::vector<const double*>&, const std::vector<double*>&,
                                   const int32_t*, const int32_t*, int64_t, int64_t, bool, uint64_t, int,
                                   std::vector<std::vector<float>>*);

LabModel::LabModel(LabConfig c) : cfg_(std::move(c)) {
    for (const auto& [name, shape] : lab_param_shapes(cfg_)) {
        names_.push_back(name);
        w_.emplace_back(shape);
        g_.emplace_back(shape);
    }
}

void LabModel::init(uint64_t seed) {
    for (size_t t = 0; t < w_.size(); ++t) {
        Rng rng(seed, 0x1ab + t);
        const std::string& nm = names_[t];
        auto& d = w_[t].data;
        const bool is_ln = nm.find("ln") != std::string::npos;
        const bool is_bias = nm.size() > 5 && nm.compare(nm.size() - 5, 5, ".bias") == 0;
        if (is_ln) {
            std::fill(d.begin(), d.end(), is_bias ? 0.0f : 1.0f);
        } else if (nm == "tok_emb.weight" || nm == "pos_emb.weight") {
            for (float& x : d) x = rng.normal(0.0f, cfg_.emb_std);
        } else {
            // nn.Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
            const Shape& s = w_[is_bias ? t - 1 : t].shape;
            const float bound = 1.0f / std::sqrt(static_cast<float>(s[1]));
            for (float& x : d) x = rng.uniform(-bound, bound);
            if (!is_bias && (nm.find("q_proj") != std::string::npos || nm.find("k_proj") != std::string::npos))
                for (float& x : d) x *= cfg_.qk_gain;
        }
    }
}

LabStats LabModel::step(const int32_t* tok, const int32_t* tgt, int64_t B, int64_t T, uint64_t seed, int threads) {
    std::vector<const float*> W;
    std::vector<float*> G;
    for (size_t t = 0; t < w_.size(); ++t) W.push_back(w_[t].data.data()), G.push_back(g_[t].data.data());
    return lab_pass<float>(cfg_, W, G, tok, tgt, B, T, true, seed, threads);
}

LabStats LabModel::evaluate(const int32_t* tok, const int32_t* tgt, int64_t B, int64_t T, int threads,
                            std::vector<std::vector<float>>* weights_out) {
    std::vector<const float*> W;
    for (auto& t : w_) W.push_back(t.data.data());
    return lab_pass<float>(cfg_, W, {}, tok, tgt, B, T, false, 0, threads, weights_out);
}

std::vector<Param> LabModel::params() {
    std::vector<Param> p;
    for (size_t t = 0; t < w_.size(); ++t) {
        const bool decay = w_[t].shape.size() == 2;
        p.push_back(Param{names_[t], &w_[t], &g_[t], decay});
    }
    return p;
}

int64_t LabModel::num_params() const {
    int64_t s = 0;
    for (const auto& t : w_) s += t.numel();
    return s;
}

}  // namespace attn::lab
