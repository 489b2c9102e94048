// The Transformer's variant configs (attn/nn/trainable_stack.hpp: no positions, dropout on the
// scores, head ablation and gradient blocking, sparse and linear attention; the knobs of the
// training experiments) and the Elman RNN (attn/nn/elman.hpp): every gradient against finite
// differences in double, float against double, the same numbers at any thread count, masked
// keys that cannot reach the output, and the configs that are refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "attn/nn/elman.hpp"
#include "attn/nn/stack_f64.hpp"
#include "attn/nn/trainable_stack.hpp"
#include "attn/train/checkpoint.hpp"
#include "transformer_test_util.hpp"
#include "finite_diff.hpp"

using namespace attn;

namespace {

struct Toy {
    std::vector<int32_t> tok, tgt;
};
// B x T random tokens below V; every third position unscored (target -1).
Toy toy(int64_t B, int64_t T, int64_t V, uint64_t seed) {
    Rng r(seed, 7);
    Toy t;
    for (int64_t i = 0; i < B * T; ++i) {
        t.tok.push_back(static_cast<int32_t>(r.next_u64() % uint64_t(V)));
        t.tgt.push_back(i % 3 == 0 ? -1 : static_cast<int32_t>(r.next_u64() % uint64_t(V)));
    }
    return t;
}

// The loss of one pass in double through the reference ops (dropout seeded 1234 when
// train); grads (optional) are filled.
double loss_at(const ModelConfig& c, std::vector<std::vector<double>>& p, const Toy& d, int64_t B, int64_t T,
               bool train, std::vector<std::vector<double>>* grads) {
    return loss_and_grads_f64(c, p, d.tok.data(), d.tgt.data(), B, T, grads, train, 1234);
}

// Every parameter tensor: 6 elements against central differences (tests/finite_diff.hpp,
// bound 1e-7 + 1e-5 |g|). qk_scale
// multiplies W_q and W_k first (3: attention far from uniform, so its terms matter).
void check_variant_grads(const ModelConfig& c, int64_t B, int64_t T, bool train, double qk_scale = 1.0) {
    TrainableStack m(c);
    m.init(3);
    auto p = attn::test::params_f64(m);
    const auto params = m.params();
    for (size_t t = 0; t < p.size(); ++t)
        if (params[t].name.find("q_proj.weight") != std::string::npos ||
            params[t].name.find("k_proj.weight") != std::string::npos)
            for (double& x : p[t]) x *= qk_scale;
    const Toy d = toy(B, T, c.vocab, 11);
    std::vector<std::vector<double>> g;
    loss_at(c, p, d, B, T, train, &g);
    Rng pick(5, 1);
    const auto loss = [&] { return loss_at(c, p, d, B, T, train, nullptr); };
    for (size_t t = 0; t < p.size(); ++t) {
        std::vector<size_t> at(6);
        for (size_t& i : at) i = static_cast<size_t>(pick.next_u64() % p[t].size());
        const attn::test::FdReport r = attn::test::check_central_differences(p[t], g[t], loss, 1e-5, at);
        INFO("kind " << attn_kind_name(c.variant.kind) << " causal " << c.causal << " tensor " << params[t].name
                     << ": worst |fd - analytic| " << r.worst);
        CHECK(r.bad == 0);
    }
}

ModelConfig small_cfg() {
    ModelConfig c;
    c.vocab = 7, c.max_seq = 6, c.d_model = 8, c.heads = 2, c.d_k = 3, c.layers = 2, c.d_ff = 12;
    return c;
}

void check_grads(const ModelConfig& c, bool train) { check_variant_grads(c, 2, 5, train); }

ModelConfig cfg_of(AttnKind k, bool causal) {
    ModelConfig c;
    c.vocab = 7, c.max_seq = 9, c.d_model = 8, c.heads = 2, c.d_k = 4, c.layers = 2, c.d_ff = 12;
    c.causal = causal;
    c.variant.kind = k;
    c.variant.window = 3, c.variant.stride = 3, c.variant.global = 1, c.variant.features = 6,
    c.variant.feature_seed = 5;
    return c;
}

const AttnKind kKinds[] = {AttnKind::Window,     AttnKind::Strided, AttnKind::GlobalLocal,
                                AttnKind::EluPlusOne, AttnKind::Favor,   AttnKind::CosFormer};

// Each kind's gradients against finite differences (check_variant_grads above), with W_q, W_k
// times 3 so the attention is far from uniform. cosFormer's ReLU has a kink at 0: a
// perturbation of 1e-5 crosses it only for a pre-activation within 1e-5 of 0, which these
// draws do not have (the check would say so).
void check_grads(const ModelConfig& c) { check_variant_grads(c, 2, 9, false, 3.0); }

}  // namespace

