// One head of linear attention, written once over the scalar type S: the feature maps, the
// O(T) forward (chunked prefix sums when causal), the explicit O(T²) form and the O(T)
// backward. linear_attention.cpp runs them in float (the library's calls); the variant
// attention's double instance and lib/cpu/f64/linear_attention_f64.cpp in double (the tests'
// finite-difference checks, in attn_cpu_f64, which the library does not ship).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include <Eigen/Dense>

#include "attn/cpu/linear_attention.hpp"

namespace attn::linear_heads {

template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using Vec = Eigen::Matrix<S, Eigen::Dynamic, 1>;
template <class S>
using CMap = Eigen::Map<const Mat<S>>;
template <class S>
using MMap = Eigen::Map<Mat<S>>;

// The denominator's guard: only ReLU features can sum to 0.
template <class S>
S eps_of(const LinearOptions& opt) {
    return opt.map == FeatureMap::CosFormer ? S(1e-6) : S(0);
}

// One head's feature maps: Φ [T, m] of x [T, Dk], and dx from dΦ.
template <class S>
struct Features {
    const LinearOptions& opt;
    int64_t T, Dk, m;
    Mat<S> omega;  // Favor: [m, Dk]

    Features(const LinearOptions& o, int64_t T_, int64_t Dk_) : opt(o), T(T_), Dk(Dk_), m(feature_count(o, Dk_)) {
        if (opt.map == FeatureMap::Favor) {
            const std::vector<double> w = favor_projection(m, Dk, opt.seed, opt.draw);
            omega = Eigen::Map<const Mat<double>>(w.data(), m, Dk).template cast<S>();
        }
    }
    S xscale() const { return S(1) / std::pow(S(Dk), S(0.25)); }
    S theta(int64_t i) const { return std::numbers::pi_v<S> * S(i) / (S(2) * S(T)); }

    // queries: Favor's exponent shift is per row; keys: one shift for the whole head.
    Mat<S> phi(const CMap<S>& x, bool query) const {
        Mat<S> f(T, m);
        switch (opt.map) {
            case FeatureMap::EluPlusOne:
                f = x.unaryExpr([](S a) { return a > S(0) ? a + S(1) : std::exp(a); });
                break;
            case FeatureMap::CosFormer:
                for (int64_t i = 0; i < T; ++i) {
                    const S c = std::cos(theta(i)), s = std::sin(theta(i));
                    for (int64_t d = 0; d < Dk; ++d) {
                        const S r = std::max(x(i, d), S(0));
                        f(i, d) = r * c;
                        f(i, Dk + d) = r * s;
                    }
                }
                break;
            case FeatureMap::Favor: {
                const S xs = xscale();
                f.noalias() = (x * xs) * omega.transpose();  // ω_r · x'
                const Vec<S> h = x.rowwise().squaredNorm() * (xs * xs / S(2));
                f.colwise() -= h;
                if (query) {
                    const Vec<S> c = f.rowwise().maxCoeff();
                    f.colwise() -= c;
                } else if (T > 0) {
                    f.array() -= f.maxCoeff();
                }
                f = (f.array().exp() / std::sqrt(S(m))).matrix();
                break;
            }
        }
        return f;
    }

