// Induction heads in the tiny decoder (attn/train/induction.hpp, the induction task of
// attn/train/tasks.hpp, the attention-only model of attn/nn/trainable_stack.hpp): the task's rows,
// the three scores on hand-made weights with known answers, the phase-change rule, the
// ablation, and `attn train --task induction`.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/core/head_scores.hpp"
#include "attn/io/dump.hpp"
#include "attn/nn/stack_f64.hpp"
#include "attn/train/checkpoint.hpp"
#include "attn/train/induction.hpp"
#include "finite_diff.hpp"
#include "test_util.hpp"

using namespace attn;

namespace {

Task induction_task(int64_t T = 32, int64_t S = 16) {
    TaskOptions o;
    o.seq = T;
    o.symbols = S;
    return Task(TaskKind::Induction, o);
}

ModelConfig attention_only(int64_t V, int64_t T, int64_t D = 16, int64_t H = 2, int64_t layers = 2) {
    ModelConfig c;
    c.vocab = V;
    c.max_seq = T;
    c.d_model = D;
    c.heads = H;
    c.layers = layers;
    c.mlp = false;
    return c;
}

Tensor& param(TrainableStack& m, const std::string& name) {
    for (auto& p : m.params())
        if (p.name == name) return *p.value;
    FAIL("no parameter " << name);
    throw 0;
}

}  // namespace

TEST_CASE("induction: the task's rows are random tokens repeated once, scored on the repeat") {
    const Task task = induction_task(32, 16);
    CHECK(task.vocab() == 16);
    CHECK(task.scored_per_row() == 7);  // nlo = 8: the last 7 tokens of every repeat
    CHECK(task_of("induction") == TaskKind::Induction);
    const TaskBatch b = task.batch(64, 3, DataSplit::Train, 5);
    std::set<int64_t> periods;
    for (int64_t r = 0; r < b.B; ++r) {
        const int32_t* tok = b.tokens.data() + r * b.T;
        const int32_t* tgt = b.targets.data() + r * b.T;
        // the period n: the longest n <= T/2 with the last n tokens equal to the n before them
        int64_t n = 0;
        for (int64_t m = b.T / 2; m >= 8 && n == 0; --m) {
            bool same = true;
            for (int64_t t = b.T - m; t < b.T; ++t) same = same && tok[t] == tok[t - m];
            if (same) n = m;
        }
        REQUIRE(n >= 8);
        periods.insert(n);
        int64_t scored = 0;
        for (int64_t t = 0; t < b.T; ++t) {
            if (tgt[t] < 0) continue;
            ++scored;
            CHECK(t >= b.T - 8);           // inside the repeat
            CHECK(tgt[t] == tok[t + 1]);  // the next token
        }
        CHECK(scored == 7);
    }
    CHECK(periods.size() >= 4);  // the period varies: no fixed offset predicts the copy
    const TaskBatch again = task.batch(64, 3, DataSplit::Train, 5);
    CHECK(again.tokens == b.tokens);
    TaskOptions enc;
    enc.seq = 32;
    enc.causal = false;
    CHECK_THROWS_AS(Task(TaskKind::Induction, enc), InputError);
}

TEST_CASE("induction: previous-token and prefix-matching scores of hand-made patterns") {
    const int64_t T = 8, n = 4;
    Tensor w({1, 2, T, T});
    for (int64_t i = 0; i < T; ++i) {
        w.at({0, 0, i, std::max<int64_t>(i - 1, 0)}) = 1.0f;  // head 0: the previous token
        if (i >= n) w.at({0, 1, i, i - n + 1}) = 1.0f;        // head 1: the token after the earlier copy
        else
            for (int64_t j = 0; j <= i; ++j) w.at({0, 1, i, j}) = 1.0f / static_cast<float>(i + 1);
    }
    const auto prev = previous_token_scores(w);
    const auto prefix = prefix_matching_scores(w, 0, n);
    CHECK(prev[0] == doctest::Approx(1.0));
    CHECK(prefix[1] == doctest::Approx(1.0));
    CHECK(prefix[0] == doctest::Approx(0.0));  // i - 1 is never i - n + 1 for n = 4
    // head 1 in the first copy: 1/(i+1) on i-1 for i = 1..3, then 0: (1/2 + 1/3 + 1/4) / 7
    CHECK(prev[1] == doctest::Approx((0.5 + 1.0 / 3 + 0.25) / 7.0));
    CHECK_THROWS_AS(prefix_matching_scores(w, 0, 8), ShapeError);
}

