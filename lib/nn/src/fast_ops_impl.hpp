// The fast ops (attn/nn/fast_ops.hpp), written once over the scalar type: GEMMs on fixed-size
// pieces, through the register-tile kernels of gemm_kernel.hpp for float where the CPU has
// AVX-512, AVX2 or NEON, else Eigen. fast_ops.cpp instantiates them for float;
// lib/nn/f64/fast_ops_f64.cpp for double (the tests' finite-difference checks, in attn_nn_f64,
// which the library does not ship).
#pragma once

#include "attn/nn/fast_ops.hpp"

#include <Eigen/Dense>
#include <unsupported/Eigen/SpecialFunctions>
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "attn/core/parallel.hpp"
#include "attn/cpu/lanes.hpp"
#include "attn/cpu/rows.hpp"
#include "attn/nn/ops.hpp"
#include "gemm.hpp"

namespace attn::nn {

namespace {
template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using MapM = Eigen::Map<Mat<S>>;
template <class S>
using MapC = Eigen::Map<const Mat<S>>;
template <class S>
using MapCS = Eigen::Map<const Mat<S>, 0, Eigen::OuterStride<>>;
template <class S>
using RowV = Eigen::Matrix<S, 1, Eigen::Dynamic>;

int64_t chunks(int64_t n, int64_t c) { return (n + c - 1) / c; }

// The hand-written kernel for float when the path in use has one (gemm_dispatch.cpp), else
// null: Eigen then (and always for double).
template <class S>
detail::GemmFn kernel_for() {
    if constexpr (std::is_same_v<S, float>) return training_gemm_kernel();
    else return nullptr;
}

using cpu::kLanes;
using cpu::reduce_lanes;
using cpu::sum_lanes;

// LayerNorm of rows [0, N) as ops.cpp computes it, its row sums by lanes.
template <class S>
void layernorm_forward_rows(S* out, S* mean, S* rstd, const S* inp, const S* w, const S* b, int64_t N, int64_t D,
                            S eps) {
    if constexpr (std::is_same_v<S, float>)
        if (const auto* k = rows::row_kernels(); k != nullptr && D % 16 == 0)
            return k->layernorm_forward(out, mean, rstd, inp, w, b, N, D, eps);
    for (int64_t n = 0; n < N; ++n) {
        const S* x = inp + n * D;
        const S m = sum_lanes(x, D) / static_cast<S>(D);
        S p[kLanes] = {};
        int64_t i = 0;
        for (; i + kLanes <= D; i += kLanes)
            for (int64_t l = 0; l < kLanes; ++l) p[l] += (x[i + l] - m) * (x[i + l] - m);
        for (int64_t l = 0; i + l < D; ++l) p[l] += (x[i + l] - m) * (x[i + l] - m);
        const S var = reduce_lanes(p) / static_cast<S>(D);
        const S r = S(1) / std::sqrt(var + eps);
        S* o = out + n * D;
        for (int64_t j = 0; j < D; ++j) o[j] = (x[j] - m) * r * w[j] + b[j];
        mean[n] = m;
        rstd[n] = r;
    }
}

// One row's dx, dw, db updates; the buffers never overlap (restrict parameters let the
// compiler vectorise the three updates).
template <bool SET, class S>
void layernorm_backward_update(S* __restrict dx, S* __restrict dw, S* __restrict db, const S* __restrict x,
                               const S* __restrict g_out, const S* __restrict w, S m, S r, S g_mean, S gx_mean,
                               int64_t D) {
    for (int64_t j = 0; j < D; ++j) {
        const S xhat = (x[j] - m) * r;
        const S g = g_out[j] * w[j];
        if constexpr (SET) dx[j] = r * (g - g_mean - xhat * gx_mean);
        else dx[j] += r * (g - g_mean - xhat * gx_mean);
        dw[j] += g_out[j] * xhat;
        db[j] += g_out[j];
    }
}

template <class S>
void layernorm_backward_rows(S* dinp, S* dw, S* db, const S* dout, const S* inp, const S* w, const S* mean,
                             const S* rstd, int64_t N, int64_t D, Into into) {
    if constexpr (std::is_same_v<S, float>)
        if (const auto* k = rows::row_kernels(); k != nullptr && D % 16 == 0)
            return k->layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, D, into == Into::Add);
    for (int64_t n = 0; n < N; ++n) {
        const S* x = inp + n * D;
        const S* g_out = dout + n * D;
        const S m = mean[n], r = rstd[n];
        // mean(g) and mean(g * xhat), g = dout * w
        S pg[kLanes] = {}, pgx[kLanes] = {};
        int64_t i = 0;
        for (; i + kLanes <= D; i += kLanes)
            for (int64_t l = 0; l < kLanes; ++l) {
                const S g = g_out[i + l] * w[i + l];
                pg[l] += g;
                pgx[l] += g * ((x[i + l] - m) * r);
            }
        for (int64_t l = 0; i + l < D; ++l) {
            const S g = g_out[i + l] * w[i + l];
            pg[l] += g;
            pgx[l] += g * ((x[i + l] - m) * r);
        }
        const S g_mean = reduce_lanes(pg) / static_cast<S>(D), gx_mean = reduce_lanes(pgx) / static_cast<S>(D);
        if (into == Into::Set)
            layernorm_backward_update<true>(dinp + n * D, dw, db, x, g_out, w, m, r, g_mean, gx_mean, D);
        else layernorm_backward_update<false>(dinp + n * D, dw, db, x, g_out, w, m, r, g_mean, gx_mean, D);
    }
}
}  // namespace

