// The attention pipeline in double, as the reference computes it and as each mistake of
// the catalogue computes it (attn/check/check.hpp).
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "attn/check/check.hpp"
#include "attn/core/attention.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/linear.hpp"
#include "attn/core/mask.hpp"
#include "internal.hpp"

namespace attn::check {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Which mistake is made, and in which of its forms.
struct Bug {
    std::string id;
    int form = 0;
    bool is(const char* name) const { return id == name; }
    bool is(const char* name, int f) const { return id == name && form == f; }
};

Arr zeros(Shape s) {
    Arr a;
    a.v.assign(static_cast<size_t>(shape_numel(s)), 0.0);
    a.shape = std::move(s);
    return a;
}

// y [N, O] = x [N, I] · Wᵀ (+ b), or x · W (a weight used without its transpose, O == I).
std::optional<Arr> project(const Arr& x, const Arr& W, const Arr* b, bool transposed_wrong) {
    const int64_t O = W.shape[0], I = W.shape[1], N = x.numel() / I;
    Shape s = x.shape;
    s.back() = O;
    Arr y = zeros(s);
    if (!transposed_wrong) {
        linear_forward<double>(y.v.data(), x.v.data(), W.v.data(), b != nullptr ? b->v.data() : nullptr, N, I, O);
        return y;
    }
    if (O != I) return std::nullopt;  // x·W would not even multiply
    for (int64_t n = 0; n < N; ++n)
        for (int64_t o = 0; o < O; ++o) {
            double acc = b != nullptr ? b->v[static_cast<size_t>(o)] : 0.0;
            for (int64_t i = 0; i < I; ++i)
                acc += x.v[static_cast<size_t>(n * I + i)] * W.v[static_cast<size_t>(i * O + o)];
            y.v[static_cast<size_t>(n * O + o)] = acc;
        }
    return y;
}

// [B, T, H·d] -> [B, H, T, d]: view as [B, T, H, d] and transpose, or (the mistake) reshape alone.
Arr split_heads(const Arr& y, int64_t H, bool reshape_only) {
    const int64_t B = y.shape[0], T = y.shape[1], d = y.shape[2] / H;
    Arr out = zeros({B, H, T, d});
    if (reshape_only) {
        out.v = y.v;
        return out;
    }
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < H; ++h)
                for (int64_t k = 0; k < d; ++k)
                    out.v[static_cast<size_t>(((b * H + h) * T + t) * d + k)] =
                        y.v[static_cast<size_t>((b * T + t) * H * d + h * d + k)];
    return out;
}

// [B, H, T, d] -> [B, T, H·d]
Arr merge_heads(const Arr& o, bool reshape_only) {
    const int64_t B = o.shape[0], H = o.shape[1], T = o.shape[2], d = o.shape[3];
    Arr out = zeros({B, T, H * d});
    if (reshape_only) {
        out.v = o.v;
        return out;
    }
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t t = 0; t < T; ++t)
                for (int64_t k = 0; k < d; ++k)
                    out.v[static_cast<size_t>((b * T + t) * H * d + h * d + k)] =
                        o.v[static_cast<size_t>(((b * H + h) * T + t) * d + k)];
    return out;
}

bool allowed(const MaskSpec& m, int64_t b, int64_t Tq, int64_t Tk, int64_t i, int64_t j) {
    if (m.causal && j > i) return false;
    if (!m.key_len.empty() && j >= m.key_len[static_cast<size_t>(b)]) return false;
    if (!m.dense.empty() && m.dense[static_cast<size_t>((b * Tq + i) * Tk + j)] == 0) return false;
    return true;
}

// The mask as the mistake reads it; nullopt when the mistake has nothing to get wrong.
std::optional<bool> bug_allowed(const MaskSpec& m, const Bug& bug, int64_t b, int64_t Tq, int64_t Tk, int64_t i,
                                int64_t j) {
    if (bug.is("causal-off-by-one")) {
        if (!m.causal) return std::nullopt;
        MaskSpec rest = m;
        rest.causal = false;
        const bool causal_ok = bug.form == 2 ? j <= i + 1 : j < i;
        return causal_ok && allowed(rest, b, Tq, Tk, i, j);
    }
    if (bug.is("mask-on-queries")) {
        if (m.key_len.empty()) return std::nullopt;
        MaskSpec rest = m;
        rest.key_len.clear();
        return i < m.key_len[static_cast<size_t>(b)] && allowed(rest, b, Tq, Tk, i, j);
    }
    if (bug.is("mask-inverted")) {
        if (m.is_none()) return std::nullopt;
        return !allowed(m, b, Tq, Tk, i, j);
    }
    return allowed(m, b, Tq, Tk, i, j);
}

