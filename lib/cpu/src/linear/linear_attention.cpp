// Linear attention: elu+1, Performer FAVOR+, cosFormer; O(T) forward and backward and
// the explicit O(T²) form (see attn/cpu/linear_attention.hpp), in float32. One head's
// work, written once over the scalar type, is linear_heads.hpp.
#include "attn/cpu/linear_attention.hpp"

#include <algorithm>
#include <cmath>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "linear_heads.hpp"

namespace attn {

namespace {

using linear_heads::Mat;

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
        const int64_t ok = bh * d.T * d.Dk, ov = bh * d.T * d.Dv;
        linear_heads::head_forward<float>(q.ptr() + ok, k.ptr() + ok, v.ptr() + ov, d.T, d.Dk, d.Dv, opt,
                                          out.ptr() + ov);
    });
    return out;
}

Tensor linear_attention_explicit(const Tensor& q, const Tensor& k, const Tensor& v, const LinearOptions& opt) {
    const Dims d = check_inputs(q, k, v, opt);
    Tensor out({d.B, d.H, d.T, d.Dv});
    for (int64_t bh = 0; bh < d.B * d.H; ++bh) {
        const int64_t ok = bh * d.T * d.Dk, ov = bh * d.T * d.Dv;
        linear_heads::head_explicit<float>(q.ptr() + ok, k.ptr() + ok, v.ptr() + ov, d.T, d.Dk, d.Dv, opt,
                                           out.ptr() + ov);
    }
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
        linear_heads::head_backward<float>(q.ptr() + ok, k.ptr() + ok, v.ptr() + ov, d.T, d.Dk, d.Dv, opt,
                                           dout.ptr() + ov, g.dq.ptr() + ok, g.dk.ptr() + ok, g.dv.ptr() + ov);
    });
    return g;
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