namespace {
// out (N, OC) = inp (N, C) . W^T + b by kGemmRows rows; epi(r0, rows) runs on each piece
// right after its product, while those rows are still in cache.
template <class S, class Epi>
void matmul_forward_impl(S* out, const S* inp, const S* W, const S* WT, const S* b, int64_t N, int64_t C, int64_t OC,
                         int threads, Epi epi) {
    if constexpr (std::is_same_v<S, float>) {
        if (const detail::GemmFn gemm = kernel_for<S>()) {
            // W^T (C, OC), so each row tile reads contiguous rows of it: the caller's, or made here once
            const S* wt = WT;
            if (!wt) {
                S* t = cpu::thread_scratch<S>(static_cast<size_t>(C * OC), 0);
                rows::transpose(t, W, OC, C, C);
                wt = t;
            }
            parallel_for(chunks(N, kGemmRows), threads, [&](int64_t ci, int) {
                const int64_t r0 = ci * kGemmRows, rows = std::min(kGemmRows, N - r0);
                gemm(gemm::strided_args(rows, OC, C, inp + r0 * C, C, 1, wt, OC, out + r0 * OC, OC, b, false));
                epi(r0, rows);
            });
            return;
        }
    }
    const MapC<S> w(W, OC, C);
    parallel_for(chunks(N, kGemmRows), threads, [&](int64_t ci, int) {
        const int64_t r0 = ci * kGemmRows, rows = std::min(kGemmRows, N - r0);
        MapM<S> o(out + r0 * OC, rows, OC);
        if (b) {  // the bias in every row, then the product added: one pass fewer than = then +=
            o.rowwise() = Eigen::Map<const RowV<S>>(b, OC);
            o.noalias() += MapC<S>(inp + r0 * C, rows, C) * w.transpose();
        } else {
            o.noalias() = MapC<S>(inp + r0 * C, rows, C) * w.transpose();
        }
        epi(r0, rows);
    });
}

// tanh(u) in place of u (an aligned array), with Eigen's vectorised tanh (a rational
// approximation, within a few ulps of std::tanh in float), saturated to exactly +-1 where the
// true tanh rounds to it in S (|u| > 9 in float, 20 in double): Eigen's NEON tanh gives
// 0.99999976 there, which GELU' multiplies by up to 100 at |x| = 12 (3.4e-5 off on AArch64).
template <class T>
void tanh_saturating(T&& u) {
    using S = typename std::decay_t<T>::Scalar;
    const S edge = std::is_same_v<S, float> ? S(9) : S(20);
    u = (u.abs() > edge).select(u.sign(), u.tanh());
}

// GELU (tanh form) on m elements, the formula of ops.cpp's gelu_forward with
// tanh_saturating.
// tanh goes into the aligned array th, whose traversal depends only on the block length
// (an unaligned destination would mix Eigen's scalar and vector tanh by address); the
// rest is exact elementwise arithmetic.
template <class S>
void gelu_forward_block(S* out, const S* inp, int64_t m) {
    if constexpr (std::is_same_v<S, float>)
        if (const auto* k = rows::row_kernels()) return k->gelu_forward(out, inp, m);
    using A = Eigen::Array<S, Eigen::Dynamic, 1>;
    const Eigen::Map<const A> x(inp, m);
    Eigen::Map<A> y(out, m);
    const S c = static_cast<S>(0.7978845608028654), a = static_cast<S>(0.044715);
    thread_local A th(1024);
    for (int64_t j0 = 0; j0 < m; j0 += 1024) {  // blocks of 1024: th stays in L1
        const int64_t mm = std::min<int64_t>(1024, m - j0);
        const auto xs = x.segment(j0, mm);
        auto t = th.head(mm);
        t = c * (xs + a * xs * xs * xs);
        tanh_saturating(t);
        y.segment(j0, mm) = S(0.5) * xs * (S(1) + t);
    }
}

// dinp (+)= GELU'(inp) o dout on m elements; dinp may be dout itself (elementwise).
template <class S>
void gelu_backward_block(S* dinp, const S* inp, const S* dout, int64_t m, Into into) {
    if constexpr (std::is_same_v<S, float>)
        if (const auto* k = rows::row_kernels()) return k->gelu_backward(dinp, inp, dout, m, into == Into::Add);
    using A = Eigen::Array<S, Eigen::Dynamic, 1>;
    const Eigen::Map<const A> x(inp, m), dy(dout, m);
    Eigen::Map<A> dx(dinp, m);
    const S c = static_cast<S>(0.7978845608028654), a = static_cast<S>(0.044715);
    thread_local A th(1024);  // aligned: tanh evaluated the same way wherever the buffers live
    for (int64_t j0 = 0; j0 < m; j0 += 1024) {
        const int64_t mm = std::min<int64_t>(1024, m - j0);
        const auto xs = x.segment(j0, mm);
        auto t = th.head(mm);
        t = c * (xs + a * xs * xs * xs);
        tanh_saturating(t);
        const auto g = (S(0.5) * (S(1) + t) + S(0.5) * xs * (S(1) - t * t) * c * (S(1) + S(3) * a * xs * xs)) *
                       dy.segment(j0, mm);
        if (into == Into::Set) dx.segment(j0, mm) = g;
        else dx.segment(j0, mm) += g;
    }
}

// GELU (erf form) on m elements: the row kernels for float, else Eigen's erf (for float its
// rational approximation, the kernels' formula, on whole vectors; std::erf on a tail and for
// double). out may be inp.
template <class S>
void gelu_erf_forward_block(S* out, const S* inp, int64_t m) {
    if constexpr (std::is_same_v<S, float>)
        if (const auto* k = rows::row_kernels()) return k->gelu_erf_forward(out, inp, m);
    using A = Eigen::Array<S, Eigen::Dynamic, 1>;
    const Eigen::Map<const A> x(inp, m);
    Eigen::Map<A>(out, m) = S(0.5) * x * (S(1) + (x * static_cast<S>(0.70710678118654752)).erf());
}

// dinp (+)= (Phi(x) + x phi(x)) o dout on m elements; dinp may be dout itself
template <class S>
void gelu_erf_backward_block(S* dinp, const S* inp, const S* dout, int64_t m, Into into) {
    if constexpr (std::is_same_v<S, float>)
        if (const auto* k = rows::row_kernels())
            return k->gelu_erf_backward(dinp, inp, dout, m, into == Into::Add);
    using A = Eigen::Array<S, Eigen::Dynamic, 1>;
    const Eigen::Map<const A> x(inp, m), dy(dout, m);
    Eigen::Map<A> dx(dinp, m);
    const S inv_sqrt2 = static_cast<S>(0.70710678118654752), inv_sqrt2pi = static_cast<S>(0.39894228040143268);
    for (int64_t j0 = 0; j0 < m; j0 += 1024) {  // blocks of 1024: the temporaries stay in L1
        const int64_t mm = std::min<int64_t>(1024, m - j0);
        const auto xs = x.segment(j0, mm);
        const A g = (S(0.5) * (S(1) + (xs * inv_sqrt2).erf()) + xs * inv_sqrt2pi * (S(-0.5) * xs * xs).exp()) *
                    dy.segment(j0, mm);
        if (into == Into::Set) dx.segment(j0, mm) = g;
        else dx.segment(j0, mm) += g;
    }
}

template <class S>
void activation_forward_block(S* out, const S* inp, int64_t m, bool relu) {
    if (relu) relu_forward(out, inp, m);
    else gelu_forward_block(out, inp, m);
}

template <class S>
void activation_backward_block(S* dinp, const S* inp, const S* dout, int64_t m, bool relu, Into into) {
    if (!relu) return gelu_backward_block(dinp, inp, dout, m, into);
    if (into == Into::Add) return relu_backward(dinp, inp, dout, m);
    for (int64_t i = 0; i < m; ++i) dinp[i] = inp[i] > S(0) ? dout[i] : S(0);
}
}  // namespace

