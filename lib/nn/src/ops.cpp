// The readable reference ops of attn/nn/ops.hpp: plain loops, one thread, shapes in
// comments; self-attention is core's reference (attn/core/attention.hpp) on the ops' layout.
// The fast path (fast_ops.hpp) is checked against these in tests/test_nn_ops.cpp.
#include "attn/nn/ops.hpp"

#include <cmath>
#include <algorithm>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/attention_backward.hpp"
#include "attn/core/mask.hpp"

namespace attn::nn {

template <class S>
void embedding_forward(S* out, const int32_t* tokens, const S* wte, const S* pos, int64_t B, int64_t T, int64_t D) {
    // out (B, T, D), wte (V, D), pos (Tmax, D)
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
            S* out_bt = out + (b * T + t) * D;
            const S* wte_ix = wte + static_cast<int64_t>(tokens[b * T + t]) * D;
            const S* pos_t = pos + t * D;
            for (int64_t i = 0; i < D; ++i) out_bt[i] = wte_ix[i] + pos_t[i];
        }
}

template <class S>
void embedding_backward(S* dwte, S* dpos, const S* dout, const int32_t* tokens, int64_t B, int64_t T, int64_t D) {
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
            const S* dout_bt = dout + (b * T + t) * D;
            S* dwte_ix = dwte + static_cast<int64_t>(tokens[b * T + t]) * D;
            for (int64_t i = 0; i < D; ++i) dwte_ix[i] += dout_bt[i];
            if (dpos)
                for (int64_t i = 0; i < D; ++i) dpos[t * D + i] += dout_bt[i];
        }
}

template <class S>
void sinusoidal_positions(S* table, int64_t Tmax, int64_t D) {
    for (int64_t t = 0; t < Tmax; ++t)
        for (int64_t i = 0; i < D; ++i) {
            const double freq = std::pow(10000.0, -static_cast<double>(i - i % 2) / static_cast<double>(D));
            const double a = static_cast<double>(t) * freq;
            table[t * D + i] = static_cast<S>(i % 2 == 0 ? std::sin(a) : std::cos(a));
        }
}

template <class S>
void layernorm_forward(S* out, S* mean, S* rstd, const S* inp, const S* w, const S* b, int64_t N, int64_t D, S eps) {
    // inp, out (N, D); w, b (D); mean, rstd (N)
    for (int64_t n = 0; n < N; ++n) {
        const S* x = inp + n * D;
        S m = 0;
        for (int64_t i = 0; i < D; ++i) m += x[i];
        m /= static_cast<S>(D);
        S var = 0;
        for (int64_t i = 0; i < D; ++i) var += (x[i] - m) * (x[i] - m);
        var /= static_cast<S>(D);
        const S r = S(1) / std::sqrt(var + eps);
        S* o = out + n * D;
        for (int64_t i = 0; i < D; ++i) o[i] = (x[i] - m) * r * w[i] + b[i];
        mean[n] = m;
        rstd[n] = r;
    }
}

template <class S>
void layernorm_backward(S* dinp, S* dw, S* db, const S* dout, const S* inp, const S* w, const S* mean,
                        const S* rstd, int64_t N, int64_t D) {
    for (int64_t n = 0; n < N; ++n) {
        const S* x = inp + n * D;
        const S* g_out = dout + n * D;
        const S m = mean[n], r = rstd[n];
        // pass 1: mean(g) and mean(g * xhat), g = dout * w
        S g_mean = 0, gx_mean = 0;
        for (int64_t i = 0; i < D; ++i) {
            const S xhat = (x[i] - m) * r;
            const S g = g_out[i] * w[i];
            g_mean += g;
            gx_mean += g * xhat;
        }
        g_mean /= static_cast<S>(D);
        gx_mean /= static_cast<S>(D);
        // pass 2: the three gradients
        S* dx = dinp + n * D;
        for (int64_t i = 0; i < D; ++i) {
            const S xhat = (x[i] - m) * r;
            const S g = g_out[i] * w[i];
            dx[i] += r * (g - g_mean - xhat * gx_mean);
            dw[i] += g_out[i] * xhat;
            db[i] += g_out[i];
        }
    }
}

namespace {
template <class S>
S gelu_scale() { return static_cast<S>(0.7978845608028654); }  // sqrt(2/pi)
}  // namespace

