// The TrainableStack (attn/nn/trainable_stack.hpp) and the optimisers: whole-model gradients
// against finite differences in double, the float fast path against the double
// reference, bit-identical training at any thread count, AdamW / SGD rules, overfitting.
#include <doctest/doctest.h>

#include <limits>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "attn/bench/train_bench.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "attn/nn/stack_f64.hpp"
#include "attn/nn/trainable_stack.hpp"
#include "attn/train/optim.hpp"
#include "transformer_test_util.hpp"
#include "finite_diff.hpp"

using attn::ModelConfig;
using attn::TrainableStack;
using attn::test::params_f64;

namespace {

ModelConfig tiny(bool causal) {
    ModelConfig c;
    c.vocab = 7;
    c.max_seq = 6;
    c.d_model = 8;
    c.heads = 2;
    c.layers = 2;
    c.d_ff = 12;
    c.causal = causal;
    return c;
}

struct Batch {
    std::vector<int32_t> tokens, targets;
};

Batch random_batch(const ModelConfig& c, int64_t B, int64_t T, uint64_t seed, bool with_ignored = true) {
    attn::Rng r(seed, 5);
    Batch b;
    for (int64_t i = 0; i < B * T; ++i) {
        b.tokens.push_back(static_cast<int32_t>(r.next_u64() % uint64_t(c.vocab)));
        b.targets.push_back(static_cast<int32_t>(r.next_u64() % uint64_t(c.vocab)));
        if (with_ignored && i % 4 == 1) b.targets.back() = -1;
    }
    return b;
}

}  // namespace

TEST_CASE("transformer: config validation names the field") {
    ModelConfig c = tiny(true);
    c.heads = 3;
    try {
        c.validate();
        FAIL("accepted d_model 8 with 3 heads");
    } catch (const attn::InputError& e) {
        CHECK(std::string(e.what()).find("heads: must divide d_model (8 / 3)") == 0);
    }
    c = tiny(true);
    c.dropout = 1.0f;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("dropout"), attn::InputError);
    c = tiny(true);
    c.vocab = 0;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("vocab"), attn::InputError);
    for (const float gain : {0.0f, -1.0f, 1001.0f, std::numeric_limits<float>::quiet_NaN()}) {
        c = tiny(true);
        c.qk_init_gain = gain;
        CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("qk_init_gain: must be in (0, 1000]"), attn::InputError);
    }
    c.qk_init_gain = 1000.0f;
    CHECK_NOTHROW(c.validate());
    // the embeddings' std, checked where they are drawn
    for (const double sd : {0.0, 1e-7, 101.0, std::numeric_limits<double>::infinity()})
        CHECK_THROWS_WITH_AS(attn::check_emb_std(sd), doctest::Contains("emb_std: must be in [1e-06, 100]"),
                             attn::InputError);
    CHECK_NOTHROW(attn::check_emb_std(0.02));
    TrainableStack m(tiny(true));
    m.init(1);
    std::vector<int32_t> tok = {0, 7}, tgt = {0, 0};
    CHECK_THROWS_WITH_AS(m.evaluate(tok.data(), tgt.data(), 1, 2, 1), doctest::Contains("outside [0, 7)"),
                         attn::InputError);
    std::vector<int32_t> many(7, 0);
    CHECK_THROWS_AS(m.evaluate(many.data(), many.data(), 1, 7, 1), attn::InputError);  // T > max_seq
}

TEST_CASE("transformer: parameter names and count") {
    TrainableStack m(tiny(true));
    auto ps = m.params();
    REQUIRE(ps.size() == 2 + 2 * 16 + 3);
    CHECK(ps[0].name == "tok_emb.weight");
    CHECK(ps[1].name == "pos_emb.weight");
    CHECK(ps[4].name == "blocks.0.attn.q_proj.weight");
    CHECK(ps[4].value->shape == attn::Shape{8, 8});
    CHECK(ps[4].decay);
    CHECK(!ps[5].decay);
    CHECK(ps.back().name == "head.weight");
    int64_t n = 0;
    for (auto& p : ps) n += p.value->numel();
    CHECK(n == m.num_params());
    ModelConfig s = tiny(false);
    s.pos = attn::PosKind::Sinusoidal;
    CHECK(TrainableStack(s).params().size() == 1 + 2 * 16 + 3);
}

