// The Elman RNN's pass (attn/nn/elman.hpp): forward and backward through time with Eigen, one
// (B, H) matrix product per step, written once over the scalar type. elman.cpp instantiates it
// for float (the RNN of experiment "distance"); lib/nn/f64/elman_f64.cpp for double (the tests'
// finite-difference check, in attn_nn_f64, which the library does not ship).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/nn/elman.hpp"

namespace attn {

template <class S>
RnnStats elman_pass(int64_t V, int64_t H, const std::vector<const S*>& P, const std::vector<S*>& G,
                    const int32_t* tok, const int32_t* tgt, int64_t B, int64_t T) {
    using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using Vec = Eigen::Matrix<S, 1, Eigen::Dynamic>;
    using CMap = Eigen::Map<const Mat>;
    using MapM = Eigen::Map<Mat>;
    if (P.size() != 5) throw InputError("elman: 5 parameter tensors expected");
    for (int64_t i = 0; i < B * T; ++i)
        if (tok[i] < 0 || tok[i] >= V) throw InputError(fmt::format("elman: token {} outside [0, {})", tok[i], V));
    const CMap E(P[0], V, H), W(P[1], H, H), Wy(P[3], V, H);
    const Eigen::Map<const Vec> b(P[2], H), by(P[4], V);
    std::vector<Mat> h(static_cast<size_t>(T + 1), Mat::Zero(B, H));
    std::vector<Mat> dlog(static_cast<size_t>(T));
    RnnStats st;
    double loss = 0;
    int64_t scored = 0;
    for (int64_t i = 0; i < B * T; ++i) scored += tgt[i] >= 0;
    for (int64_t t = 0; t < T; ++t) {
        Mat a = h[static_cast<size_t>(t)] * W.transpose();
        for (int64_t r = 0; r < B; ++r) a.row(r) += E.row(tok[r * T + t]) + b;
        h[static_cast<size_t>(t + 1)] = a.array().tanh().matrix();
        Mat logits = h[static_cast<size_t>(t + 1)] * Wy.transpose();
        logits.rowwise() += by;
        Mat& d = dlog[static_cast<size_t>(t)];
        d = Mat::Zero(B, V);
        for (int64_t r = 0; r < B; ++r) {
            const int32_t y = tgt[r * T + t];
            if (y < 0) continue;
            const S mx = logits.row(r).maxCoeff();
            S z = 0;
            for (int64_t c = 0; c < V; ++c) z += std::exp(logits(r, c) - mx);
            loss += double(std::log(z) + mx - logits(r, y));
            int64_t am = 0;
            for (int64_t c = 1; c < V; ++c)
                if (logits(r, c) > logits(r, am)) am = c;
            st.correct += am == y;
            for (int64_t c = 0; c < V; ++c) d(r, c) = std::exp(logits(r, c) - mx) / z / S(scored);
            d(r, y) -= S(1) / S(scored);
        }
    }
    st.counted = scored;
    st.loss = scored ? loss / double(scored) : 0.0;
    if (G.empty()) return st;
    MapM dE(G[0], V, H), dW(G[1], H, H), dWy(G[3], V, H);
    Eigen::Map<Vec> db(G[2], H), dby(G[4], V);
    dE.setZero(), dW.setZero(), dWy.setZero(), db.setZero(), dby.setZero();
    Mat da_next = Mat::Zero(B, H);
    for (int64_t t = T - 1; t >= 0; --t) {
        const Mat& ht = h[static_cast<size_t>(t + 1)];
        const Mat& d = dlog[static_cast<size_t>(t)];
        dWy.noalias() += d.transpose() * ht;
        dby += d.colwise().sum();
        Mat dh = d * Wy;
        dh.noalias() += da_next * W;
        Mat da = (dh.array() * (S(1) - ht.array().square())).matrix();
        dW.noalias() += da.transpose() * h[static_cast<size_t>(t)];
        db += da.colwise().sum();
        for (int64_t r = 0; r < B; ++r) dE.row(tok[r * T + t]) += da.row(r);
        da_next = std::move(da);
    }
    return st;
}

}  // namespace attn