template <class S>
void matmul_forward_fast(S* out, const S* inp, const S* W, const S* b, int64_t N, int64_t C, int64_t OC,
                         int threads, const S* WT) {
    matmul_forward_impl(out, inp, W, WT, b, N, C, OC, threads, [](int64_t, int64_t) {});
}

template <class S>
void matmul_act_forward_fast(S* pre, S* act, const S* inp, const S* W, const S* b, int64_t N, int64_t C, int64_t OC,
                             bool relu, int threads, const S* WT) {
    matmul_forward_impl(pre, inp, W, WT, b, N, C, OC, threads, [&](int64_t r0, int64_t rows) {
        activation_forward_block(act + r0 * OC, pre + r0 * OC, rows * OC, relu);
    });
}

namespace {
// db[0, oc) += the column sums of d (N rows, row stride ld), each column summed over n in
// ascending order. A whole chunk (oc = kOutChunk) takes a loop of fixed length, which
// the compiler keeps in vector registers; a partial one the general loop (same order).
template <class S>
void column_sums_add(S* db, const S* d, int64_t N, int64_t ld, int64_t oc) {
    S acc[kOutChunk] = {};
    if (oc == kOutChunk) {
        for (int64_t n = 0; n < N; ++n)
            for (int64_t o = 0; o < kOutChunk; ++o) acc[o] += d[n * ld + o];
    } else {
        for (int64_t n = 0; n < N; ++n)
            for (int64_t o = 0; o < oc; ++o) acc[o] += d[n * ld + o];
    }
    for (int64_t o = 0; o < oc; ++o) db[o] += acc[o];
}

// dinp (+)= dout . W by kGemmRows rows, each piece followed by epi(r0, rows); dW += dout^T
// . inp, db += colsum(dout) by kOutChunk output rows.
template <class S, class Epi>
void matmul_backward_impl(S* dinp, S* dW, S* db, const S* dout, const S* inp, const S* W, int64_t N, int64_t C,
                          int64_t OC, int threads, Into into, Epi epi) {
    const bool add = into == Into::Add;
    const int64_t n_row = dinp ? chunks(N, kGemmRows) : 0;
    const int64_t n_out = chunks(OC, kOutChunk);
    if constexpr (std::is_same_v<S, float>) {
        if (const detail::GemmFn gemm = kernel_for<S>()) {
            // items [0, n_out): dW, db by kOutChunk output rows (the longer items first);
            // items [n_out, n_out + n_row): dinp rows += dout rows . W
            parallel_for(n_row + n_out, threads, [&](int64_t it, int) {
                if (it >= n_out) {
                    const int64_t r0 = (it - n_out) * kGemmRows, rows = std::min(kGemmRows, N - r0);
                    gemm(gemm::strided_args(rows, C, OC, dout + r0 * OC, OC, 1, W, C, dinp + r0 * C, C, nullptr, add));
                    epi(r0, rows);
                    return;
                }
                const int64_t o0 = it * kOutChunk, oc = std::min(kOutChunk, OC - o0);
                // dW[o0:o0+oc] += dout[:, o0:o0+oc]^T inp, kGradRows tokens per pass: each
                // element still sums its N terms in ascending n (the partial sum goes
                // through memory between passes unchanged)
                for (int64_t n0 = 0; n0 < N; n0 += kGradRows) {
                    const int64_t nn = std::min(kGradRows, N - n0);
                    detail::GemmArgs ga = gemm::strided_args(oc, C, nn, dout + n0 * OC + o0, 1, OC, inp + n0 * C, C,
                                                             dW + o0 * C, C, nullptr, true);
                    ga.prefetch_b = true;  // inp: the saved activations, cold since the forward pass
                    gemm(ga);
                }
                if (db) {
                    column_sums_add(db + o0, dout + o0, N, OC, oc);
                }
            });
            return;
        }
    }
    // items [0, n_row): dinp rows += dout rows . W;  items [n_row, n_row + n_out): dW, db by output rows
    parallel_for(n_row + n_out, threads, [&](int64_t it, int) {
        if (it < n_row) {
            const int64_t r0 = it * kGemmRows, rows = std::min(kGemmRows, N - r0);
            MapM<S> di(dinp + r0 * C, rows, C);
            if (add) di.noalias() += MapC<S>(dout + r0 * OC, rows, OC) * MapC<S>(W, OC, C);
            else di.noalias() = MapC<S>(dout + r0 * OC, rows, OC) * MapC<S>(W, OC, C);
            epi(r0, rows);
            return;
        }
        const int64_t o0 = (it - n_row) * kOutChunk, oc = std::min(kOutChunk, OC - o0);
        const MapCS<S> d(dout + o0, N, oc, Eigen::OuterStride<>(OC));  // dout[:, o0:o0+oc]
        MapM<S>(dW + o0 * C, oc, C).noalias() += d.transpose() * MapC<S>(inp, N, C);
        if (db) {  // each output's sum over n in ascending order, rows read contiguously
            column_sums_add(db + o0, dout + o0, N, OC, oc);
        }
    });
}

}  // namespace

