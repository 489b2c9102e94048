// lib/cpu/src/train_attention/training_attention_impl.hpp: the training path's attention with its
// weights kept (attn/cpu/training_attention.hpp), written once over the scalar type: per (batch,
// head) pair, scores through the caller's float GEMM or Eigen, the masked softmax and dS rows
// through the row kernels or plain loops. training_attention.cpp instantiates it for float;
// lib/cpu/f64/training_attention_f64.cpp for double (the tests' finite-difference checks, in
// attn_cpu_f64, which the library does not ship).
#pragma once

#include "attn/cpu/training_attention.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/parallel.hpp"
#include "attn/cpu/lanes.hpp"
#include "attn/cpu/rows.hpp"

namespace attn::cpu {

namespace {
template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using MapM = Eigen::Map<Mat<S>>;
template <class S>
using MapC = Eigen::Map<const Mat<S>>;
template <class S>
using MapMS = Eigen::Map<Mat<S>, 0, Eigen::OuterStride<>>;  // a column block of a wider matrix
template <class S>
using MapCS = Eigen::Map<const Mat<S>, 0, Eigen::OuterStride<>>;

// dst (cols, rows), row stride ld, (+)= src (rows, cols)^T
template <class S>
void add_transposed(S* dst, int64_t ld, const S* src, int64_t rows, int64_t cols, bool add) {
    if constexpr (std::is_same_v<S, float>)  // dst's row c (rows floats) gathers src's column c
        if (const auto* k = rows::row_kernels(); k != nullptr && 16 * cols < (int64_t{1} << 28))
            return k->transpose(dst, ld, src, rows, cols, cols, add);
    for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < rows; ++r) {
            const S v = src[r * cols + c];
            dst[c * ld + r] = add ? dst[c * ld + r] + v : v;
        }
}

// dS = factor * P o (dP - rowsum(P o dP)) over T rows of T, in place in dp
template <class S>
void ds_rows(S* dp, const S* P, int64_t T, S factor) {
    if constexpr (std::is_same_v<S, float>)
        if (const auto* k = rows::row_kernels()) return k->ds_rows(dp, P, T, factor);
    for (int64_t i = 0; i < T; ++i) {
        S* dpi = dp + i * T;
        const S* pi = P + i * T;
        const S rs = dot_lanes(pi, dpi, T);
        for (int64_t j = 0; j < T; ++j) dpi[j] = factor * pi[j] * (dpi[j] - rs);
    }
}

// The dropout multipliers of one (b, h) block: 0 or 1/(1-p), the same rule as the reference.
template <class S>
void dropout_mult(S* mult, int64_t T, uint64_t row0, float p, uint64_t seed) {
    const S keep = S(1) / (S(1) - static_cast<S>(p));
    for (int64_t e = 0; e < T * T; ++e) mult[e] = dropout_drops(seed, row0 + static_cast<uint64_t>(e), p) ? S(0) : keep;
}
}  // namespace