TEST_CASE("transformer variants: every gradient against finite differences (decoder, encoder, positions, dropout)") {
    ModelConfig c = small_cfg();
    SUBCASE("decoder, learned positions") { check_grads(c, false); }
    SUBCASE("encoder, no positions, no mlp") {
        c.causal = false, c.pos = PosKind::None, c.mlp = false;
        check_grads(c, false);
    }
    SUBCASE("sinusoidal positions") {
        c.pos = PosKind::Sinusoidal;
        check_grads(c, false);
    }
    SUBCASE("dropout on the weights") {
        c.dropout = 0.3f;
        check_grads(c, true);
    }
    SUBCASE("dropout on the scores") {
        c.dropout = 0.3f, c.drop_where = DropWhere::Scores;
        check_grads(c, true);
    }
    SUBCASE("a pad token with dropout (the masked keys from the tokens, rows left with none allowed)") {
        c.pad_token = 6, c.dropout = 0.3f;  // toy tokens are below 7: about one in seven is the pad
        check_grads(c, true);
    }
    SUBCASE("a zeroed head") {
        c.head_off = {0, 1, 0, 0};
        check_grads(c, false);
    }
}
TEST_CASE("transformer variants: a blocked head's q, k, v weights get exactly zero gradient, the others do not") {
    ModelConfig c = small_cfg();
    c.head_blocked = {1, 0, 1, 0};  // head 0 of both layers
    TrainableStack m(c);
    m.init(4);
    const Toy d = toy(2, 5, c.vocab, 12);
    m.forward_backward(d.tok.data(), d.tgt.data(), 2, 5, 0, 1);
    for (const Param& p : m.params()) {
        if (p.name.find("q_proj.weight") == std::string::npos && p.name.find("v_proj.weight") == std::string::npos)
            continue;
        double blocked = 0, open = 0;
        for (int64_t r = 0; r < p.grad->shape[0]; ++r)
            for (int64_t k = 0; k < p.grad->shape[1]; ++k) {
                const double v = std::fabs(p.grad->data[static_cast<size_t>(r * p.grad->shape[1] + k)]);
                (r < c.d_k ? blocked : open) += v;
            }
        INFO(p.name);
        CHECK(blocked == 0.0);
        CHECK(open > 0.0);
    }
}
TEST_CASE("transformer variants: the same numbers at 1 and 3 threads") {
    ModelConfig c = small_cfg();
    c.dropout = 0.2f;
    TrainableStack a(c), b(c);
    a.init(9), b.init(9);
    const Toy d = toy(4, 6, c.vocab, 13);
    const double la = a.forward_backward(d.tok.data(), d.tgt.data(), 4, 6, 77, 1).loss;
    const double lb = b.forward_backward(d.tok.data(), d.tgt.data(), 4, 6, 77, 3).loss;
    CHECK(la == lb);
    auto pa = a.params(), pb = b.params();
    for (size_t i = 0; i < pa.size(); ++i) CHECK(pa[i].grad->data == pb[i].grad->data);
}
TEST_CASE("Elman RNN: BPTT gradients against finite differences in double") {
    const int64_t V = 5, H = 4, B = 2, T = 6;
    ElmanRnn m(V, H);
    m.init(8);
    std::vector<std::vector<double>> p;
    for (auto& t : m.values()) p.emplace_back(t.data.begin(), t.data.end());
    const Toy d = toy(B, T, V, 14);
    auto run = [&](std::vector<std::vector<double>>* g) {
        std::vector<const double*> W;
        std::vector<double*> G;
        for (auto& t : p) W.push_back(t.data());
        if (g) {
            g->clear();
            for (auto& t : p) g->emplace_back(t.size(), 0.0);
            for (auto& t : *g) G.push_back(t.data());
        }
        return elman_pass<double>(V, H, W, G, d.tok.data(), d.tgt.data(), B, T).loss;
    };
    std::vector<std::vector<double>> g;
    run(&g);
    // every element of every tensor (the model is tiny); tolerance as for the Transformer above
    for (size_t t = 0; t < p.size(); ++t) {
        const attn::test::FdReport r = attn::test::check_central_differences(
            p[t], g[t], [&] { return run(nullptr); }, 1e-5);
        INFO("tensor " << t << ": worst |fd - analytic| " << r.worst);
        CHECK(r.bad == 0);
    }
    // the float model gives the same loss as the double pass, to float rounding
    CHECK(std::fabs(m.evaluate(d.tok.data(), d.tgt.data(), B, T).loss - run(nullptr)) < 1e-5);
}
TEST_CASE(
    "transformer variants: every attention kind's gradient against finite differences in double (decoder and "
    "encoder)") {
    for (AttnKind k : kKinds)
        for (bool causal : {true, false}) check_grads(cfg_of(k, causal));
}
TEST_CASE("transformer variants: each attention kind in float agrees with double (loss and gradients)") {
    // float runs attn/cpu's multi-head linear attention, double its per-head twin; the
    // sparse kinds share one code path. Float rounding over two layers: relative 1e-4
    // on the loss, 2e-3 of the largest gradient entry of each tensor.
    for (AttnKind k : kKinds) {
        const ModelConfig c = cfg_of(k, true);
        TrainableStack m(c);
        m.init(8);
        const Toy d = toy(2, 9, c.vocab, 21);
        const StepStats sf = m.forward_backward(d.tok.data(), d.tgt.data(), 2, 9, 0, 2);
        std::vector<std::vector<double>> p, g;
        p = attn::test::params_f64(m);
        const double ld = loss_at(c, p, d, 2, 9, false, &g);
        INFO(attn_kind_name(k));
        CHECK(std::fabs(sf.loss - ld) <= 1e-4 * std::fabs(ld));
        const auto params = m.params();
        for (size_t t = 0; t < p.size(); ++t) {
            double mx = 0, diff = 0;
            for (size_t i = 0; i < g[t].size(); ++i) {
                mx = std::max(mx, std::fabs(g[t][i]));
                diff = std::max(diff, std::fabs(g[t][i] - double(params[t].grad->data[i])));
            }
            INFO(params[t].name);
            CHECK(diff <= 2e-3 * mx + 1e-7);
        }
    }
}
TEST_CASE("transformer variants: a key outside the window does not reach the output, one inside does") {
    // 1 layer, no MLP: position i's logits depend on tokens j with i - w < j <= i only.
    ModelConfig c = cfg_of(AttnKind::Window, true);
    c.layers = 1, c.mlp = false;
    TrainableStack m(c);
    m.init(2);
    const int64_t T = 9, w = c.variant.window;
    std::vector<int32_t> tok = {1, 2, 3, 4, 5, 6, 0, 1, 2}, tgt(static_cast<size_t>(T), -1);
    tgt[static_cast<size_t>(T - 1)] = 3;
    const double base = m.evaluate(tok.data(), tgt.data(), 1, T, 1).loss;
    auto changed = [&](int64_t at) {
        std::vector<int32_t> t2 = tok;
        t2[static_cast<size_t>(at)] = (t2[static_cast<size_t>(at)] + 3) % 7;
        return m.evaluate(t2.data(), tgt.data(), 1, T, 1).loss;
    };
    for (int64_t j = 0; j <= T - 1 - w; ++j) CHECK(changed(j) == base);  // masked: exactly no effect
    CHECK(changed(T - w) != base);                                         // the oldest key in the window
    // and the weights: zero outside the window, in every row
    m.evaluate(tok.data(), tgt.data(), 1, T, 1);
    const std::vector<Tensor>& P = m.attention_weights();
    REQUIRE(P.size() == 1);
    for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j < T; ++j) {
                const float p = P[0].data[static_cast<size_t>((h * T + i) * T + j)];
                if (j > i || j <= i - w) CHECK(p == 0.0f);
                else CHECK(p > 0.0f);
            }
}
TEST_CASE("transformer variants: the window's masked scores get no gradient (a key seen by no query has zero dk, dv)") {
    // 1 layer, no MLP, window 3, only the last position scored: keys 0..T-1-w feed no
    // scored output, so the gradient reaching their token embeddings through attention is
    // zero; only the residual path (their own position) could carry any, and those positions
    // are not scored. So their tok_emb rows get exactly zero gradient.
    ModelConfig c = cfg_of(AttnKind::Window, true);
    c.layers = 1, c.mlp = false, c.vocab = 9;
    TrainableStack m(c);
    m.init(4);
    const int64_t T = 9, w = c.variant.window;
    std::vector<int32_t> tok = {0, 1, 2, 3, 4, 5, 6, 7, 8}, tgt(static_cast<size_t>(T), -1);
    tgt[static_cast<size_t>(T - 1)] = 2;
    m.forward_backward(tok.data(), tgt.data(), 1, T, 0, 1);
    const Param emb = m.params()[0];
    for (int64_t j = 0; j < T; ++j) {
        double s = 0;
        for (int64_t e = 0; e < c.d_model; ++e) s += std::fabs(emb.grad->data[static_cast<size_t>(j * c.d_model + e)]);
        INFO("token at position " << j);
        if (j <= T - 1 - w) CHECK(s == 0.0);
        else CHECK(s > 0.0);
    }
}
TEST_CASE("transformer variants: linear kinds refuse dropout and head ablation, bad sparse sizes are refused") {
    ModelConfig c = cfg_of(AttnKind::Favor, true);
    c.dropout = 0.1f;
    CHECK_THROWS(TrainableStack{c});
    c = cfg_of(AttnKind::EluPlusOne, true);
    c.head_off = {0, 1, 0, 0};
    CHECK_THROWS(TrainableStack{c});
    c = cfg_of(AttnKind::Window, true);
    c.variant.window = 0;
    CHECK_THROWS(TrainableStack{c});
    c = cfg_of(AttnKind::Favor, true);
    c.variant.features = 0;
    CHECK_THROWS(TrainableStack{c});
    c = cfg_of(AttnKind::Window, true);
    c.dropout = 0.2f;  // the sparse kinds keep dropout
    CHECK_NOTHROW(TrainableStack{c});
}

