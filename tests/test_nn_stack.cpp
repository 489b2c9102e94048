// The Transformer stack (attn/nn/stack.hpp): the model attn trains is a configuration of it
// (its weights are the stack's tensors, and to_stack() gives its logits), its batched fast path
// agrees with its readable one-sequence forward for pre-, post- and no-norm configurations, its
// KV-cache step with its forward, and what it records is what cache_names() says.
//
// Tolerances: the paths differ only in the order of float32 sums (GEMM blockings, fused Q K V,
// the flash kernel's online softmax). Each value here sums at most 40 products before a
// LayerNorm, so an order change moves it by a few float32 roundings (2^-24 relative) of the
// sums' magnitude: a few 1e-6 after two blocks where the values are of order 1 (measured: at
// most 2.3e-6), and in proportion where they grow (no norm: values near 100, errors of 1e-4 to
// 4e-4). The bound, 2e-5 of the largest value (at least 1), is 6 to 30 times those and far
// below any real bug (a wrong mask, norm place or head split moves values by 1e-1 of their size
// or more).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "attn/nn/kv_cache.hpp"
#include "attn/nn/ops.hpp"
#include "attn/nn/stack.hpp"
#include "attn/nn/trainable_stack.hpp"

using attn::StackConfig;
using attn::Tensor;
using attn::TransformerStack;

namespace {

double max_abs_diff(const float* a, const float* b, int64_t n) {
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
    return worst;
}

// Every weight of the stack drawn from N(0, sd^2) (LayerNorms around 1), each its own stream.
void randomise(TransformerStack& s, uint64_t seed, float sd = 0.3f) {
    uint64_t stream = 0;
    auto fill = [&](Tensor& t, float mean, float scale) {
        attn::Rng rng(seed, ++stream);
        for (float& v : t.data) v = mean + scale * rng.normal();
    };
    fill(s.tok_emb, 0, 1);
    fill(s.pos_emb, 0, 0.5f);
    if (!s.type_emb.empty()) fill(s.type_emb, 0, 0.5f);
    for (Tensor* g : {&s.emb_ln_gamma, &s.lnf_gamma})
        if (!g->empty()) fill(*g, 1, 0.1f);
    for (Tensor* b : {&s.emb_ln_beta, &s.lnf_beta})
        if (!b->empty()) fill(*b, 0, 0.1f);
    for (attn::StackLayer& L : s.layers) {
        for (attn::Linear* lin : {&L.attention.q_proj, &L.attention.k_proj, &L.attention.v_proj, &L.attention.o_proj,
                                  &L.fc, &L.proj}) {
            if (lin->W.empty()) continue;
            fill(lin->W, 0, sd);
            fill(lin->b, 0, 0.1f);
        }
        for (Tensor* g : {&L.ln1_gamma, &L.ln2_gamma})
            if (!g->empty()) fill(*g, 1, 0.1f);
        for (Tensor* b : {&L.ln1_beta, &L.ln2_beta})
            if (!b->empty()) fill(*b, 0, 0.1f);
    }
    if (!s.lm_head.empty()) fill(s.lm_head, 0, sd);
    s.prepare();
}

StackConfig small(attn::NormPlace norm, bool causal) {
    StackConfig c{.vocab = 23,
                  .positions = 16,
                  .d_model = 24,
                  .heads = 3,
                  .layers = 2,
                  .d_ff = 40,
                  .causal = causal,
                  .norm = norm};
    if (norm == attn::NormPlace::Post) {  // BERT's shape: token types, erf GELU, no head
        c.token_types = 2;
        c.act = attn::MlpActivation::GeluErf;
        c.eps = 1e-12f;
        c.lm_head = false;
    }
    return c;
}

std::vector<std::vector<int32_t>> batch_ids(int64_t vocab) {
    std::vector<std::vector<int32_t>> ids{{1, 5, 7, 2, 9, 11, 3}, {4, 8}, {6, 1, 0, 12, 20}};
    for (auto& row : ids)
        for (int32_t& id : row) id %= static_cast<int32_t>(vocab);
    return ids;
}

}  // namespace

