// tests/lab_test_util.hpp: helpers of the lab model's tests (test_experiments_lab.cpp,
// test_experiments_length.cpp): a toy batch, the loss and gradients in double, and the
// finite-difference check of every parameter tensor.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/experiments/lab_model.hpp"

namespace attn::test {

struct Toy {
    std::vector<int32_t> tok, tgt;
};
// B x T random tokens below V; every third position unscored (target -1).
inline Toy toy(int64_t B, int64_t T, int64_t V, uint64_t seed) {
    Rng r(seed, 7);
    Toy t;
    for (int64_t i = 0; i < B * T; ++i) {
        t.tok.push_back(static_cast<int32_t>(r.next_u64() % uint64_t(V)));
        t.tgt.push_back(i % 3 == 0 ? -1 : static_cast<int32_t>(r.next_u64() % uint64_t(V)));
    }
    return t;
}

// Parameters in double from an initialised float model.
inline std::vector<std::vector<double>> as_double(lab::LabModel& m) {
    std::vector<std::vector<double>> p;
    for (auto& t : m.values()) p.emplace_back(t.data.begin(), t.data.end());
    return p;
}

// The loss of one pass in double (dropout seeded 1234 when train); grads (optional) are
// resized and filled.
inline double loss_at(const lab::LabConfig& c, std::vector<std::vector<double>>& p, const Toy& d, int64_t B, int64_t T,
                      bool train, std::vector<std::vector<double>>* grads) {
    std::vector<const double*> W;
    std::vector<double*> G;
    for (auto& t : p) W.push_back(t.data());
    if (grads) {
        grads->clear();
        for (auto& t : p) grads->emplace_back(t.size(), 0.0);
        for (auto& g : *grads) G.push_back(g.data());
    }
    return lab::lab_pass<double>(c, W, G, d.tok.data(), d.tgt.data(), B, T, train, 1234, 1).loss;
}

// Every parameter tensor: up to 6 elements against central differences. h = 1e-5 in
// double: truncation error ~h^2 * f''' ~ 1e-10, rounding ~1e-16/h ~ 1e-11, so
// 1e-7 + 1e-5 |g| leaves two orders of margin while catching any wrong term. qk_scale
// multiplies W_q and W_k first (3: attention far from uniform, so its terms matter).
inline void check_lab_grads(const lab::LabConfig& c, int64_t B, int64_t T, bool train, double qk_scale = 1.0) {
    lab::LabModel m(c);
    m.init(3);
    auto p = as_double(m);
    for (size_t t = 0; t < p.size(); ++t)
        if (m.params()[t].name.find("q_proj.weight") != std::string::npos ||
            m.params()[t].name.find("k_proj.weight") != std::string::npos)
            for (double& x : p[t]) x *= qk_scale;
    const Toy d = toy(B, T, c.vocab, 11);
    std::vector<std::vector<double>> g;
    loss_at(c, p, d, B, T, train, &g);
    Rng pick(5, 1);
    for (size_t t = 0; t < p.size(); ++t) {
        for (int k = 0; k < 6; ++k) {
            const size_t i = static_cast<size_t>(pick.next_u64() % p[t].size());
            const double keep = p[t][i], h = 1e-5;
            p[t][i] = keep + h;
            const double lp = loss_at(c, p, d, B, T, train, nullptr);
            p[t][i] = keep - h;
            const double lm = loss_at(c, p, d, B, T, train, nullptr);
            p[t][i] = keep;
            const double fd = (lp - lm) / (2 * h);
            const double an = g[t][i];
            INFO("kind " << lab::attn_kind_name(c.attn.kind) << " causal " << c.causal << " tensor " << t << " element "
                         << i << " fd " << fd << " analytic " << an);
            CHECK(std::fabs(fd - an) <= 1e-7 + 1e-5 * std::fabs(an));
        }
    }
}

}  // namespace attn::test
