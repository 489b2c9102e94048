// Linear attention: elu+1, Performer FAVOR+, cosFormer; O(T) forward and backward and
// the explicit O(T²) form (see attn/cpu/linear_attention.hpp). Written once over the
// scalar type S (float for the library calls, double for the finite-difference checks).
#include "attn/cpu/linear_attention.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"

namespace attn {

namespace {

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

struct Dims {
    int64_t B, H, T, Dk, Dv;
};

Dims check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const LinearOptions& opt) {
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
        throw ShapeError(fmt::format("linear attention wants q, k, v of rank 4 (B, H, T, D), got {}, {}, {}",
                                     shape_str(q.shape), shape_str(k.shape), shape_str(v.shape)));
    const Dims d{q.shape[0], q.shape[1], q.shape[2], q.shape[3], v.shape[3]};
    if (k.shape != q.shape || v.shape[0] != d.B || v.shape[1] != d.H || v.shape[2] != d.T)
        throw ShapeError(
            fmt::format("linear attention wants q, k (B, H, T, Dk) and v (B, H, T, Dv) of one T, got {}, {}, {}",
                        shape_str(q.shape), shape_str(k.shape), shape_str(v.shape)));
    if (opt.map == FeatureMap::Favor && opt.features < 1)
        throw InputError(fmt::format("FAVOR+ needs at least 1 random feature, got {}", opt.features));
    if (opt.causal && opt.chunk < 1)
        throw InputError(fmt::format("linear attention chunk {} must be at least 1", opt.chunk));
    return d;
}

}  // namespace

std::string feature_map_name(FeatureMap f) {
    switch (f) {
        case FeatureMap::EluPlusOne: return "elu+1";
        case FeatureMap::Favor: return "favor+";
        case FeatureMap::CosFormer: return "cosformer";
    }
    return "?";
}

int64_t feature_count(const LinearOptions& opt, int64_t Dk) {
    switch (opt.map) {
        case FeatureMap::EluPlusOne: return Dk;
        case FeatureMap::Favor: return opt.features;
        case FeatureMap::CosFormer: return 2 * Dk;
    }
    return Dk;
}

std::vector<double> favor_projection(int64_t m, int64_t Dk, uint64_t seed, uint64_t draw) {
    // Blocks of Dk rows: a Gaussian Dk×Dk block, orthonormalised (Gram-Schmidt, twice for
    // accuracy), each row then scaled by the norm of an independent Gaussian Dk-vector, so
    // every row has the length distribution of a Gaussian row while the block is orthogonal.
    Rng r(seed, 0x5eed0000 + draw);
    std::vector<double> w(static_cast<size_t>(m * Dk));
    for (int64_t b0 = 0; b0 < m; b0 += Dk) {
        Mat<double> g(Dk, Dk);
        for (int64_t i = 0; i < Dk; ++i)
            for (int64_t d = 0; d < Dk; ++d) g(i, d) = r.normal_double();
        for (int64_t i = 0; i < Dk; ++i)
            for (int pass = 0; pass < 2; ++pass) {
                for (int64_t p = 0; p < i; ++p) g.row(i) -= g.row(i).dot(g.row(p)) * g.row(p);
                g.row(i) /= g.row(i).norm();
            }
        for (int64_t i = 0; i < Dk && b0 + i < m; ++i) {
            double s = 0;
            for (int64_t d = 0; d < Dk; ++d) {
                const double x = r.normal_double();
                s += x * x;
            }
            for (int64_t d = 0; d < Dk; ++d) w[static_cast<size_t>((b0 + i) * Dk + d)] = g(i, d) * std::sqrt(s);
        }
    }
    return w;
}

Tensor linear_attention(const Tensor& q, const Tensor& k, const Tensor& v, const LinearOptions& opt, int threads) {
    const Dims d = check_inputs(q, k, v, opt);
    Tensor out({d.B, d.H, d.T, d.Dv});
    parallel_for(d.B * d.H, threads, [&](int64_t bh, int) {
        head_forward<float>(q.ptr() + bh * d.T * d.Dk, k.ptr() + bh * d.T * d.Dk, v.ptr() + bh * d.T * d.Dv, d.T, d.Dk,
                            d.Dv, opt, out.ptr() + bh * d.T * d.Dv);
    });
    return out;
}