TEST_CASE("induction: the copying score of hand-made OV circuits") {
    // 4 symbols, D = 4, zero-mean embeddings (so the LayerNorm's centring keeps them): e0 = -e2,
    // e1 = -e3. With W_V = W_O = I and W_U = E, the logits are u_t = E e_t: the own logit 2 is the
    // largest (the others 0 or -2), score 1. With W_O = -I the own logit is the smallest: score 0.
    ModelConfig c = attention_only(4, 8, 4, 1, 1);
    TrainableStack m(c);
    m.init(1);
    const float E[4][4] = {{1, -1, 0, 0}, {0, 0, 1, -1}, {-1, 1, 0, 0}, {0, 0, -1, 1}};
    Tensor& emb = param(m, "tok_emb.weight");
    Tensor& head = param(m, "head.weight");
    for (int t = 0; t < 4; ++t)
        for (int d = 0; d < 4; ++d) emb.at({t, d}) = head.at({t, d}) = E[t][d];
    Tensor& wv = param(m, "blocks.0.attn.v_proj.weight");
    Tensor& wo = param(m, "blocks.0.attn.o_proj.weight");
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) wv.at({i, j}) = wo.at({i, j}) = i == j ? 1.0f : 0.0f;
    CHECK(copying_scores(m, 0)[0] == doctest::Approx(1.0));
    for (int i = 0; i < 4; ++i) wo.at({i, i}) = -1.0f;
    CHECK(copying_scores(m, 0)[0] == doctest::Approx(0.0));
    // a permutation: the head writes token 1's direction when it reads token 0, and so on
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) wo.at({i, j}) = 0.0f;
    // o = P v with P mapping e0 -> e1, e1 -> e2, ...: columns of P are the images of the basis
    // directions; e0 = b0 - b1 -> e1 = b2 - b3 means b0 -> b2, b1 -> b3, b2 -> b1, b3 -> b0
    wo.at({2, 0}) = wo.at({3, 1}) = wo.at({1, 2}) = wo.at({0, 3}) = 1.0f;
    CHECK(copying_scores(m, 0)[0] == doctest::Approx(0.0));
    CHECK_THROWS_AS(copying_scores(m, 1), InputError);
}

TEST_CASE("induction: the phase-change rule") {
    const double S = std::log(16.0);
    const std::vector<int64_t> steps = {0, 100, 200, 300, 400, 500, 600, 700};
    // a plateau near ln S, a sharp drop between 300 and 500, then flat
    const std::vector<double> sharp = {3.2, 2.78, 2.77, 2.6, 0.9, 0.12, 0.10, 0.10};
    const PhaseChange p = find_phase_change(steps, sharp, S);
    REQUIRE(p.found);
    CHECK(p.step == 400);   // first at or below (ln S + 0.10) / 2 = 1.436
    CHECK(p.start == 300);  // last above 0.10 + 0.9 (ln S - 0.10) = 2.505 before it
    CHECK(p.end == 500);    // first at or below 0.10 + 0.1 (ln S - 0.10) = 0.367
    CHECK(p.final == doctest::Approx(0.10));
    // no drop to half of ln S: no phase change
    const std::vector<double> flat = {3.2, 2.8, 2.7, 2.6, 2.5, 2.2, 1.8, 1.5};
    CHECK_FALSE(find_phase_change(steps, flat, S).found);
    CHECK_THROWS_AS(find_phase_change({0, 1}, {1.0}, S), InputError);
    PerHead scores = {{0.1, 0.7, 0.3}, {0.2, 0.1, 0.9}};
    CHECK(best_head(scores, 0).head == 1);
    CHECK(best_head(scores, 1).head == 2);
    CHECK(best_head(scores, 1).score == doctest::Approx(0.9));
}

TEST_CASE("induction: ablating a head equals zeroing its values, and leaves the model as it was") {
    const Task task = induction_task(16, 8);
    TrainableStack m(attention_only(task.vocab(), 16));
    init_for_training(m, 4, 1.0f);
    const double base = evaluate_task(m, task, 8, 4, 2, 1).loss;
    const std::vector<float> wo = param(m, "blocks.1.attn.o_proj.weight").data;
    const double ablated = ablated_loss(m, task, {{1, 1}}, 8, 4, 2, 1);
    CHECK(param(m, "blocks.1.attn.o_proj.weight").data == wo);
    CHECK(evaluate_task(m, task, 8, 4, 2, 1).loss == base);
    CHECK(ablated != base);
    // the same head silenced another way: its values zero (weights sum to 1, so its output is 0)
    Tensor& wv = param(m, "blocks.1.attn.v_proj.weight");
    Tensor& bv = param(m, "blocks.1.attn.v_proj.bias");
    const int64_t Dv = m.config().d_v, D = m.config().d_model;
    for (int64_t j = Dv; j < 2 * Dv; ++j) {
        bv.data[static_cast<size_t>(j)] = 0.0f;
        for (int64_t d = 0; d < D; ++d) wv.at({j, d}) = 0.0f;
    }
    CHECK(evaluate_task(m, task, 8, 4, 2, 1).loss == doctest::Approx(ablated).epsilon(1e-5));
    CHECK_THROWS_AS(ablated_loss(m, task, {{2, 0}}, 8, 4, 2, 1), InputError);
}