template <class S>
void training_attention_forward(S* out, S* att, const S* q, const S* k, const S* v, int64_t B, int64_t T, int64_t H,
                                int64_t Dk, int64_t Dv, S factor, bool causal, float p, uint64_t seed, int threads,
                                gemm::StridedFn gemm_fn, int64_t ld_qk, int64_t ld_v, int64_t b_first) {
    const int64_t QS = ld_qk ? ld_qk : H * Dk, VS = ld_v ? ld_v : H * Dv, OS = H * Dv;
    const gemm::StridedFn gemm = std::is_same_v<S, float> ? gemm_fn : nullptr;
    std::vector<std::vector<S>> scratch(gemm ? 0 : static_cast<size_t>(resolve_threads(threads)));
    parallel_for(B * H, threads, [&](int64_t bh, int tid) {
        const int64_t b = bh / H, h = bh % H;
        const MapCS<S> Q(q + b * T * QS + h * Dk, T, Dk, Eigen::OuterStride<>(QS));
        const MapCS<S> K(k + b * T * QS + h * Dk, T, Dk, Eigen::OuterStride<>(QS));
        const MapCS<S> Vh(v + b * T * VS + h * Dv, T, Dv, Eigen::OuterStride<>(VS));
        MapM<S> P(att + bh * T * T, T, T);
        if constexpr (std::is_same_v<S, float>) {
            if (gemm) {  // scores = Q K^T through K^T (Dk, T) in per-thread scratch
                S* kt = thread_scratch<S>(static_cast<size_t>(Dk * T), 1);
                rows::transpose(kt, K.data(), T, Dk, QS);
                gemm(gemm::strided_args(T, T, Dk, Q.data(), QS, 1, kt, T, P.data(), T, nullptr, false));
            } else {
                P.noalias() = Q * K.transpose();
            }
        } else {
            P.noalias() = Q * K.transpose();
        }
        // pass 1 (above): unscaled scores (T, T)
        // pass 2: masked, stable softmax per row
        // (Eigen's vectorised exp, within an ulp or two of std::exp). Eigen peels unaligned
        // leading elements into its scalar path (std::exp, a plain sum), so a result written
        // to an unaligned row would depend on the buffer's address; every transcendental and
        // every sum is therefore evaluated into the aligned array e, whose traversal depends
        // only on n: the same bits wherever the buffers live, at any thread count.
        // Float where the CPU has AVX-512, AVX2 or NEON (and ATTN_ISA allows it): the row kernel
        // of rows_avx512.cpp, rows_avx2.cpp or rows_neon.cpp (their own exp, no Eigen).
        auto softmax_rows = [&] {
            Eigen::Array<S, Eigen::Dynamic, 1> e(T);
            for (int64_t i = 0; i < T; ++i) {
                const int64_t n = causal ? i + 1 : T;
                S* row = att + (bh * T + i) * T;
                auto en = e.head(n);
                en = Eigen::Map<const Eigen::Array<S, Eigen::Dynamic, 1>>(row, n) * factor;
                en = (en - en.template maxCoeff<Eigen::PropagateNaN>()).exp();  // a NaN makes the row NaN
                const S sum = en.sum();
                en *= S(1) / sum;
                std::copy(e.data(), e.data() + n, row);
                std::fill(row + n, row + T, std::isnan(sum) ? sum : S(0));  // as the row kernels
            }
        };
        const auto* k = std::is_same_v<S, float> ? rows::row_kernels() : nullptr;
        if constexpr (std::is_same_v<S, float>)
            if (k != nullptr) k->softmax_rows(att + bh * T * T, T, factor, causal);
        if (k == nullptr) softmax_rows();
        // pass 3: out_h = dropout(P) V_h, written into the merged (B, T, H*Dv) layout
        MapMS<S> O(out + b * T * OS + h * Dv, T, Dv, Eigen::OuterStride<>(OS));
        S* pd = nullptr;  // dropout(P), or null for P itself
        if (p > 0) {
            if (gemm) {
                pd = thread_scratch<S>(static_cast<size_t>(T * T), 0);
            } else {
                auto& s = scratch[static_cast<size_t>(tid)];
                s.resize(static_cast<size_t>(T * T));
                pd = s.data();
            }
            dropout_mult(pd, T, static_cast<uint64_t>((b_first * H + bh) * T * T), p, seed);
            MapM<S> Pd(pd, T, T);
            Pd.array() *= P.array();
        }
        if constexpr (std::is_same_v<S, float>) {
            if (gemm) {
                gemm(gemm::strided_args(T, Dv, T, pd ? pd : P.data(), T, 1, Vh.data(), VS, O.data(), OS, nullptr,
                                        false));
                return;
            }
        }
        if (pd) O.noalias() = MapM<S>(pd, T, T) * Vh;
        else O.noalias() = P * Vh;
    });
}