// Whole model in double: every parameter's gradient against central differences
// (tests/finite_diff.hpp: bound 1e-7 + 1e-6 |g|; a kink of ReLU inside +-h would fail it
// too, which the fixed seeds avoid).
TEST_CASE("transformer: every parameter gradient matches finite differences (double)") {
    struct Case {
        const char* name;
        bool causal;
        attn::PosKind pos;
        attn::Activation act;
        attn::ScaleKind scale;
        float dropout;
        int64_t dk, dv;
        bool learn_tau = false;
    };
    const Case cases[] = {
        {"decoder, learned positions, GELU", true, attn::PosKind::Learned, attn::Activation::Gelu,
         attn::ScaleKind::InvSqrtDk, 0.0f, 0, 0},
        {"encoder, sinusoidal, ReLU, Dk != Dv", false, attn::PosKind::Sinusoidal, attn::Activation::Relu,
         attn::ScaleKind::InvSqrtDk, 0.0f, 3, 5},
        {"decoder, cosine scale, dropout 0.3", true, attn::PosKind::Learned, attn::Activation::Gelu,
         attn::ScaleKind::Cosine, 0.3f, 0, 0},
        {"decoder, no scale", true, attn::PosKind::Learned, attn::Activation::Gelu, attn::ScaleKind::None, 0.0f, 0, 0},
        {"decoder, cosine scale, learned temperature, dropout 0.3", true, attn::PosKind::Learned,
         attn::Activation::Gelu, attn::ScaleKind::Cosine, 0.3f, 0, 0, true},
        {"encoder, cosine scale, learned temperature, Dk != Dv", false, attn::PosKind::Sinusoidal,
         attn::Activation::Relu, attn::ScaleKind::Cosine, 0.0f, 3, 5, true},
    };
    for (const Case& k : cases) {
        CAPTURE(k.name);
        ModelConfig c = tiny(k.causal);
        c.pos = k.pos;
        c.act = k.act;
        c.scale.kind = k.scale;
        c.scale.value = k.scale == attn::ScaleKind::Cosine ? 0.5f : 1.0f;
        c.dropout = k.dropout;
        c.d_k = k.dk;
        c.d_v = k.dv;
        c.learn_temperature = k.learn_tau;
        TrainableStack m(c);
        m.init(11);
        auto P = params_f64(m);
        // move LayerNorm gains and biases off 1 and 0 so their gradients are exercised generally
        attn::Rng r(3);
        for (auto& t : P)
            for (auto& v : t) v += 0.05 * r.normal_double();
        const Batch b = random_batch(c, 2, 5, 9);
        const bool train = k.dropout > 0;
        std::vector<std::vector<double>> G;
        attn::loss_and_grads_f64(c, P, b.tokens.data(), b.targets.data(), 2, 5, &G, train, 42);
        const auto names = m.params();
        const auto loss = [&] {
            return attn::loss_and_grads_f64(c, P, b.tokens.data(), b.targets.data(), 2, 5, nullptr, train, 42);
        };
        for (size_t i = 0; i < P.size(); ++i) {
            const attn::test::FdReport r = attn::test::check_central_differences(P[i], G[i], loss, 1e-6);
            INFO(names[i].name << ": worst |fd - analytic| " << r.worst);
            CHECK(r.bad == 0);
            // the temperature must really get a gradient: 0 would pass the check above (10x its floor)
            if (names[i].name.find("log_tau") != std::string::npos) CHECK(std::fabs(G[i][0]) > 1e-6);
        }
        if (k.learn_tau) CHECK(names.back().name == "blocks.1.attn.log_tau");
    }
}