Tensor linear_attention_explicit(const Tensor& q, const Tensor& k, const Tensor& v, const LinearOptions& opt) {
    const Dims d = check_inputs(q, k, v, opt);
    Tensor out({d.B, d.H, d.T, d.Dv});
    for (int64_t bh = 0; bh < d.B * d.H; ++bh)
        head_explicit<float>(q.ptr() + bh * d.T * d.Dk, k.ptr() + bh * d.T * d.Dk, v.ptr() + bh * d.T * d.Dv, d.T, d.Dk,
                             d.Dv, opt, out.ptr() + bh * d.T * d.Dv);
    return out;
}

LinearGrads linear_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const LinearOptions& opt,
                                      const Tensor& dout, int threads) {
    const Dims d = check_inputs(q, k, v, opt);
    if (dout.shape != Shape{d.B, d.H, d.T, d.Dv})
        throw ShapeError(fmt::format("linear attention backward: dout {} must be {}", shape_str(dout.shape),
                                     shape_str({d.B, d.H, d.T, d.Dv})));
    LinearGrads g{Tensor(q.shape), Tensor(k.shape), Tensor(v.shape)};
    parallel_for(d.B * d.H, threads, [&](int64_t bh, int) {
        const int64_t ok = bh * d.T * d.Dk, ov = bh * d.T * d.Dv;
        head_backward<float>(q.ptr() + ok, k.ptr() + ok, v.ptr() + ov, d.T, d.Dk, d.Dv, opt, dout.ptr() + ov,
                             g.dq.ptr() + ok, g.dk.ptr() + ok, g.dv.ptr() + ov);
    });
    return g;
}

std::vector<double> linear_head_f64(const std::vector<double>& q, const std::vector<double>& k,
                                    const std::vector<double>& v, int64_t T, int64_t Dk, int64_t Dv,
                                    const LinearOptions& opt, bool explicit_form) {
    std::vector<double> out(static_cast<size_t>(T * Dv));
    if (explicit_form)
        head_explicit<double>(q.data(), k.data(), v.data(), T, Dk, Dv, opt, out.data());
    else
        head_forward<double>(q.data(), k.data(), v.data(), T, Dk, Dv, opt, out.data());
    return out;
}

void linear_head_backward_f64(const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v, int64_t T, int64_t Dk, int64_t Dv,
                              const LinearOptions& opt, const std::vector<double>& dout, std::vector<double>& dq,
                              std::vector<double>& dk, std::vector<double>& dv) {
    dq.assign(static_cast<size_t>(T * Dk), 0.0);
    dk.assign(static_cast<size_t>(T * Dk), 0.0);
    dv.assign(static_cast<size_t>(T * Dv), 0.0);
    head_backward<double>(q.data(), k.data(), v.data(), T, Dk, Dv, opt, dout.data(), dq.data(), dk.data(), dv.data());
}

double linear_attention_workspace_bytes(int64_t T, int64_t Dk, int64_t Dv, const LinearOptions& opt,
                                        int heads_in_flight, bool backward) {
    const double m = static_cast<double>(feature_count(opt, Dk)), t = static_cast<double>(T);
    const double C = opt.causal ? static_cast<double>(std::min(opt.chunk, std::max<int64_t>(T, 1))) : 0.0;
    double per_head = 2 * t * m + m * (Dv + 1) + C * C + t;  // Φq, Φk, S and z, one chunk's A, den
    if (opt.map == FeatureMap::Favor) per_head += m * Dk;     // ω
    if (backward) {
        const double chunks = opt.causal ? std::ceil(t / C) : 1.0;
        per_head += chunks * m * (Dv + 1)  // the states before each chunk
                    + 2 * t * m            // dΦq, dΦk
                    + t * Dv * 2           // out, dnum
                    + 2 * C * C;           // A, dA
    }
    return 4.0 * per_head * heads_in_flight;
}

}  // namespace attn