bool changes_mask(const Bug& bug) {
    return bug.is("causal-off-by-one") || bug.is("mask-on-queries") || bug.is("mask-inverted");
}

// Softmax of each row of n; a row of -inf alone is zeros (attn's rule) or NaN (what a plain
// numpy softmax gives: exp(-inf - -inf)). `unstable`: no max subtracted, exp in the
// learner's precision, so it overflows where theirs would.
void softmax_row(double* x, int64_t n, int64_t stride, bool nan_empty, bool unstable, bool f64) {
    auto at = [&](int64_t j) -> double& { return x[j * stride]; };
    if (unstable) {
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) {
            at(j) = f64 ? std::exp(at(j)) : static_cast<double>(std::exp(static_cast<float>(at(j))));
            sum += at(j);
        }
        if (!f64) sum = static_cast<double>(static_cast<float>(sum));
        for (int64_t j = 0; j < n; ++j) at(j) /= sum;
        return;
    }
    double m = -kInf;
    for (int64_t j = 0; j < n; ++j) m = max_nan(m, at(j));
    if (m == -kInf) {
        for (int64_t j = 0; j < n; ++j) at(j) = nan_empty ? kNaN : 0.0;
        return;
    }
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += at(j) = std::exp(at(j) - m);
    for (int64_t j = 0; j < n; ++j) at(j) /= sum;
}

int64_t kv_head(const Dims& d, int64_t h, bool wrong_order) {
    const int64_t g = d.H / d.Hkv;
    return wrong_order ? h % d.Hkv : h / g;
}

// scores [B, H, Tq, Tk] = Q·Kᵀ per head (K·Qᵀ for scores-transposed).
std::optional<Arr> scores_of(const Dims& d, const Arr& Q, const Arr& K, const Bug& bug) {
    const bool swap = bug.is("scores-transposed");
    if (swap && d.Tq != d.Tk) return std::nullopt;
    const bool order = bug.is("kv-repeat-order") && bug.form != 2;
    Arr s = zeros({d.B, d.H, d.Tq, d.Tk});
    for (int64_t b = 0; b < d.B; ++b)
        for (int64_t h = 0; h < d.H; ++h) {
            const int64_t kh = kv_head(d, h, order);
            for (int64_t i = 0; i < d.Tq; ++i)
                for (int64_t j = 0; j < d.Tk; ++j) {
                    const int64_t qi = swap ? j : i, kj = swap ? i : j;
                    double acc = 0;
                    for (int64_t c = 0; c < d.Dk; ++c)
                        acc += Q.v[static_cast<size_t>(((b * d.H + h) * d.Tq + qi) * d.Dk + c)] *
                               K.v[static_cast<size_t>(((b * d.Hkv + kh) * d.Tk + kj) * d.Dk + c)];
                    s.v[static_cast<size_t>(((b * d.H + h) * d.Tq + i) * d.Tk + j)] = acc;
                }
        }
    return s;
}

double scale_of(const Problem& p, const Dims& d, const Bug& bug) {
    if (bug.is("no-scale")) return 1.0;
    if (bug.is("scale-by-dk")) return 1.0 / static_cast<double>(d.Dk);
    if (bug.is("scale-by-dmodel")) return 1.0 / std::sqrt(static_cast<double>(d.D));
    return scale_factor<double>(p.scale, d.Dk);
}

}  // namespace

Dims dims_of(const Problem& p) {
    Dims d;
    d.H = p.heads;
    d.Hkv = p.kv_heads > 0 ? p.kv_heads : p.heads;
    if (p.start == Start::x) {
        const Arr& x = p.inputs.at("x");
        d.B = x.shape[0];
        d.Tq = d.Tk = x.shape[1];
        d.D = x.shape[2];
        d.Dk = p.inputs.at("W_q").shape[0] / d.H;
        d.Dv = p.inputs.at("W_v").shape[0] / d.Hkv;
        d.has_out = p.inputs.count("W_o") != 0;
        if (d.has_out) d.Dout = p.inputs.at("W_o").shape[0];
    } else if (p.start == Start::qkv) {
        const Arr &Q = p.inputs.at("Q"), &K = p.inputs.at("K"), &V = p.inputs.at("V");
        d.B = Q.shape[0];
        d.Tq = Q.shape[2];
        d.Tk = K.shape[2];
        d.Dk = Q.shape[3];
        d.Dv = V.shape[3];
    } else {
        const Arr& s = p.inputs.at("scores_scaled");
        d.B = s.shape[0];
        d.Tq = s.shape[2];
        d.Tk = s.shape[3];
    }
    return d;
}