template <class S>
void training_attention_backward(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v,
                                 const S* att, int64_t B, int64_t T, int64_t H, int64_t Dk, int64_t Dv, S factor,
                                 float p, uint64_t seed, int threads, gemm::StridedFn gemm_fn, int64_t ld_qk,
                                 int64_t ld_v, bool accumulate, int64_t b_first) {
    const int64_t QS = ld_qk ? ld_qk : H * Dk, VS = ld_v ? ld_v : H * Dv, OS = H * Dv;
    const gemm::StridedFn gemm = std::is_same_v<S, float> ? gemm_fn : nullptr;
    const bool add = accumulate;  // each (b, h) writes its own block of dq, dk, dv
    std::vector<std::vector<S>> scratch(gemm ? 0 : static_cast<size_t>(resolve_threads(threads)));
    parallel_for(B * H, threads, [&](int64_t bh, int tid) {
        const int64_t b = bh / H, h = bh % H;
        const MapCS<S> Q(q + b * T * QS + h * Dk, T, Dk, Eigen::OuterStride<>(QS));
        const MapCS<S> K(k + b * T * QS + h * Dk, T, Dk, Eigen::OuterStride<>(QS));
        const MapCS<S> Vh(v + b * T * VS + h * Dv, T, Dv, Eigen::OuterStride<>(VS));
        const MapCS<S> dO(dout + b * T * OS + h * Dv, T, Dv, Eigen::OuterStride<>(OS));
        MapMS<S> dQ(dq + b * T * QS + h * Dk, T, Dk, Eigen::OuterStride<>(QS));
        MapMS<S> dK(dk + b * T * QS + h * Dk, T, Dk, Eigen::OuterStride<>(QS));
        MapMS<S> dV(dv + b * T * VS + h * Dv, T, Dv, Eigen::OuterStride<>(VS));
        const MapC<S> P(att + bh * T * T, T, T);
        if constexpr (std::is_same_v<S, float>) {
            if (gemm) {
                S* dp = thread_scratch<S>(static_cast<size_t>(2 * T * T), 0);
                S* m = dp + T * T;
                S* vt = thread_scratch<S>(static_cast<size_t>(Dv * T), 1);
                // dPd = dO V^T (T, T), through V^T (Dv, T)
                rows::transpose(vt, Vh.data(), T, Dv, VS);
                gemm(gemm::strided_args(T, T, Dv, dO.data(), OS, 1, vt, T, dp, T, nullptr, false));
                const S* pd = P.data();
                if (p > 0) {
                    dropout_mult(m, T, static_cast<uint64_t>((b_first * H + bh) * T * T), p, seed);
                    for (int64_t e = 0; e < T * T; ++e) dp[e] *= m[e];  // dP = dPd o mult
                    for (int64_t e = 0; e < T * T; ++e) m[e] *= P.data()[e];  // m = Pd
                    pd = m;
                }
                // dV += Pd^T dO, computed as its transpose dV^T (Dv, T) = dO^T Pd into scratch: a
                // product T wide instead of Dv (16 at the usual sizes: a one-vector-wide tile
                // runs load-bound), then added in transposed
                S* tt = thread_scratch<S>(static_cast<size_t>(std::max(Dk, Dv) * T), 2);
                gemm::StridedArgs gv = gemm::strided_args(Dv, T, T, dO.data(), 1, OS, pd, T, tt, T, nullptr, false);
                gv.prefetch_b = pd == P.data();  // the saved weights, cold since the forward pass
                gemm(gv);
                add_transposed(dV.data(), VS, tt, Dv, T, add);
                ds_rows(dp, P.data(), T, factor);  // dS = factor * P o (dP - rowsum(P o dP)), in place
                // dQ += dS K; dK += dS^T Q, as dK^T (Dk, T) = Q^T dS like dV above
                gemm(gemm::strided_args(T, Dk, T, dp, T, 1, K.data(), QS, dQ.data(), QS, nullptr, add));
                gemm(gemm::strided_args(Dk, T, T, Q.data(), 1, QS, dp, T, tt, T, nullptr, false));
                add_transposed(dK.data(), QS, tt, Dk, T, add);
                return;
            }
        }
        auto& s = scratch[static_cast<size_t>(tid)];
        s.resize(static_cast<size_t>(2 * T * T));
        MapM<S> dP(s.data(), T, T), M(s.data() + T * T, T, T);
        // dPd = dO V^T (T, T)
        dP.noalias() = dO * Vh.transpose();
        if (!add) {
            dQ.setZero();
            dK.setZero();
            dV.setZero();
        }
        if (p > 0) {
            dropout_mult(M.data(), T, static_cast<uint64_t>((b_first * H + bh) * T * T), p, seed);
            dP.array() *= M.array();                      // dP = dPd o mult
            M.array() *= P.array();                       // M = Pd
            dV.noalias() += M.transpose() * dO;           // dV += Pd^T dO
        } else {
            dV.noalias() += P.transpose() * dO;
        }
        // dS = factor * P o (dP - rowsum(P o dP)), in place in dP
        for (int64_t i = 0; i < T; ++i) {
            S* dpi = dP.data() + i * T;
            const S* pi = P.data() + i * T;
            S rs = 0;
            for (int64_t j = 0; j < T; ++j) rs += pi[j] * dpi[j];
            for (int64_t j = 0; j < T; ++j) dpi[j] = factor * pi[j] * (dpi[j] - rs);
        }
        dQ.noalias() += dP * K;
        dK.noalias() += dP.transpose() * Q;
    });
}

}  // namespace attn::cpu