// The learned cosine temperature: one log_tau per layer after head.weight, initialised to
// log(tau), no weight decay; it changes the scores (a model whose log_tau moves computes
// other logits); a non-cosine scale refuses it; the float paths match the double reference
// (the bound of the test below: 1e-4 of the tensor's largest |g|).
TEST_CASE("transformer: the learned cosine temperature is a parameter per layer with its gradient") {
    ModelConfig c = tiny(true);
    c.scale = attn::Scale{attn::ScaleKind::Cosine, 0.2f};
    c.learn_temperature = true;
    TrainableStack m(c);
    m.init(3);
    auto ps = m.params();
    REQUIRE(ps.size() == 1 + 1 + 2 * 16 + 3 + 2);
    for (int l = 0; l < 2; ++l) {
        const attn::Param& p = ps[ps.size() - 2 + static_cast<size_t>(l)];
        CHECK(p.name == "blocks." + std::to_string(l) + ".attn.log_tau");
        CHECK(p.value->shape == attn::Shape{1});
        CHECK(p.value->data[0] == std::log(0.2f));
        CHECK_FALSE(p.decay);
    }
    const auto shapes = attn::param_shapes(c);
    CHECK(shapes.back().first == "blocks.1.attn.log_tau");
    // at init the learned model computes exactly what the fixed one does (same seed, same init)
    ModelConfig fixed = c;
    fixed.learn_temperature = false;
    TrainableStack mf(fixed);
    mf.init(3);
    const Batch b = random_batch(c, 2, 6, 4);
    const auto l0 = m.logits(b.tokens.data(), 2, 6, 1);
    const auto lf = mf.logits(b.tokens.data(), 2, 6, 1);
    double diff = 0;
    for (size_t i = 0; i < l0.data.size(); ++i) diff = std::max(diff, double(std::fabs(l0.data[i] - lf.data[i])));
    CHECK(diff <= 1e-5);  // exp(-log(0.2f)) vs 1/0.2f: an ulp apart in float
    ps.back().value->data[0] += 0.5f;  // layer 1's tau times e^0.5
    const auto l1 = m.logits(b.tokens.data(), 2, 6, 1);
    double moved = 0;
    for (size_t i = 0; i < l0.data.size(); ++i) moved = std::max(moved, double(std::fabs(l1.data[i] - l0.data[i])));
    CHECK(moved > 1e-3);
    // float (fast and reference paths) against the double reference
    std::vector<std::vector<double>> G;
    const double ld = attn::loss_and_grads_f64(c, params_f64(m), b.tokens.data(), b.targets.data(), 2, 6, &G);
    for (bool ref : {false, true}) {
        CAPTURE(ref);
        m.set_reference_path(ref);
        const attn::StepStats st = m.forward_backward(b.tokens.data(), b.targets.data(), 2, 6, 8, 2);
        CHECK(st.loss == doctest::Approx(ld).epsilon(1e-5));
        auto q = m.params();
        for (size_t i = q.size() - 2; i < q.size(); ++i) {
            INFO(q[i].name << ": float " << q[i].grad->data[0] << ", double " << G[i][0]);
            CHECK(std::fabs(double(q[i].grad->data[0]) - G[i][0]) <= 1e-4 * std::fabs(G[i][0]) + 1e-7);
            CHECK(std::fabs(G[i][0]) > 1e-4);
        }
    }
    ModelConfig bad = tiny(true);
    bad.learn_temperature = true;  // sqrt scale
    CHECK_THROWS_WITH_AS(TrainableStack{bad}, doctest::Contains("cosine"), attn::InputError);
}