// Every stage the problem reaches, with mistake `bug` made (id "" is none).
static std::optional<std::map<std::string, Arr>> run(const Problem& p, const Bug& bug) {
    const Dims d = dims_of(p);
    std::map<std::string, Arr> st;
    const auto& in = p.inputs;
    auto bias = [&](const char* name, int form_only) -> const Arr* {
        const bool drop = bug.is("missing-bias") && (bug.form == 0 || bug.form == form_only);
        return drop || in.count(name) == 0 ? nullptr : &in.at(name);
    };
    if (p.start == Start::x) {
        const char* w[3] = {"W_q", "W_k", "W_v"};
        const char* b[3] = {"b_q", "b_k", "b_v"};
        const char* name[3] = {"Q", "K", "V"};
        const int64_t heads[3] = {d.H, d.Hkv, d.Hkv};
        for (int k = 0; k < 3; ++k) {
            const bool wt = bug.is("weight-not-transposed") && (bug.form == 0 || bug.form == k + 1);
            auto y = project(in.at("x"), in.at(w[k]), bias(b[k], k + 1), wt);
            if (!y) return std::nullopt;
            const bool rs = bug.is("split-no-transpose") && (bug.form == 0 || bug.form == k + 1);
            st[name[k]] = split_heads(*y, heads[k], rs);
        }
    } else if (p.start == Start::qkv) {
        st["Q"] = in.at("Q");
        st["K"] = in.at("K");
        st["V"] = in.at("V");
    }
    Arr scaled;
    if (p.start == Start::scores) {
        scaled = in.at("scores_scaled");
    } else {
        auto s = scores_of(d, st["Q"], st["K"], bug);
        if (!s) return std::nullopt;
        st["scores"] = *s;
        scaled = *s;
        const double f = scale_of(p, d, bug);
        for (double& v : scaled.v) v *= f;
        st["scores_scaled"] = scaled;
    }
    const bool after = bug.is("mask-after-softmax");
    const bool unmasked = after || bug.is("mask-missing");
    if ((unmasked || bug.is("mask-zero-fill")) && p.mask.is_none()) return std::nullopt;
    if (changes_mask(bug) && !bug_allowed(p.mask, bug, 0, d.Tq, d.Tk, 0, 0)) return std::nullopt;
    Arr masked = scaled;
    if (!unmasked)
        for (int64_t b = 0; b < d.B; ++b)
            for (int64_t i = 0; i < d.Tq; ++i)
                for (int64_t j = 0; j < d.Tk; ++j)
                    if (!*bug_allowed(p.mask, bug, b, d.Tq, d.Tk, i, j))
                        for (int64_t h = 0; h < d.H; ++h)
                            masked.v[static_cast<size_t>(((b * d.H + h) * d.Tq + i) * d.Tk + j)] =
                                bug.is("mask-zero-fill") ? 0.0 : -kInf;
    st["scores_masked"] = masked;
    Arr w = masked;
    const bool nan_empty = changes_mask(bug) && bug.form == 0;
    if (!bug.is("no-softmax")) {
        const bool cols = bug.is("softmax-query-axis"), unstable = bug.is("unstable-softmax");
        for (int64_t bh = 0; bh < d.B * d.H; ++bh) {
            double* blk = w.v.data() + bh * d.Tq * d.Tk;
            if (cols)
                for (int64_t j = 0; j < d.Tk; ++j) softmax_row(blk + j, d.Tq, d.Tk, nan_empty, false, p.f64);
            else
                for (int64_t i = 0; i < d.Tq; ++i) softmax_row(blk + i * d.Tk, d.Tk, 1, nan_empty, unstable, p.f64);
        }
    }
    if (after)
        for (int64_t b = 0; b < d.B; ++b)
            for (int64_t h = 0; h < d.H; ++h)
                for (int64_t i = 0; i < d.Tq; ++i)
                    for (int64_t j = 0; j < d.Tk; ++j)
                        if (!allowed(p.mask, b, d.Tq, d.Tk, i, j))
                            w.v[static_cast<size_t>(((b * d.H + h) * d.Tq + i) * d.Tk + j)] =
                                bug.form == 1 ? -kInf : 0.0;
    st["weights"] = w;
    if (p.start == Start::scores) return st;
    const Arr& V = st["V"];
    Arr ho = zeros({d.B, d.H, d.Tq, d.Dv});
    const bool order = bug.is("kv-repeat-order") && bug.form != 1;
    for (int64_t b = 0; b < d.B; ++b)
        for (int64_t h = 0; h < d.H; ++h) {
            const int64_t vh = kv_head(d, h, order);
            for (int64_t i = 0; i < d.Tq; ++i)
                for (int64_t c = 0; c < d.Dv; ++c) {
                    double acc = 0;
                    for (int64_t j = 0; j < d.Tk; ++j)
                        acc += w.v[static_cast<size_t>(((b * d.H + h) * d.Tq + i) * d.Tk + j)] *
                               V.v[static_cast<size_t>(((b * d.Hkv + vh) * d.Tk + j) * d.Dv + c)];
                    ho.v[static_cast<size_t>(((b * d.H + h) * d.Tq + i) * d.Dv + c)] = acc;
                }
        }
    st["head_out"] = ho;
    st["merged"] = merge_heads(ho, bug.is("merge-no-transpose"));
    if (p.start == Start::x && d.has_out) {
        if (bug.is("no-output-projection")) {
            if (d.Dout != d.H * d.Dv) return std::nullopt;
            st["out"] = st["merged"];
        } else {
            const bool wt = bug.is("weight-not-transposed") && (bug.form == 0 || bug.form == 4);
            auto y = project(st["merged"], in.at("W_o"), bias("b_o", 4), wt);
            if (!y) return std::nullopt;
            st["out"] = *y;
        }
    }
    return st;
}

