// Experiments dropout, heads, distance, stability, memory (issue "Training experiments",
// part 2) and the lab model they train: its gradients against finite differences, then
// each experiment's Quick size with checks on its figures.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/experiments/experiment.hpp"
#include "attn/experiments/lab_model.hpp"
#include "attn/train/tasks.hpp"

using namespace attn;

namespace {

struct Toy {
    std::vector<int32_t> tok, tgt;
};
Toy toy(int64_t B, int64_t T, int64_t V, uint64_t seed) {
    Rng r(seed, 7);
    Toy t;
    for (int64_t i = 0; i < B * T; ++i) {
        t.tok.push_back(static_cast<int32_t>(r.next_u64() % uint64_t(V)));
        t.tgt.push_back(i % 3 == 0 ? -1 : static_cast<int32_t>(r.next_u64() % uint64_t(V)));
    }
    return t;
}

// Parameters in double from an initialised float model.
std::vector<std::vector<double>> as_double(lab::LabModel& m) {
    std::vector<std::vector<double>> p;
    for (auto& t : m.values()) p.emplace_back(t.data.begin(), t.data.end());
    return p;
}

double loss_at(const lab::LabConfig& c, std::vector<std::vector<double>>& p, const Toy& d, int64_t B, int64_t T,
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

// Every parameter tensor: up to 6 elements checked against central differences.
// h = 1e-5 in double: truncation error ~h^2 * f''' ~ 1e-10, rounding ~1e-16/h ~ 1e-11,
// so 1e-7 + 1e-5 |g| leaves two orders of margin while catching any wrong term.
void check_grads(const lab::LabConfig& c, bool train) {
    const int64_t B = 2, T = 5;
    lab::LabModel m(c);
    m.init(3);
    auto p = as_double(m);
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
            INFO("tensor " << t << " element " << i);
            CHECK(std::fabs(fd - g[t][i]) <= 1e-7 + 1e-5 * std::fabs(g[t][i]));
        }
    }
}

lab::LabConfig small_cfg() {
    lab::LabConfig c;
    c.vocab = 7, c.max_seq = 6, c.d_model = 8, c.heads = 2, c.d_head = 3, c.layers = 2, c.d_ff = 12;
    return c;
}

}  // namespace

TEST_CASE("lab model: every gradient against finite differences (decoder, encoder, positions, dropout)") {
    lab::LabConfig c = small_cfg();
    SUBCASE("decoder, learned positions") { check_grads(c, false); }
    SUBCASE("encoder, no positions, no mlp") {
        c.causal = false, c.pos = lab::Positions::None, c.mlp = false;
        check_grads(c, false);
    }
    SUBCASE("sinusoidal positions") {
        c.pos = lab::Positions::Sinusoidal;
        check_grads(c, false);
    }
    SUBCASE("dropout on the weights") {
        c.dropout = 0.3f;
        check_grads(c, true);
    }
    SUBCASE("dropout on the scores") {
        c.dropout = 0.3f, c.drop_where = lab::DropWhere::Scores;
        check_grads(c, true);
    }
    SUBCASE("a zeroed head") {
        c.head_off = {0, 1, 0, 0};
        check_grads(c, false);
    }
}

TEST_CASE("lab model: a blocked head's q, k, v weights get exactly zero gradient, the others do not") {
    lab::LabConfig c = small_cfg();
    c.head_blocked = {1, 0, 1, 0};  // head 0 of both layers
    lab::LabModel m(c);
    m.init(4);
    const Toy d = toy(2, 5, c.vocab, 12);
    m.step(d.tok.data(), d.tgt.data(), 2, 5, 0, 1);
    for (const Param& p : m.params()) {
        if (p.name.find("q_proj.weight") == std::string::npos && p.name.find("v_proj.weight") == std::string::npos)
            continue;
        double blocked = 0, open = 0;
        for (int64_t r = 0; r < p.grad->shape[0]; ++r)
            for (int64_t k = 0; k < p.grad->shape[1]; ++k) {
                const double v = std::fabs(p.grad->data[static_cast<size_t>(r * p.grad->shape[1] + k)]);
                (r < c.d_head ? blocked : open) += v;
            }
        INFO(p.name);
        CHECK(blocked == 0.0);
        CHECK(open > 0.0);
    }
}

TEST_CASE("lab model: the same numbers at 1 and 3 threads") {
    lab::LabConfig c = small_cfg();
    c.dropout = 0.2f;
    lab::LabModel a(c), b(c);
    a.init(9), b.init(9);
    const Toy d = toy(4, 6, c.vocab, 13);
    const double la = a.step(d.tok.data(), d.tgt.data(), 4, 6, 77, 1).loss;
    const double lb = b.step(d.tok.data(), d.tgt.data(), 4, 6, 77, 3).loss;
    CHECK(la == lb);
    auto pa = a.params(), pb = b.params();
    for (size_t i = 0; i < pa.size(); ++i) CHECK(pa[i].grad->data == pb[i].grad->data);
}

namespace {
const Verdict* verdict_with(const ExperimentResult& r, const std::string& words) {
    for (const Verdict& v : r.verdicts)
        if (v.statement.find(words) != std::string::npos) return &v;
    return nullptr;
}
ExperimentResult quick(const ExperimentInfo& e) {
    ExperimentConfig cfg;
    cfg.size = ExperimentSize::Quick;
    cfg.seeds = 3;
    int lines = 0;
    ExperimentResult r = e.run(cfg, [&](const std::string&) { ++lines; });
    CHECK(lines > 0);
    CHECK(!r.tables.empty());
    CHECK(!r.verdicts.empty());
    CHECK(!r.curves.empty());
    for (const Verdict& v : r.verdicts) CHECK(!v.figures.empty());
    return r;
}
}  // namespace

TEST_CASE("experiment dropout (quick): every run learns; p = 0.5 on the weights fits slower than p = 0") {
    const ExperimentResult r = quick(experiment_dropout());
    CHECK(r.name == "dropout");
    const ExperimentTable& t = r.tables[0];
    // every cell's final held-out accuracy beats chance (1/16) by far: the runs learn
    for (const auto& row : t.rows) CHECK(row[6].get<double>() > 0.3);
    // p = 0.5 on the weights: more steps to the target than p = 0
    double s0 = -1, s5 = -1;
    for (const auto& row : t.rows) {
        if (row[0].get<double>() == 0.0) s0 = row[2].get<double>();
        if (row[0].get<double>() == 0.5 && row[1] == "weights") s5 = row[2].get<double>();
    }
    CHECK(s5 > s0);
    CHECK(verdict_with(r, "slows convergence") != nullptr);
}