template <class S>
void matmul_backward_fast(S* dinp, S* dW, S* db, const S* dout, const S* inp, const S* W, int64_t N, int64_t C,
                          int64_t OC, int threads, Into into) {
    matmul_backward_impl(dinp, dW, db, dout, inp, W, N, C, OC, threads, into, [](int64_t, int64_t) {});
}

template <class S>
void matmul_act_backward_fast(S* dpre, S* dW, S* db, const S* dout, const S* act, const S* pre, const S* W, int64_t N,
                              int64_t C, int64_t OC, bool relu, int threads) {
    // dpre's rows first hold dact = dout . W, then become act'(pre) o dact in place
    matmul_backward_impl(dpre, dW, db, dout, act, W, N, C, OC, threads, Into::Set, [&](int64_t r0, int64_t rows) {
        S* d = dpre + r0 * C;
        activation_backward_block(d, pre + r0 * C, d, rows * C, relu, Into::Set);
    });
}

template <class S>
void layernorm_forward_fast(S* out, S* mean, S* rstd, const S* inp, const S* w, const S* b, int64_t N, int64_t D,
                            int threads, S eps) {
    parallel_for(chunks(N, kRowChunk), threads, [&](int64_t ci, int) {
        const int64_t r0 = ci * kRowChunk, rows = std::min(kRowChunk, N - r0);
        layernorm_forward_rows(out + r0 * D, mean + r0, rstd + r0, inp + r0 * D, w, b, rows, D, eps);
    });
}