std::map<std::string, Arr> reference_stages(const Problem& p) {
    // The reference: projections through linear_forward, attention through
    // attention_reference (both in double), heads split and merged as view + transpose.
    std::map<std::string, Arr> st = *run(p, Bug{});
    if (p.start == Start::scores) {
        Arr w = st["scores_masked"];
        const Dims d = dims_of(p);
        softmax_rows<double>(w.v.data(), d.B * d.H * d.Tq, d.Tk);
        st["weights"] = w;
        return st;
    }
    const Dims d = dims_of(p);
    AttentionSizes n;
    n.B = d.B, n.H = d.H, n.Tq = d.Tq, n.Tk = d.Tk, n.Dk = d.Dk, n.Dv = d.Dv, n.Hkv = d.Hkv;
    Mask mask;
    if (!p.mask.dense.empty()) {
        mask = Mask::custom(d.B, d.Tq, d.Tk, p.mask.dense);
    }
    if (p.mask.causal) mask = mask.combined(Mask::make_causal());
    if (!p.mask.key_len.empty()) mask = mask.combined(Mask::key_padding(p.mask.key_len));
    AttentionOptions opt;
    opt.scale = p.scale;
    AttentionSteps<double> steps;
    Arr ho = zeros({d.B, d.H, d.Tq, d.Dv});
    attention_reference<double>(ho.v.data(), st["Q"].v.data(), st["K"].v.data(), st["V"].v.data(), n, mask, opt,
                                &steps);
    st["scores"].v = steps.scores_raw;
    st["scores_scaled"].v = steps.scores_scaled;
    st["scores_masked"].v = steps.scores_masked;
    st["weights"].v = steps.weights;
    st["head_out"] = ho;
    st["merged"] = merge_heads(ho, false);
    if (p.start == Start::x && d.has_out) {
        const Arr* bo = p.inputs.count("b_o") != 0 ? &p.inputs.at("b_o") : nullptr;
        st["out"] = *project(st["merged"], p.inputs.at("W_o"), bo, false);
    }
    return st;
}

std::optional<std::map<std::string, Arr>> mistaken_stages(const Problem& p, const std::string& id, int form) {
    if (id == "missing-bias") {
        const char* names[5] = {"", "b_q", "b_k", "b_v", "b_o"};
        bool any = false;
        for (int k = 1; k <= 4; ++k) any = any || ((form == 0 || form == k) && p.inputs.count(names[k]) != 0);
        if (!any) return std::nullopt;
    }
    if ((id == "weight-not-transposed" || id == "missing-bias" || id == "split-no-transpose" ||
         id == "scale-by-dmodel" || id == "no-output-projection") && p.start != Start::x)
        return std::nullopt;
    if (id == "kv-repeat-order") {
        const Dims d = dims_of(p);
        if (d.Hkv == d.H || d.Hkv == 1) return std::nullopt;
    }
    return run(p, Bug{id, form});
}

}  // namespace attn::check