TEST_CASE("transformer variants: the variant path with nothing switched on agrees with the fused fast path") {
    // A head mask of zeros and a window wider than the sequence change nothing but the path:
    // the whole batch through variant_attention instead of the fused chunks. Float rounding
    // of sums in another order over two layers: 1e-5 relative on the loss, 1e-4 of each
    // tensor's largest gradient entry.
    ModelConfig base = small_cfg();
    base.dropout = 0.0f;
    const Toy d = toy(3, 6, base.vocab, 31);
    TrainableStack ref(base);
    ref.init(6);
    const StepStats sr = ref.forward_backward(d.tok.data(), d.tgt.data(), 3, 6, 1, 2);
    ModelConfig zeros = base, wide = base;
    zeros.head_off.assign(static_cast<size_t>(base.layers * base.heads), 0);
    wide.variant.kind = AttnKind::Window, wide.variant.window = 64;
    for (const ModelConfig& c : {zeros, wide}) {
        REQUIRE(c.attention_variant());
        TrainableStack m(c);
        m.init(6);
        const StepStats s = m.forward_backward(d.tok.data(), d.tgt.data(), 3, 6, 1, 2);
        CHECK(std::fabs(s.loss - sr.loss) <= 1e-5 * std::fabs(sr.loss));
        const auto pr = ref.params(), pm = m.params();
        REQUIRE(pr.size() == pm.size());
        for (size_t t = 0; t < pr.size(); ++t) {
            double mx = 0, diff = 0;
            for (size_t i = 0; i < pr[t].grad->data.size(); ++i) {
                mx = std::max(mx, double(std::fabs(pr[t].grad->data[i])));
                diff = std::max(diff, double(std::fabs(pr[t].grad->data[i] - pm[t].grad->data[i])));
            }
            INFO(pr[t].name);
            CHECK(diff <= 1e-4 * mx + 1e-7);
        }
    }
}

TEST_CASE("transformer variants: a variant cannot be saved in a checkpoint, and is refused with the cosine scale") {
    ModelConfig c = small_cfg();
    c.variant.kind = AttnKind::Strided;
    CHECK_THROWS_AS(config_to_json(c), InputError);  // the file records the standard attention only
    CHECK_NOTHROW(config_to_json(small_cfg()));
    c.scale = Scale{ScaleKind::Cosine, 10.0f};
    CHECK_THROWS_AS(TrainableStack{c}, InputError);
    c.scale = Scale{};
    c.head_blocked = {1, 0};  // layers * heads = 4 entries needed
    CHECK_THROWS_AS(TrainableStack{c}, InputError);
}