template <class S>
void layernorm_backward_fast(S* dinp, S* dw, S* db, const S* dout, const S* inp, const S* w, const S* mean,
                             const S* rstd, int64_t N, int64_t D, int threads, Into into) {
    // each chunk's dw, db into its own row of `part`, then summed in chunk order
    const int64_t nc = chunks(N, kRowChunk);
    std::vector<S> part(static_cast<size_t>(nc * 2 * D), S(0));
    parallel_for(nc, threads, [&](int64_t ci, int) {
        const int64_t r0 = ci * kRowChunk, rows = std::min(kRowChunk, N - r0);
        S* pw = part.data() + ci * 2 * D;
        layernorm_backward_rows(dinp + r0 * D, pw, pw + D, dout + r0 * D, inp + r0 * D, w, mean + r0, rstd + r0, rows,
                                D, into);
    });
    for (int64_t ci = 0; ci < nc; ++ci)
        for (int64_t i = 0; i < D; ++i) {
            dw[i] += part[static_cast<size_t>(ci * 2 * D + i)];
            db[i] += part[static_cast<size_t>(ci * 2 * D + D + i)];
        }
}

template <class S>
void activation_forward_fast(S* out, const S* inp, int64_t n, bool relu, int threads) {
    const int64_t chunk = kRowChunk * 256;
    parallel_for(chunks(n, chunk), threads, [&](int64_t ci, int) {
        const int64_t i0 = ci * chunk;
        activation_forward_block(out + i0, inp + i0, std::min(chunk, n - i0), relu);
    });
}