TEST_CASE("stack: the trained model is a configuration of it (to_stack gives TrainableStack's logits)") {
    struct Arm {
        const char* name;
        bool causal, mlp;
        attn::PosKind pos;
        attn::Activation act;
        int64_t d_k;
    };
    for (const Arm& arm :
         {Arm{"decoder", true, true, attn::PosKind::Learned, attn::Activation::Gelu, 0},
          Arm{"encoder, relu, sinusoidal", false, true, attn::PosKind::Sinusoidal, attn::Activation::Relu, 0},
          Arm{"attention-only, no positions, d_k 5", true, false, attn::PosKind::None, attn::Activation::Gelu, 5}}) {
        CAPTURE(std::string(arm.name));
        attn::ModelConfig mc;
        mc.vocab = 17;
        mc.max_seq = 12;
        mc.d_model = 16;
        mc.heads = 4;
        mc.d_k = arm.d_k;
        mc.layers = 2;
        mc.causal = arm.causal;
        mc.mlp = arm.mlp;
        mc.pos = arm.pos;
        mc.act = arm.act;
        attn::TrainableStack model(mc);
        attn::init_for_training(model, 7, 1.0);
        const std::vector<int32_t> ids{3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
        const int64_t T = static_cast<int64_t>(ids.size());
        const Tensor want = model.logits(ids.data(), 1, T, 1);  // (1, T, V)
        const TransformerStack s = model.to_stack();
        CHECK(s.config.norm == attn::NormPlace::Pre);
        CHECK(s.config.causal == arm.causal);
        const attn::StackOutput got = s.forward(ids, {});
        REQUIRE(got.logits.shape == attn::Shape{T, mc.vocab});
        const double worst = max_abs_diff(got.logits.ptr(), want.ptr(), want.numel());
        MESSAGE(std::string(arm.name) << ": max |stack - TrainableStack| over the logits = " << worst);
        CHECK(worst < 2e-5);
        // and every layer's weights are the ones the model recorded
        const std::vector<Tensor>& att = model.attention_weights();
        REQUIRE(att.size() == got.attentions.size());
        for (size_t l = 0; l < att.size(); ++l)
            CHECK(max_abs_diff(att[l].ptr(), got.attentions[l].ptr(), att[l].numel()) < 2e-5);
    }
}

TEST_CASE("stack: to_stack refuses what the stack does not run, naming it") {
    attn::ModelConfig mc;
    mc.vocab = 9;
    mc.max_seq = mc.d_model = 8;
    mc.heads = 2;
    mc.layers = 1;
    mc.scale.kind = attn::ScaleKind::Constant;
    mc.scale.value = 2.0f;
    attn::TrainableStack model(mc);
    CHECK_THROWS_WITH_AS(model.to_stack(), doctest::Contains("to_stack: the stack has no scale but sqrt or none"),
                         attn::InputError);
}

// The trained model's weights are the stack's tensors: params() (PyTorch's names, in order) points
// into stack(), log tau (which the stack has no field for) beside it, and positions that are not
// learned are the stack's fixed table.
TEST_CASE("stack: the trained model's parameters are the stack's own tensors") {
    for (const bool mlp : {true, false}) {
        for (const attn::PosKind pos : {attn::PosKind::Learned, attn::PosKind::Sinusoidal, attn::PosKind::None}) {
            CAPTURE(mlp);
            CAPTURE(static_cast<int>(pos));
            attn::ModelConfig mc;
            mc.vocab = 11;
            mc.max_seq = 8;
            mc.d_model = 8;
            mc.heads = 2;
            mc.layers = 2;
            mc.mlp = mlp;
            mc.pos = pos;
            mc.scale.kind = attn::ScaleKind::Cosine;
            mc.learn_temperature = true;
            attn::TrainableStack model(mc);
            attn::init_for_training(model, 5, 1.0);
            const TransformerStack& s = model.stack();
            std::vector<const Tensor*> want{&s.tok_emb};
            if (pos == attn::PosKind::Learned) want.push_back(&s.pos_emb);
            for (const attn::StackLayer& L : s.layers) {
                const attn::MultiHeadAttention& a = L.attention;
                for (const Tensor* t : {&L.ln1_gamma, &L.ln1_beta, &a.q_proj.W, &a.q_proj.b, &a.k_proj.W,
                                        &a.k_proj.b, &a.v_proj.W, &a.v_proj.b, &a.o_proj.W, &a.o_proj.b})
                    want.push_back(t);
                if (mlp)
                    for (const Tensor* t : {&L.ln2_gamma, &L.ln2_beta, &L.fc.W, &L.fc.b, &L.proj.W, &L.proj.b})
                        want.push_back(t);
            }
            for (const Tensor* t : {&s.lnf_gamma, &s.lnf_beta, &s.lm_head}) want.push_back(t);
            const std::vector<attn::Param> ps = model.params();
            REQUIRE(ps.size() == want.size() + static_cast<size_t>(mc.layers));  // + log tau per layer
            for (size_t i = 0; i < want.size(); ++i) {
                CAPTURE(ps[i].name);
                CHECK(ps[i].value == want[i]);
                CHECK(ps[i].grad->shape == ps[i].value->shape);
                CHECK(ps[i].grad != ps[i].value);
            }
            for (size_t l = 0; l < static_cast<size_t>(mc.layers); ++l) {
                const attn::Param& tau = ps[want.size() + l];
                CHECK(tau.name == "blocks." + std::to_string(l) + ".attn.log_tau");
                CHECK(tau.value->shape == attn::Shape{1});
            }
            // a weight written through params() is the stack's weight
            ps[0].value->data[3] = 42.0f;
            CHECK(model.stack().tok_emb.data[3] == 42.0f);
            if (pos != attn::PosKind::Learned) {
                std::vector<float> table(static_cast<size_t>(mc.max_seq * mc.d_model), 0.0f);
                if (pos == attn::PosKind::Sinusoidal)
                    attn::nn::sinusoidal_positions(table.data(), mc.max_seq, mc.d_model);
                CHECK(s.pos_emb.data == table);
            }
            // the stack's own forward does not run a cosine scale (nor its learned temperature)
            CHECK_THROWS_WITH_AS(model.to_stack(), doctest::Contains("to_stack: the stack has no scale but sqrt"),
                                 attn::InputError);
        }
    }
}

TEST_CASE("stack: the batched path gives the readable forward's hidden states, pre-, post- and no norm") {
    for (const attn::NormPlace norm : {attn::NormPlace::Pre, attn::NormPlace::Post, attn::NormPlace::None}) {
        for (const bool causal : {true, false}) {
            CAPTURE(attn::norm_place_name(norm));
            CAPTURE(causal);
            TransformerStack s(small(norm, causal));
            randomise(s, 11 + static_cast<uint64_t>(norm));
            const auto ids = batch_ids(s.config.vocab);
            const int64_t D = s.config.d_model;
            for (const attn::GemmChoice gemm : {attn::GemmChoice::Eigen, attn::GemmChoice::Best}) {
                for (const bool flash : {false, true}) {
                    attn::BatchOptions o;
                    o.gemm = gemm;
                    o.record_attention = !flash;
                    o.threads = 2;
                    const attn::BatchOutput b = s.forward_batch(ids, o);
                    CHECK(b.attention_path == (flash ? "flash" : "reference"));
                    const int64_t T = b.hidden.dim(1);
                    double worst = 0, scale = 1;  // the error relative to the largest value (at least 1)
                    for (size_t r = 0; r < ids.size(); ++r) {
                        const attn::StackOutput one = s.forward(ids[r], {});
                        const int64_t len = static_cast<int64_t>(ids[r].size());
                        for (float v : one.hidden.data) scale = std::max(scale, static_cast<double>(std::fabs(v)));
                        worst = std::max(worst, max_abs_diff(b.hidden.ptr() + static_cast<int64_t>(r) * T * D,
                                                             one.hidden.ptr(), len * D));
                        if (!flash) {  // the recorded weights of the real queries over the real keys
                            const Tensor& w = b.attentions[0];  // (B, H, T, T)
                            for (int64_t h = 0; h < s.config.heads; ++h)
                                for (int64_t i = 0; i < len; ++i)
                                    worst = std::max(
                                        worst,
                                        max_abs_diff(
                                            w.ptr() + ((static_cast<int64_t>(r) * s.config.heads + h) * T + i) * T,
                                            one.attentions[0].ptr() + (h * len + i) * len, len));
                        }
                    }
                    MESSAGE(std::string(attn::norm_place_name(norm))
                            << "-norm, causal " << causal << ", gemm " << b.gemm_path << ", " << b.attention_path
                            << ": max |batch - one by one| = " << worst << ", largest |value| " << scale);
                    worst /= scale;
                    CHECK(worst < 2e-5);
                    // skip_padding: the same bits on the real rows with a packed GEMM
                    if (flash && b.gemm_path != "eigen") {
                        o.skip_padding = true;
                        const attn::BatchOutput u = s.forward_batch(ids, o);
                        for (size_t r = 0; r < ids.size(); ++r) {
                            const int64_t off = static_cast<int64_t>(r) * T * D,
                                          n = static_cast<int64_t>(ids[r].size()) * D;
                            CHECK(std::equal(u.hidden.ptr() + off, u.hidden.ptr() + off + n, b.hidden.ptr() + off));
                        }
                    }
                }
            }
        }
    }
}

TEST_CASE("stack: forward records what cache_names() lists, in order, for each norm place") {
    for (const attn::NormPlace norm : {attn::NormPlace::Pre, attn::NormPlace::Post, attn::NormPlace::None}) {
        CAPTURE(attn::norm_place_name(norm));
        TransformerStack s(small(norm, norm == attn::NormPlace::Pre));
        randomise(s, 3);
        attn::ActivationCache cache;
        attn::StackOptions o;
        o.cache = &cache;
        const attn::StackOutput out = s.forward({1, 2, 3, 4}, o);
        CHECK(cache.order == s.cache_names());
        // the last block's output is the hidden state (pre-norm: before LN_f)
        const Tensor& last = cache.at("blocks.1.hook_resid_post");
        if (norm == attn::NormPlace::Pre) CHECK(cache.at("ln_final.hook_normalized").data == out.hidden.data);
        else CHECK(last.data == out.hidden.data);
    }
}

TEST_CASE("stack: the KV-cache step gives the forward's logits, token by token (relu, d_k != D / H)") {
    StackConfig c = small(attn::NormPlace::Pre, true);
    c.act = attn::MlpActivation::Relu;
    c.d_k = 5;
    c.d_v = 7;
    c.tied_head = false;
    TransformerStack s(c);
    randomise(s, 5);
    const std::vector<int32_t> ids{2, 7, 1, 8, 2, 8};
    const attn::StackOutput full = s.forward(ids, {});
    attn::KvCache cache = s.make_cache();
    double worst = 0;
    for (size_t t = 0; t < ids.size(); ++t) {
        const Tensor logits = s.step(ids[t], cache);
        worst =
            std::max(worst, max_abs_diff(logits.ptr(), full.logits.ptr() + static_cast<int64_t>(t) * c.vocab, c.vocab));
    }
    CHECK(worst < 2e-5);
    TransformerStack enc(small(attn::NormPlace::Post, false));
    attn::KvCache ec = enc.make_cache();
    CHECK_THROWS_WITH_AS(enc.step(1, ec), doctest::Contains("needs a causal stack"), attn::InputError);
}

TEST_CASE("stack: a weight of the wrong shape and a bad config are refused by name") {
    TransformerStack s(small(attn::NormPlace::Pre, true));
    s.check_shapes("test");
    s.layers[1].fc.W = Tensor({3, 3});
    CHECK_THROWS_WITH_AS(s.check_shapes("test"),
                         doctest::Contains("test: block 1 fc weight is [3, 3], the config needs [40, 24]"),
                         attn::InputError);
    StackConfig c = small(attn::NormPlace::Pre, true);
    c.heads = 5;
    CHECK_THROWS_WITH_AS(TransformerStack{c}, doctest::Contains("heads must divide d_model (24 / 5)"),
                         attn::InputError);
    c = small(attn::NormPlace::Pre, true);
    c.act = attn::MlpActivation::None;
    CHECK_THROWS_AS(TransformerStack{c}, attn::InputError);
}