    // dx [T, Dk] from dΦ, given x and Φ = phi(x). Favor's shift cancels in the output, so
    // it is a constant here.
    Mat<S> back(const CMap<S>& x, const Mat<S>& f, const Mat<S>& df) const {
        Mat<S> dx(T, Dk);
        switch (opt.map) {
            case FeatureMap::EluPlusOne:
                dx = df.cwiseProduct(x.unaryExpr([](S a) { return a > S(0) ? S(1) : std::exp(a); }));
                break;
            case FeatureMap::CosFormer:
                for (int64_t i = 0; i < T; ++i) {
                    const S c = std::cos(theta(i)), s = std::sin(theta(i));
                    for (int64_t d = 0; d < Dk; ++d)
                        dx(i, d) = x(i, d) > S(0) ? df(i, d) * c + df(i, Dk + d) * s : S(0);
                }
                break;
            case FeatureMap::Favor: {
                // dφ_r/dx' = φ_r (ω_r - x'): dx' = (dΦ∘Φ) ω - x' · rowsum(dΦ∘Φ)
                const S xs = xscale();
                const Mat<S> g = df.cwiseProduct(f);
                const Vec<S> rs = g.rowwise().sum();
                dx.noalias() = g * omega;
                dx -= (x * xs).cwiseProduct(rs.replicate(1, Dk));
                dx *= xs;
                break;
            }
        }
        return dx;
    }
};

// Causal chunk [c0, c0 + n): A = Φq_c Φk_cᵀ with the upper triangle (j > i) zeroed.
template <class S>
Mat<S> chunk_products(const Mat<S>& pq, const Mat<S>& pk, int64_t c0, int64_t n) {
    Mat<S> A = pq.middleRows(c0, n) * pk.middleRows(c0, n).transpose();
    A.template triangularView<Eigen::StrictlyUpper>().setZero();
    return A;
}

// One head, O(T): out [T, Dv]. When `states` is given (the backward), it receives the
// state (S, z) before each causal chunk, and den the denominators.
template <class S>
void head_forward(const S* qp, const S* kp, const S* vp, int64_t T, int64_t Dk, int64_t Dv, const LinearOptions& opt,
                  S* outp, std::vector<Mat<S>>* states = nullptr, std::vector<Vec<S>>* zs = nullptr,
                  Vec<S>* den_out = nullptr) {
    const Features<S> F(opt, T, Dk);
    const CMap<S> q(qp, T, Dk), k(kp, T, Dk), v(vp, T, Dv);
    MMap<S> out(outp, T, Dv);
    const Mat<S> pq = F.phi(q, true), pk = F.phi(k, false);
    const S eps = eps_of<S>(opt);
    Vec<S> den(T);
    if (!opt.causal) {
        const Mat<S> st = pk.transpose() * v;  // [m, Dv]
        const Vec<S> z = pk.colwise().sum().transpose();
        den = (pq * z).array() + eps;
        out.noalias() = pq * st;
    } else {
        Mat<S> st = Mat<S>::Zero(F.m, Dv);
        Vec<S> z = Vec<S>::Zero(F.m);
        for (int64_t c0 = 0; c0 < T; c0 += opt.chunk) {
            const int64_t n = std::min(opt.chunk, T - c0);
            if (states != nullptr) {
                states->push_back(st);
                zs->push_back(z);
            }
            const Mat<S> A = chunk_products(pq, pk, c0, n);
            out.middleRows(c0, n).noalias() = A * v.middleRows(c0, n);
            out.middleRows(c0, n).noalias() += pq.middleRows(c0, n) * st;
            den.segment(c0, n) = (A.rowwise().sum() + pq.middleRows(c0, n) * z).array() + eps;
            st.noalias() += pk.middleRows(c0, n).transpose() * v.middleRows(c0, n);
            z += pk.middleRows(c0, n).colwise().sum().transpose();
        }
    }
    out.array().colwise() /= den.array();
    if (den_out != nullptr) *den_out = den;
}

// One head, the explicit O(T²) form.
template <class S>
void head_explicit(const S* qp, const S* kp, const S* vp, int64_t T, int64_t Dk, int64_t Dv, const LinearOptions& opt,
                   S* outp) {
    const Features<S> F(opt, T, Dk);
    const CMap<S> q(qp, T, Dk), k(kp, T, Dk), v(vp, T, Dv);
    Mat<S> A = F.phi(q, true) * F.phi(k, false).transpose();  // A_ij = φ(q_i)·φ(k_j)
    if (opt.causal) A.template triangularView<Eigen::StrictlyUpper>().setZero();
    const Vec<S> den = A.rowwise().sum().array() + eps_of<S>(opt);
    MMap<S> out(outp, T, Dv);
    out.noalias() = A * v;
    out.array().colwise() /= den.array();
}

// One head's backward, O(T): dq, dk, dv from dout.
template <class S>
void head_backward(const S* qp, const S* kp, const S* vp, int64_t T, int64_t Dk, int64_t Dv, const LinearOptions& opt,
                   const S* doutp, S* dqp, S* dkp, S* dvp) {
    const Features<S> F(opt, T, Dk);
    const CMap<S> q(qp, T, Dk), k(kp, T, Dk), v(vp, T, Dv), dout(doutp, T, Dv);
    const Mat<S> pq = F.phi(q, true), pk = F.phi(k, false);
    Mat<S> out(T, Dv);
    std::vector<Mat<S>> states;
    std::vector<Vec<S>> zs;
    Vec<S> den;
    head_forward<S>(qp, kp, vp, T, Dk, Dv, opt, out.data(), &states, &zs, &den);
    // out = num / den: dnum = dout / den, dden = -(dout · out) / den
    const Mat<S> dnum = dout.array().colwise() / den.array();
    const Vec<S> dden = -(dout.cwiseProduct(out).rowwise().sum().array() / den.array()).matrix();
    Mat<S> dpq(T, F.m), dpk(T, F.m);
    MMap<S> dv(dvp, T, Dv);
    if (!opt.causal) {
        const Mat<S> st = pk.transpose() * v;
        const Vec<S> z = pk.colwise().sum().transpose();
        dpq.noalias() = dnum * st.transpose();
        dpq.noalias() += dden * z.transpose();
        const Mat<S> G = pq.transpose() * dnum;  // dS
        const Vec<S> gz = pq.transpose() * dden;  // dz
        dpk.noalias() = v * G.transpose();
        dpk.rowwise() += gz.transpose();
        dv.noalias() = pk * G;
    } else {
        // reverse over chunks; G, gz: the gradients of the state from the later chunks
        Mat<S> G = Mat<S>::Zero(F.m, Dv);
        Vec<S> gz = Vec<S>::Zero(F.m);
        const int64_t nc = static_cast<int64_t>(states.size());
        for (int64_t c = nc - 1; c >= 0; --c) {
            const int64_t c0 = c * opt.chunk, n = std::min(opt.chunk, T - c0);
            const Mat<S> A = chunk_products(pq, pk, c0, n);
            Mat<S> dA = dnum.middleRows(c0, n) * v.middleRows(c0, n).transpose();
            dA.colwise() += dden.segment(c0, n);
            dA.template triangularView<Eigen::StrictlyUpper>().setZero();
            const Mat<S>& st = states[static_cast<size_t>(c)];
            const Vec<S>& z = zs[static_cast<size_t>(c)];
            dpq.middleRows(c0, n).noalias() = dA * pk.middleRows(c0, n);
            dpq.middleRows(c0, n).noalias() += dnum.middleRows(c0, n) * st.transpose();
            dpq.middleRows(c0, n).noalias() += dden.segment(c0, n) * z.transpose();
            dpk.middleRows(c0, n).noalias() = dA.transpose() * pq.middleRows(c0, n);
            dpk.middleRows(c0, n).noalias() += v.middleRows(c0, n) * G.transpose();
            dpk.middleRows(c0, n).rowwise() += gz.transpose();
            dv.middleRows(c0, n).noalias() = A.transpose() * dnum.middleRows(c0, n);
            dv.middleRows(c0, n).noalias() += pk.middleRows(c0, n) * G;
            G.noalias() += pq.middleRows(c0, n).transpose() * dnum.middleRows(c0, n);
            gz.noalias() += pq.middleRows(c0, n).transpose() * dden.segment(c0, n);
        }
    }
    MMap<S>(dqp, T, Dk) = F.back(q, pq, dpq);
    MMap<S>(dkp, T, Dk) = F.back(k, pk, dpk);
}

}  // namespace attn::linear_heads