template <class S>
void activation_backward_fast(S* dinp, const S* inp, const S* dout, int64_t n, bool relu, int threads, Into into) {
    const int64_t chunk = kRowChunk * 256;
    parallel_for(chunks(n, chunk), threads, [&](int64_t ci, int) {
        const int64_t i0 = ci * chunk;
        activation_backward_block(dinp + i0, inp + i0, dout + i0, std::min(chunk, n - i0), relu, into);
    });
}

template <class S>
void gelu_erf_forward_fast(S* out, const S* inp, int64_t n, int threads) {
    const int64_t chunk = kRowChunk * 256;
    parallel_for(chunks(n, chunk), threads, [&](int64_t ci, int) {
        const int64_t i0 = ci * chunk;
        gelu_erf_forward_block(out + i0, inp + i0, std::min(chunk, n - i0));
    });
}

template <class S>
void gelu_erf_backward_fast(S* dinp, const S* inp, const S* dout, int64_t n, int threads, Into into) {
    const int64_t chunk = kRowChunk * 256;
    parallel_for(chunks(n, chunk), threads, [&](int64_t ci, int) {
        const int64_t i0 = ci * chunk;
        gelu_erf_backward_block(dinp + i0, inp + i0, dout + i0, std::min(chunk, n - i0), into);
    });
}

template <class S>
int64_t crossentropy_forward_fast(S* losses, S* probs, const S* logits, const int32_t* targets, int64_t N, int64_t V,
                                  int threads) {
    const int64_t nc = chunks(N, kRowChunk);
    std::vector<int64_t> scored(static_cast<size_t>(nc), 0);
    parallel_for(nc, threads, [&](int64_t ci, int) {
        const int64_t r0 = ci * kRowChunk, rows = std::min(kRowChunk, N - r0);
        int64_t k = 0;
        for (int64_t n = r0; n < r0 + rows; ++n) {
            if (targets[n] < 0) {
                losses[n] = 0;
                std::fill(probs + n * V, probs + (n + 1) * V, S(0));
                continue;
            }
            k += crossentropy_forward(losses + n, probs + n * V, logits + n * V, targets + n, 1, V);
        }
        scored[static_cast<size_t>(ci)] = k;
    });
    int64_t total = 0;
    for (int64_t n : scored) total += n;
    return total;
}