template <class S>
void gelu_forward(S* out, const S* inp, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const S x = inp[i];
        const S u = gelu_scale<S>() * (x + static_cast<S>(0.044715) * x * x * x);
        out[i] = S(0.5) * x * (S(1) + std::tanh(u));
    }
}

template <class S>
void gelu_backward(S* dinp, const S* inp, const S* dout, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const S x = inp[i];
        const S u = gelu_scale<S>() * (x + static_cast<S>(0.044715) * x * x * x);
        const S th = std::tanh(u);
        const S du = gelu_scale<S>() * (S(1) + S(3) * static_cast<S>(0.044715) * x * x);
        const S grad = S(0.5) * (S(1) + th) + S(0.5) * x * (S(1) - th * th) * du;
        dinp[i] += grad * dout[i];
    }
}

template <class S>
void gelu_erf_forward(S* out, const S* inp, int64_t n) {
    const S inv_sqrt2 = static_cast<S>(0.70710678118654752);
    for (int64_t i = 0; i < n; ++i) {
        const S x = inp[i];
        out[i] = S(0.5) * x * (S(1) + std::erf(x * inv_sqrt2));
    }
}

template <class S>
void gelu_erf_backward(S* dinp, const S* inp, const S* dout, int64_t n) {
    const S inv_sqrt2 = static_cast<S>(0.70710678118654752), inv_sqrt2pi = static_cast<S>(0.39894228040143268);
    for (int64_t i = 0; i < n; ++i) {
        const S x = inp[i];
        const S cdf = S(0.5) * (S(1) + std::erf(x * inv_sqrt2));  // Phi(x)
        const S pdf = inv_sqrt2pi * std::exp(S(-0.5) * x * x);     // phi(x)
        dinp[i] += (cdf + x * pdf) * dout[i];
    }
}

template <class S>
void relu_forward(S* out, const S* inp, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = inp[i] > S(0) ? inp[i] : S(0);
}

template <class S>
void relu_backward(S* dinp, const S* inp, const S* dout, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (inp[i] > S(0)) dinp[i] += dout[i];
}

