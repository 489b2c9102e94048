// The readable reference ops of attn/nn/ops.hpp: plain loops, one thread, shapes in
// comments. The fast path (fast_ops.hpp) is checked against these in tests/test_nn_ops.cpp.
#include "attn/nn/ops.hpp"

#include <cmath>
#include <algorithm>
#include <limits>
#include <vector>

#include "attn/core/attention.hpp"

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

template <class S>
void attention_forward(S* out, S* att, const S* q, const S* k, const S* v, int64_t B, int64_t T, int64_t H,
                       int64_t Dk, int64_t Dv, S factor, bool causal, float p, uint64_t seed) {
    // q, k (B, T, H*Dk), v, out (B, T, H*Dv), att (B, H, T, T)
    const int64_t QS = H * Dk, VS = H * Dv;
    const S keep_scale = p > 0 ? S(1) / (S(1) - static_cast<S>(p)) : S(1);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < T; ++i) {
                S* att_bhi = att + ((b * H + h) * T + i) * T;
                const S* q_bti = q + (b * T + i) * QS + h * Dk;
                // pass 1: scaled scores and the row max
                S mx = -std::numeric_limits<S>::infinity();
                for (int64_t j = 0; j < T; ++j) {
                    if (causal && j > i) {
                        att_bhi[j] = -std::numeric_limits<S>::infinity();
                        continue;
                    }
                    const S* k_btj = k + (b * T + j) * QS + h * Dk;
                    S s = 0;
                    for (int64_t d = 0; d < Dk; ++d) s += q_bti[d] * k_btj[d];
                    s *= factor;
                    att_bhi[j] = s;
                    mx = std::max(mx, s);
                }
                // pass 2: exp and sum, then normalise
                S sum = 0;
                for (int64_t j = 0; j < T; ++j) {
                    const S e = (causal && j > i) ? S(0) : std::exp(att_bhi[j] - mx);
                    att_bhi[j] = e;
                    sum += e;
                }
                for (int64_t j = 0; j < T; ++j) att_bhi[j] /= sum;
                // pass 3: out = dropout(P) v
                S* out_bti = out + (b * T + i) * VS + h * Dv;
                for (int64_t d = 0; d < Dv; ++d) out_bti[d] = 0;
                const uint64_t row = static_cast<uint64_t>(((b * H + h) * T + i) * T);
                for (int64_t j = 0; j < T; ++j) {
                    S pd = att_bhi[j];
                    if (p > 0) pd = dropout_drops(seed, row + static_cast<uint64_t>(j), p) ? S(0) : pd * keep_scale;
                    const S* v_btj = v + (b * T + j) * VS + h * Dv;
                    for (int64_t d = 0; d < Dv; ++d) out_bti[d] += pd * v_btj[d];
                }
            }
}

template <class S>
void attention_backward(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v, const S* att,
                        int64_t B, int64_t T, int64_t H, int64_t Dk, int64_t Dv, S factor, float p, uint64_t seed) {
    const int64_t QS = H * Dk, VS = H * Dv;
    const S keep_scale = p > 0 ? S(1) / (S(1) - static_cast<S>(p)) : S(1);
    std::vector<S> dP(static_cast<size_t>(T));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < T; ++i) {
                const S* P = att + ((b * H + h) * T + i) * T;
                const S* dout_bti = dout + (b * T + i) * VS + h * Dv;
                const uint64_t row = static_cast<uint64_t>(((b * H + h) * T + i) * T);
                // pass 1: dPd = dout v^T, dv += Pd^T dout, dP = dPd * keep / (1-p)
                for (int64_t j = 0; j < T; ++j) {
                    const S* v_btj = v + (b * T + j) * VS + h * Dv;
                    S* dv_btj = dv + (b * T + j) * VS + h * Dv;
                    S mult = S(1);
                    if (p > 0) mult = dropout_drops(seed, row + static_cast<uint64_t>(j), p) ? S(0) : keep_scale;
                    S dpd = 0;
                    for (int64_t d = 0; d < Dv; ++d) dpd += dout_bti[d] * v_btj[d];
                    const S pd = P[j] * mult;
                    for (int64_t d = 0; d < Dv; ++d) dv_btj[d] += pd * dout_bti[d];
                    dP[static_cast<size_t>(j)] = dpd * mult;
                }
                // pass 2: softmax backward dS = P o (dP - sum_j P dP)
                S rs = 0;
                for (int64_t j = 0; j < T; ++j) rs += P[j] * dP[static_cast<size_t>(j)];
                // pass 3: dq += factor dS k, dk += factor dS^T q
                const S* q_bti = q + (b * T + i) * QS + h * Dk;
                S* dq_bti = dq + (b * T + i) * QS + h * Dk;
                for (int64_t j = 0; j < T; ++j) {
                    const S ds = P[j] * (dP[static_cast<size_t>(j)] - rs) * factor;
                    if (ds == S(0)) continue;
                    const S* k_btj = k + (b * T + j) * QS + h * Dk;
                    S* dk_btj = dk + (b * T + j) * QS + h * Dk;
                    for (int64_t d = 0; d < Dk; ++d) {
                        dq_bti[d] += ds * k_btj[d];
                        dk_btj[d] += ds * q_bti[d];
                    }
                }
            }
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
    template void attention_forward<S>(S*, S*, const S*, const S*, const S*, int64_t, int64_t, int64_t, int64_t,  \
                                       int64_t, S, bool, float, uint64_t);                                        \
    template void attention_backward<S>(S*, S*, S*, const S*, const S*, const S*, const S*, const S*, int64_t,    \
                                        int64_t, int64_t, int64_t, int64_t, S, float, uint64_t);                  \
    template int64_t crossentropy_forward<S>(S*, S*, const S*, const int32_t*, int64_t, int64_t);                 \
    template void crossentropy_backward<S>(S*, const S*, const int32_t*, S, int64_t, int64_t);

ATTN_TRAIN_INSTANTIATE(float)
ATTN_TRAIN_INSTANTIATE(double)

}  // namespace attn::nn