// The float model (fast path, and the reference path) against the double reference.
// float32 rounding (6e-8 relative) compounded through ~40 ops in sequence gives errors
// of ~1e-6 of a tensor's scale; 1e-4 of the tensor's largest |g| leaves two orders of margin.
// A gradient that is zero in exact arithmetic (the key bias: softmax ignores a constant
// added to a whole row of scores) comes out as rounding noise of the size of its terms,
// so every tensor also gets a floor of 1e-6 of the largest gradient in the model.
TEST_CASE("transformer: float fast path and reference path agree with the double reference") {
    for (bool causal : {true, false}) {
        ModelConfig c = tiny(causal);
        c.max_seq = 40;
        c.dropout = 0.1f;
        TrainableStack m(c);
        m.init(5);
        // 320 rows: two 64-row pieces of the row-wise ops, and two chunks of sequences of the fast
        // step (kChunkTokens / T = 6 sequences, then 2), so each sequence's dropout mask and the
        // sum of the chunks' partial gradients are checked too
        const int64_t B = 8, T = 40;
        const Batch b = random_batch(c, B, T, 6);
        std::vector<std::vector<double>> G;
        const double ld =
            attn::loss_and_grads_f64(c, params_f64(m), b.tokens.data(), b.targets.data(), B, T, &G, true, 8);
        for (bool ref : {false, true}) {
            CAPTURE(ref);
            m.set_reference_path(ref);
            const attn::StepStats s = m.forward_backward(b.tokens.data(), b.targets.data(), B, T, 8, 2);
            CHECK(s.loss == doctest::Approx(ld).epsilon(1e-5));
            CHECK(s.counted == 240);
            auto ps = m.params();
            double gmax = 0;
            for (const auto& t : G)
                for (double g : t) gmax = std::max(gmax, std::fabs(g));
            for (size_t i = 0; i < ps.size(); ++i) {
                double mx = 0, worst = 0;
                for (double g : G[i]) mx = std::max(mx, std::fabs(g));
                for (size_t j = 0; j < G[i].size(); ++j)
                    worst = std::max(worst, std::fabs(double(ps[i].grad->data[j]) - G[i][j]));
                INFO(ps[i].name << ": worst " << worst << " of max |g| " << mx);
                CHECK(worst <= 1e-4 * mx + 1e-6 * gmax);
            }
        }
    }
}