template <class S>
void residual_forward(S* out, const S* a, const S* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <class S>
void residual_backward(S* da, S* db, const S* dout, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

template <class S>
void matmul_forward(S* out, const S* inp, const S* W, const S* b, int64_t N, int64_t C, int64_t OC) {
    // out (N, OC) = inp (N, C) . W^T (C, OC) + b (OC)
    for (int64_t n = 0; n < N; ++n)
        for (int64_t o = 0; o < OC; ++o) {
            S acc = b ? b[o] : S(0);
            const S* x_n = inp + n * C;
            const S* w_o = W + o * C;
            for (int64_t c = 0; c < C; ++c) acc += x_n[c] * w_o[c];
            out[n * OC + o] = acc;
        }
}

template <class S>
void matmul_backward(S* dinp, S* dW, S* db, const S* dout, const S* inp, const S* W, int64_t N, int64_t C,
                     int64_t OC) {
    for (int64_t n = 0; n < N; ++n) {
        const S* dout_n = dout + n * OC;
        const S* x_n = inp + n * C;
        for (int64_t o = 0; o < OC; ++o) {
            const S d = dout_n[o];
            const S* w_o = W + o * C;
            S* dw_o = dW + o * C;
            if (dinp)
                for (int64_t c = 0; c < C; ++c) dinp[n * C + c] += d * w_o[c];
            for (int64_t c = 0; c < C; ++c) dw_o[c] += d * x_n[c];
            if (db) db[o] += d;
        }
    }
}

template <class S>
void headnorm_forward(S* out, S* norm, const S* inp, int64_t N, int64_t H, int64_t Dd) {
    for (int64_t r = 0; r < N * H; ++r) {
        const S* x = inp + r * Dd;
        S ss = 0;
        for (int64_t i = 0; i < Dd; ++i) ss += x[i] * x[i];
        const S nr = std::max(std::sqrt(ss), static_cast<S>(1e-12));
        for (int64_t i = 0; i < Dd; ++i) out[r * Dd + i] = x[i] / nr;
        norm[r] = nr;
    }
}

template <class S>
void headnorm_backward(S* dinp, const S* dout, const S* out, const S* norm, int64_t N, int64_t H, int64_t Dd) {
    for (int64_t r = 0; r < N * H; ++r) {
        const S* y = out + r * Dd;
        const S* dy = dout + r * Dd;
        const S nr = norm[r];
        if (nr <= static_cast<S>(1e-12)) {  // clamped: out = x / 1e-12, a plain scaling
            for (int64_t i = 0; i < Dd; ++i) dinp[r * Dd + i] += dy[i] / nr;
            continue;
        }
        S dot = 0;
        for (int64_t i = 0; i < Dd; ++i) dot += y[i] * dy[i];
        for (int64_t i = 0; i < Dd; ++i) dinp[r * Dd + i] += (dy[i] - y[i] * dot) / nr;
    }
}

template <class S>
double temperature_backward(const S* qn, const S* dqn, int64_t n) {
    double dot = 0;
    for (int64_t i = 0; i < n; ++i) dot += static_cast<double>(qn[i]) * static_cast<double>(dqn[i]);
    return -dot;
}

namespace {

// (B, T, H*d) -> (B, H, T, d): the ops' layout to core's.
template <class S>
std::vector<S> split_heads(const S* x, int64_t B, int64_t T, int64_t H, int64_t d) {
    std::vector<S> y(static_cast<size_t>(B * T * H * d));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < H; ++h)
                std::copy_n(x + (b * T + t) * H * d + h * d, d, y.data() + ((b * H + h) * T + t) * d);
    return y;
}

// y (B, H, T, d) -> x (B, T, H*d): written, or added to (the backward's convention).
template <class S>
void merge_heads(S* x, const std::vector<S>& y, int64_t B, int64_t T, int64_t H, int64_t d, bool add) {
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < H; ++h) {
                S* dst = x + (b * T + t) * H * d + h * d;
                const S* src = y.data() + ((b * H + h) * T + t) * d;
                for (int64_t e = 0; e < d; ++e) dst[e] = add ? dst[e] + src[e] : src[e];
            }
}

// The options that say to core's reference what the ops' arguments say: dropout p with the
// layer's seed in training (p > 0); the factor itself goes in exactly, in S.
AttentionOptions self_attention_options(float p, uint64_t seed) {
    AttentionOptions opt;
    opt.scale = Scale{ScaleKind::Constant, 1.0f};  // replaced by the factor in S
    opt.dropout = p;
    opt.train = p > 0;
    opt.seed = seed;
    return opt;
}

}  // namespace

template <class S>
void self_attention_forward(S* out, S* att, const S* q, const S* k, const S* v, int64_t B, int64_t T, int64_t H,
                            int64_t Dk, int64_t Dv, S factor, bool causal, float p, uint64_t seed) {
    // q, k (B, T, H*Dk), v, out (B, T, H*Dv), att (B, H, T, T); core's reference on (B, H, T, d)
    const AttentionSizes n{B, H, T, T, Dk, Dv};
    const std::vector<S> qh = split_heads(q, B, T, H, Dk), kh = split_heads(k, B, T, H, Dk);
    const std::vector<S> vh = split_heads(v, B, T, H, Dv);
    std::vector<S> oh(static_cast<size_t>(B * H * T * Dv));
    AttentionSteps<S> steps;
    attention_reference(oh.data(), qh.data(), kh.data(), vh.data(), n, causal ? Mask::make_causal() : Mask::none(),
                        self_attention_options(p, seed), &steps, &factor);
    std::copy(steps.weights.begin(), steps.weights.end(), att);
    merge_heads(out, oh, B, T, H, Dv, false);
}

template <class S>
void self_attention_backward(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v, int64_t B,
                             int64_t T, int64_t H, int64_t Dk, int64_t Dv, S factor, bool causal, float p,
                             uint64_t seed) {
    const AttentionSizes n{B, H, T, T, Dk, Dv};
    const std::vector<S> qh = split_heads(q, B, T, H, Dk), kh = split_heads(k, B, T, H, Dk);
    const std::vector<S> vh = split_heads(v, B, T, H, Dv), dh = split_heads(dout, B, T, H, Dv);
    std::vector<S> dqh(qh.size()), dkh(kh.size()), dvh(vh.size());
    AttentionBackwardSteps<S>* no_steps = nullptr;
    attention_backward_reference(dqh.data(), dkh.data(), dvh.data(), qh.data(), kh.data(), vh.data(), dh.data(), n,
                                 causal ? Mask::make_causal() : Mask::none(), self_attention_options(p, seed), no_steps,
                                 &factor);
    merge_heads(dq, dqh, B, T, H, Dk, true);
    merge_heads(dk, dkh, B, T, H, Dk, true);
    merge_heads(dv, dvh, B, T, H, Dv, true);
}