template <class S>
void crossentropy_backward_fast(S* dlogits, const S* probs, const int32_t* targets, S scale, int64_t N, int64_t V,
                                int threads, Into into) {
    parallel_for(chunks(N, kRowChunk), threads, [&](int64_t ci, int) {
        const int64_t r0 = ci * kRowChunk, rows = std::min(kRowChunk, N - r0);
        if (into == Into::Set) std::fill(dlogits + r0 * V, dlogits + (r0 + rows) * V, S(0));  // in cache: cheap
        crossentropy_backward(dlogits + r0 * V, probs + r0 * V, targets + r0, scale, rows, V);
    });
}

namespace {
constexpr int64_t kElemChunk = kRowChunk * 1024;  // elements per piece of an elementwise op
}

template <class S>
void residual_forward_fast(S* out, const S* a, const S* b, int64_t n, int threads) {
    parallel_for(chunks(n, kElemChunk), threads, [&](int64_t ci, int) {
        const int64_t i0 = ci * kElemChunk;
        residual_forward(out + i0, a + i0, b + i0, std::min(kElemChunk, n - i0));
    });
}

template <class S>
void residual_backward_fast(S* da, S* db, const S* dout, int64_t n, int threads) {
    parallel_for(chunks(n, kElemChunk), threads, [&](int64_t ci, int) {
        const int64_t i0 = ci * kElemChunk;
        residual_backward(da + i0, db + i0, dout + i0, std::min(kElemChunk, n - i0));
    });
}

template <class S>
void zero_fast(S* x, int64_t n, int threads) {
    parallel_for(chunks(n, kElemChunk), threads, [&](int64_t ci, int) {
        const int64_t i0 = ci * kElemChunk;
        std::fill(x + i0, x + i0 + std::min(kElemChunk, n - i0), S(0));
    });
}

#define ATTN_TRAIN_FAST_INSTANTIATE(S)                                                                            \
    template void matmul_forward_fast<S>(S*, const S*, const S*, const S*, int64_t, int64_t, int64_t, int,        \
                                         const S*);                                                               \
    template void matmul_backward_fast<S>(S*, S*, S*, const S*, const S*, const S*, int64_t, int64_t, int64_t,    \
                                          int, Into);                                                             \
    template void matmul_act_forward_fast<S>(S*, S*, const S*, const S*, const S*, int64_t, int64_t, int64_t,     \
                                             bool, int, const S*);                                                \
    template void matmul_act_backward_fast<S>(S*, S*, S*, const S*, const S*, const S*, const S*, int64_t,        \
                                              int64_t, int64_t, bool, int);                                       \
    template void layernorm_forward_fast<S>(S*, S*, S*, const S*, const S*, const S*, int64_t, int64_t, int, S);  \
    template void layernorm_backward_fast<S>(S*, S*, S*, const S*, const S*, const S*, const S*, const S*,        \
                                             int64_t, int64_t, int, Into);                                        \
    template void activation_forward_fast<S>(S*, const S*, int64_t, bool, int);                                   \
    template void activation_backward_fast<S>(S*, const S*, const S*, int64_t, bool, int, Into);                  \
    template void gelu_erf_forward_fast<S>(S*, const S*, int64_t, int);                                           \
    template void gelu_erf_backward_fast<S>(S*, const S*, const S*, int64_t, int, Into);                          \
    template int64_t crossentropy_forward_fast<S>(S*, S*, const S*, const int32_t*, int64_t, int64_t, int);       \
    template void crossentropy_backward_fast<S>(S*, const S*, const int32_t*, S, int64_t, int64_t, int, Into);    \
    template void residual_forward_fast<S>(S*, const S*, const S*, int64_t, int);                                 \
    template void residual_backward_fast<S>(S*, S*, const S*, int64_t, int);                                      \
    template void zero_fast<S>(S*, int64_t, int);

}  // namespace attn::nn