TEST_CASE("transformer: training is bit-identical at 1 to 4 threads, wherever its buffers live") {
    ModelConfig c;
    c.vocab = 20;
    c.max_seq = 32;
    c.d_model = 32;
    c.heads = 4;
    c.layers = 2;
    c.dropout = 0.1f;
    // 580 rows: pieces that do not divide evenly, and three chunks of sequences (8, 8, 4): one
    // thread runs them in turn, 2 and 3 threads across them, 4 threads inside each op
    const int64_t B = 20, T = 29;
    const Batch b = random_batch(c, B, T, 12);
    std::vector<std::vector<float>> first;
    for (int threads : {1, 2, 3, 4}) {
        // a differently sized allocation first, so each model's buffers land at other addresses
        // (results must not depend on alignment either: Eigen peels unaligned elements)
        std::vector<std::vector<char>> shift;
        for (int i = 0; i < 8; ++i) shift.emplace_back(size_t(4 * threads + 12 * i + 4));
        TrainableStack m(c);
        m.init(7);
        attn::AdamW opt;
        auto ps = m.params();
        double loss = 0;
        for (int step = 0; step < 3; ++step) {
            loss = m.forward_backward(b.tokens.data(), b.targets.data(), B, T, 100 + uint64_t(step), threads).loss;
            attn::clip_grad_norm(ps, 1.0);
            opt.step(ps);
        }
        CHECK(std::isfinite(loss));
        std::vector<std::vector<float>> now;
        for (auto& p : ps) now.push_back(p.value->data);
        if (first.empty()) {
            first = now;
            continue;
        }
        CAPTURE(threads);
        for (size_t i = 0; i < now.size(); ++i) {
            INFO(ps[i].name);
            CHECK(std::memcmp(now[i].data(), first[i].data(), now[i].size() * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("optim: AdamW and SGD follow PyTorch's update rules") {
    attn::Tensor w = attn::Tensor::from({3}, {1.0f, -2.0f, 0.5f}), g = attn::Tensor::from({3}, {0.1f, -0.3f, 2.0f});
    attn::Tensor w2 = w, g2 = g;
    std::vector<attn::Param> ps = {{"w", &w, &g, true}}, nodecay = {{"w", &w2, &g2, false}};
    attn::AdamW a;
    a.lr = 0.1f;
    a.weight_decay = 0.5f;
    attn::AdamW a2 = a;
    a.step(ps);
    a2.step(nodecay);
    // step 1: m/(1-b1) = g, sqrt(v/(1-b2)) = |g|, so the update is lr * g / (|g| + eps),
    // after the decoupled decay p *= 1 - lr * wd
    const float w0[3] = {1.0f, -2.0f, 0.5f}, g0[3] = {0.1f, -0.3f, 2.0f};
    for (int i = 0; i < 3; ++i) {
        const double upd = 0.1 * g0[i] / (std::fabs(g0[i]) + 1e-8);
        CHECK(w.data[size_t(i)] == doctest::Approx(w0[i] * (1 - 0.1 * 0.5) - upd).epsilon(1e-6));
        CHECK(w2.data[size_t(i)] == doctest::Approx(w0[i] - upd).epsilon(1e-6));
    }
    // step 2 with the same gradient: m_hat = g, v_hat = g^2 again
    const float w1 = w2.data[0];
    a2.step(nodecay);
    CHECK(w2.data[0] == doctest::Approx(w1 - 0.1 * 0.1 / (0.1 + 1e-8)).epsilon(1e-6));

    // SGD with momentum 0.9: buf = g, then 0.9 buf + g
    attn::Tensor s = attn::Tensor::from({1}, {1.0f}), sg = attn::Tensor::from({1}, {0.5f});
    std::vector<attn::Param> sp = {{"s", &s, &sg, true}};
    attn::Sgd sgd;
    sgd.lr = 0.1f;
    sgd.weight_decay = 0.2f;
    sgd.step(sp);  // d = 0.5 + 0.2 * 1 = 0.7; p = 1 - 0.07
    CHECK(s.data[0] == doctest::Approx(0.93).epsilon(1e-6));
    sgd.step(sp);  // d = 0.5 + 0.2 * 0.93 = 0.686; buf = 0.9 * 0.7 + 0.686 = 1.316; p = 0.93 - 0.1316
    CHECK(s.data[0] == doctest::Approx(0.93 - 0.1316).epsilon(1e-6));
}

TEST_CASE("optim: clip_grad_norm returns the norm before clipping and scales to max_norm") {
    attn::Tensor w({2}), g = attn::Tensor::from({2}, {3.0f, 4.0f});
    std::vector<attn::Param> ps = {{"w", &w, &g, true}};
    CHECK(attn::clip_grad_norm(ps, 10.0) == doctest::Approx(5.0));
    CHECK(g.data[0] == 3.0f);
    CHECK(attn::clip_grad_norm(ps, 1.0) == doctest::Approx(5.0));
    CHECK(g.data[0] == doctest::Approx(0.6 / (1 + 1e-6 / 5)).epsilon(1e-6));
    CHECK(std::hypot(g.data[0], g.data[1]) == doctest::Approx(1.0).epsilon(1e-5));
}

TEST_CASE("transformer: overfits one batch (the overfit test, C37), attention weights kept") {
    ModelConfig c = tiny(true);
    c.d_model = 16;
    c.max_seq = 8;
    TrainableStack m(c);
    m.init(3);
    const Batch b = random_batch(c, 4, 8, 21, false);
    attn::AdamW opt;
    opt.lr = 1e-2f;
    auto ps = m.params();
    const double first = m.evaluate(b.tokens.data(), b.targets.data(), 4, 8, 1).loss;
    for (int s = 0; s < 300; ++s) {
        m.forward_backward(b.tokens.data(), b.targets.data(), 4, 8, uint64_t(s), 2);
        opt.step(ps);
    }
    const attn::StepStats end = m.evaluate(b.tokens.data(), b.targets.data(), 4, 8, 2);
    CAPTURE(first);
    CAPTURE(end.loss);
    CHECK(first > 1.5);  // about ln 7 = 1.95 at init
    CHECK(end.loss < 0.1);
    CHECK(end.correct == end.counted);
    const auto& att = m.attention_weights();
    REQUIRE(att.size() == 2);
    CHECK(att[0].shape == attn::Shape{4, 2, 8, 8});
    CHECK(att[0].at({0, 0, 0, 1}) == 0.0f);  // causal
    double row = 0;
    for (int64_t j = 0; j < 8; ++j) row += att[1].at({3, 1, 7, j});
    CHECK(row == doctest::Approx(1.0).epsilon(1e-5));
}

TEST_CASE("transformer: bench_train_step runs and reports consistent figures") {
    ModelConfig c = tiny(true);
    const attn::TrainBench r = attn::bench_train_step(c, 2, 6, 3, 2, 1, 1);
    CHECK(r.steps == 3);
    CHECK(r.seconds > 0);
    CHECK(r.steps_per_s == doctest::Approx(3 / r.seconds));
    CHECK(std::isfinite(r.final_loss));
}