template <class S>
int64_t crossentropy_forward(S* losses, S* probs, const S* logits, const int32_t* targets, int64_t N, int64_t V) {
    int64_t scored = 0;
    for (int64_t n = 0; n < N; ++n) {
        const S* z = logits + n * V;
        S* pr = probs + n * V;
        S mx = z[0];
        for (int64_t j = 1; j < V; ++j) mx = std::max(mx, z[j]);
        S sum = 0;
        for (int64_t j = 0; j < V; ++j) {
            pr[j] = std::exp(z[j] - mx);
            sum += pr[j];
        }
        for (int64_t j = 0; j < V; ++j) pr[j] /= sum;
        const int32_t t = targets[n];
        if (t < 0) {
            losses[n] = 0;
            continue;
        }
        losses[n] = (mx + std::log(sum)) - z[t];  // logsumexp - z_target
        ++scored;
    }
    return scored;
}

template <class S>
void crossentropy_backward(S* dlogits, const S* probs, const int32_t* targets, S scale, int64_t N, int64_t V) {
    for (int64_t n = 0; n < N; ++n) {
        const int32_t t = targets[n];
        if (t < 0) continue;
        for (int64_t j = 0; j < V; ++j) dlogits[n * V + j] += scale * (probs[n * V + j] - (j == t ? S(1) : S(0)));
    }
}

#define ATTN_TRAIN_INSTANTIATE(S)                                                                                 \
    template void embedding_forward<S>(S*, const int32_t*, const S*, const S*, int64_t, int64_t, int64_t);        \
    template void embedding_backward<S>(S*, S*, const S*, const int32_t*, int64_t, int64_t, int64_t);             \
    template void sinusoidal_positions<S>(S*, int64_t, int64_t);                                                  \
    template void layernorm_forward<S>(S*, S*, S*, const S*, const S*, const S*, int64_t, int64_t, S);            \
    template void layernorm_backward<S>(S*, S*, S*, const S*, const S*, const S*, const S*, const S*, int64_t,    \
                                        int64_t);                                                                 \
    template void gelu_forward<S>(S*, const S*, int64_t);                                                         \
    template void gelu_backward<S>(S*, const S*, const S*, int64_t);                                              \
    template void gelu_erf_forward<S>(S*, const S*, int64_t);                                                     \
    template void gelu_erf_backward<S>(S*, const S*, const S*, int64_t);                                          \
    template void relu_forward<S>(S*, const S*, int64_t);                                                         \
    template void relu_backward<S>(S*, const S*, const S*, int64_t);                                              \
    template void residual_forward<S>(S*, const S*, const S*, int64_t);                                           \
    template void residual_backward<S>(S*, S*, const S*, int64_t);                                                \
    template void matmul_forward<S>(S*, const S*, const S*, const S*, int64_t, int64_t, int64_t);                 \
    template void matmul_backward<S>(S*, S*, S*, const S*, const S*, const S*, int64_t, int64_t, int64_t);        \
    template void headnorm_forward<S>(S*, S*, const S*, int64_t, int64_t, int64_t);                               \
    template void headnorm_backward<S>(S*, const S*, const S*, const S*, int64_t, int64_t, int64_t);              \
    template double temperature_backward<S>(const S*, const S*, int64_t);                                         \
    template void self_attention_forward<S>(S*, S*, const S*, const S*, const S*, int64_t, int64_t, int64_t,      \
                                            int64_t, int64_t, S, bool, float, uint64_t);                          \
    template void self_attention_backward<S>(S*, S*, S*, const S*, const S*, const S*, const S*, int64_t, int64_t, \
                                             int64_t, int64_t, int64_t, S, bool, float, uint64_t);                \
    template int64_t crossentropy_forward<S>(S*, S*, const S*, const int32_t*, int64_t, int64_t);                 \
    template void crossentropy_backward<S>(S*, const S*, const int32_t*, S, int64_t, int64_t);

ATTN_TRAIN_INSTANTIATE(float)
ATTN_TRAIN_INSTANTIATE(double)

}  // namespace attn::nn