TEST_CASE("induction: the attention-only model has no MLP, trains the same on both paths, and saves") {
    const ModelConfig c = attention_only(8, 12, 16, 2, 2);
    for (const auto& [name, shape] : param_shapes(c)) {
        CHECK(name.find("mlp") == std::string::npos);
        CHECK(name.find("ln2") == std::string::npos);
    }
    TrainableStack fast(c), ref(c);
    init_for_training(fast, 2, 1.0f);
    init_for_training(ref, 2, 1.0f);
    ref.set_reference_path(true);
    CHECK(fast.num_params() == 8 * 16 + 12 * 16 + 2 * (2 * 16 + 4 * (16 * 16 + 16)) + 2 * 16 + 8 * 16);
    const Task task = induction_task(12, 8);
    const TaskBatch b = task.batch(4, 1, DataSplit::Train, 0);
    const StepStats sf = fast.forward_backward(b.tokens.data(), b.targets.data(), b.B, b.T, 0, 2);
    const StepStats sr = ref.forward_backward(b.tokens.data(), b.targets.data(), b.B, b.T, 0, 1);
    CHECK(sf.loss == doctest::Approx(sr.loss).epsilon(1e-5));
    auto pf = fast.params(), pr = ref.params();
    REQUIRE(pf.size() == pr.size());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < pf.size(); ++i)
        for (size_t k = 0; k < pf[i].grad->data.size(); ++k) {
            worst = std::max(worst, std::fabs(double(pf[i].grad->data[k]) - pr[i].grad->data[k]));
            scale = std::max(scale, std::fabs(double(pr[i].grad->data[k])));
        }
    CHECK(worst <= 1e-4 * scale);  // float32 sums in another order
    // the double-precision path agrees on the loss and on a finite difference
    std::vector<std::vector<double>> P;
    for (auto& p : pf) P.emplace_back(p.value->data.begin(), p.value->data.end());
    std::vector<std::vector<double>> G;
    const double l64 = loss_and_grads_f64(c, P, b.tokens.data(), b.targets.data(), b.B, b.T, &G);
    CHECK(l64 == doctest::Approx(sf.loss).epsilon(1e-5));
    const size_t wv = 4;  // blocks.0.attn.q_proj.weight... any matrix: index of a block weight
    const double fd = test::central_difference(
        P[wv][3], [&] { return loss_and_grads_f64(c, P, b.tokens.data(), b.targets.data(), b.B, b.T, nullptr); });
    CHECK(fd == doctest::Approx(G[wv][3]).epsilon(1e-5));
    // a checkpoint keeps the flag
    const std::string path = test::temp_dir("induction") + "/m.safetensors";
    save_checkpoint(path, fast);
    const Checkpoint ck = load_checkpoint(path);
    CHECK_FALSE(ck.model.config().mlp);
    CHECK(ck.model.num_params() == fast.num_params());
}

TEST_CASE("induction: attn train --task induction reports the heads, the scores and the ablation") {
    const std::string file = test::temp_dir("induction-cli") + "/run.json";
    const auto r = test::run_attn("train --task induction --steps 40 --eval-every 20 --threads 1 --json " + file);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("previous-token head 0.") != std::string::npos);
    const auto j = nlohmann::json::parse(read_file(file));
    const auto& ind = j["induction"];
    CHECK(ind["trace"].size() == 2);  // the evaluations after steps 20 and 40
    CHECK(ind["previous_token_head"]["layer"] == 0);
    CHECK(ind["induction_head"]["layer"] == 1);
    CHECK(ind["ablation"]["per_head"].size() == 2);
    CHECK(ind["trace"][0]["copying"][1].size() == 2);  // the task's default: 2 heads
    const auto bad = test::run_attn("train --task induction --arch encoder --steps 1");
    CHECK(bad.code == 2);
}
