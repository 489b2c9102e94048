// The training loop (attn/train/trainer.hpp): the learning-rate schedule, the
// same curve at any thread count, the stop flag, divergence, and that a small
// model does learn an easy task.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "attn/core/errors.hpp"
#include "attn/train/trainer.hpp"
#include "test_util.hpp"

using namespace attn;

namespace {

Task distance_task(int64_t d = 1) {
    TaskOptions o;
    o.seq = 12;
    o.symbols = 8;
    o.distance = d;
    o.causal = true;
    return Task(TaskKind::Distance, o);
}

ModelConfig small_model(const Task& task) {
    ModelConfig c;
    c.vocab = task.vocab();
    c.max_seq = task.seq();
    c.d_model = 16;
    c.heads = 2;
    c.layers = 1;
    c.causal = task.causal();
    return c;
}

TrainConfig small_run() {
    TrainConfig tc;
    tc.steps = 24;
    tc.batch = 8;
    tc.seed = 5;
    tc.lr = 3e-3;
    tc.eval_every = 8;
    tc.eval_batches = 2;
    tc.threads = 1;
    return tc;
}

}  // namespace

TEST_CASE("trainer: learning-rate schedules") {
    TrainConfig tc;
    tc.steps = 101;
    tc.lr = 0.5;
    tc.warmup = 10;
    // warmup: lr (s+1)/warmup, reaching lr at the last warmup step
    CHECK(lr_at(tc, 0) == doctest::Approx(0.05));
    CHECK(lr_at(tc, 9) == doctest::Approx(0.5));
    CHECK(lr_at(tc, 50) == 0.5);  // constant after it
    tc.schedule = LrSchedule::Cosine;
    CHECK(lr_at(tc, 4) == doctest::Approx(0.25));
    CHECK(lr_at(tc, 10) == doctest::Approx(0.5));         // cosine starts at lr
    CHECK(lr_at(tc, 100) == doctest::Approx(0.05));       // and ends at lr / 10 on the last step
    CHECK(lr_at(tc, 55) == doctest::Approx(0.275));       // halfway: (lr + lr/10) / 2
    // one point by the formula: p = 30/90
    CHECK(lr_at(tc, 40) == doctest::Approx(0.05 + 0.45 * 0.5 * (1 + std::cos(std::numbers::pi / 3.0))));
    for (int64_t s = 11; s < 101; ++s) CHECK(lr_at(tc, s) <= lr_at(tc, s - 1));
}

TEST_CASE("trainer: bad settings are refused before any step") {
    const Task task = distance_task();
    TrainableStack model(small_model(task));
    model.init(1);
    for (double lr : {0.0, -1e-3, std::nan(""), double(INFINITY), 1e-50}) {
        TrainConfig tc = small_run();
        tc.lr = lr;
        CAPTURE(lr);
        CHECK_THROWS_AS(train_model(model, task, tc), InputError);
    }
    TrainConfig tc = small_run();
    tc.batch = 0;
    CHECK_THROWS_AS(train_model(model, task, tc), InputError);
    tc = small_run();
    tc.momentum = 1;
    CHECK_THROWS_AS(train_model(model, task, tc), InputError);
    tc = small_run();
    tc.clip = -1;
    CHECK_THROWS_AS(train_model(model, task, tc), InputError);
    // a model too small for the task
    ModelConfig mc = small_model(task);
    mc.max_seq = 8;
    TrainableStack short_model(mc);
    CHECK_THROWS_AS(train_model(short_model, task, small_run()), InputError);
}

TEST_CASE("trainer: the curve and the weights are bit-identical at 1 and 2 threads") {
    for (OptimizerKind opt : {OptimizerKind::AdamW, OptimizerKind::Sgd}) {
        CAPTURE(optimizer_name(opt));
        TaskOptions to;
        to.seq = 9;
        to.symbols = 6;
        to.causal = true;
        const Task task(TaskKind::Copy, to);
        ModelConfig mc = small_model(task);
        mc.dropout = 0.1f;  // the dropout masks too must not depend on the thread count
        mc.layers = 2;
        std::vector<TrainResult> runs;
        std::vector<std::vector<float>> weights;
        for (int threads : {1, 2}) {
            TrainableStack model(mc);
            model.init(3);
            TrainConfig tc = small_run();
            tc.optimizer = opt;
            tc.lr = opt == OptimizerKind::Sgd ? 0.05 : 3e-3;
            tc.schedule = LrSchedule::Cosine;
            tc.warmup = 4;
            tc.threads = threads;
            runs.push_back(train_model(model, task, tc));
            std::vector<float> w;
            for (const Param& p : model.params()) w.insert(w.end(), p.value->data.begin(), p.value->data.end());
            weights.push_back(std::move(w));
        }
        REQUIRE(runs[0].curve.size() == 4);  // steps 0, 8, 16, 24
        REQUIRE(runs[1].curve.size() == 4);
        CHECK(runs[0].step_loss == runs[1].step_loss);
        for (size_t i = 0; i < 4; ++i) {
            const CurvePoint &a = runs[0].curve[i], &b = runs[1].curve[i];
            CHECK(a.step == b.step);
            CHECK(a.train_loss == b.train_loss);
            CHECK(a.train_accuracy == b.train_accuracy);
            CHECK(a.grad_norm == b.grad_norm);
            CHECK(a.lr == b.lr);
            CHECK(a.eval.loss == b.eval.loss);
            CHECK(a.eval.accuracy == b.eval.accuracy);
            CHECK(a.eval.exact == b.eval.exact);
        }
        CHECK(weights[0] == weights[1]);
        // and the loss moved: the run trained something
        CHECK(runs[0].step_loss.back() != runs[0].step_loss.front());
    }
}

TEST_CASE("trainer: the stop flag ends the run after the step in progress, with a final point") {
    const Task task = distance_task();
    TrainableStack model(small_model(task));
    model.init(2);
    std::atomic<bool> stop{false};
    const TrainResult r = train_model(
        model, task, small_run(), [&](const TrainProgress& p) { if (p.step == 5) stop = true; }, &stop);
    CHECK(r.stopped);
    CHECK(r.steps_done == 5);
    CHECK(r.step_loss.size() == 5);
    REQUIRE(!r.curve.empty());
    CHECK(r.curve.back().step == 5);  // evaluated where it stopped
    // Stopped before the first step: no step, one point (the untrained model).
    std::atomic<bool> at_once{true};
    const TrainResult r0 = train_model(model, task, small_run(), {}, &at_once);
    CHECK(r0.steps_done == 0);
    REQUIRE(r0.curve.size() == 1);
    CHECK(r0.curve[0].step == 0);
    CHECK(r0.curve[0].eval.tokens == 2 * 8 * task.scored_per_row());
}

TEST_CASE("trainer: a run whose loss becomes NaN ends there and says so") {
    const Task task = distance_task();
    TrainableStack model(small_model(task));
    model.init(2);
    TrainConfig tc = small_run();
    tc.optimizer = OptimizerKind::Sgd;
    tc.lr = 1e30;  // finite, and the weights overflow float32 at once
    tc.clip = 0;
    tc.momentum = 0;
    tc.weight_decay = 0;
    const TrainResult r = train_model(model, task, tc);
    CHECK(r.diverged);
    CHECK(r.steps_done < tc.steps);
    CHECK_FALSE(std::isfinite(r.step_loss.back()));
}

TEST_CASE("trainer: a small decoder learns the distance-1 task") {
    // Predicting the previous token needs one head that attends one step back:
    // 1 layer, D=16, 300 steps. Chance is 1/8; the run reaches > 90% on held-out batches.
    const Task task = distance_task(1);
    ModelConfig mc = small_model(task);
    mc.d_model = 32;
    TrainableStack model(mc);
    model.init(7);
    TrainConfig tc = small_run();
    tc.steps = 300;
    tc.batch = 16;
    tc.lr = 1e-2;
    tc.eval_every = 0;
    tc.threads = 2;
    const TrainResult r = train_model(model, task, tc);
    REQUIRE(r.curve.size() == 2);  // steps 0 and 300
    CHECK(r.curve.front().step == 0);
    const EvalStats e = r.curve.back().eval;
    INFO("eval accuracy " << e.accuracy << ", loss " << e.loss);
    CHECK(e.accuracy > 0.9);
    CHECK(e.loss < r.step_loss.front() / 4);
    // the held-out set is fixed: evaluating again gives the same numbers
    const EvalStats again = evaluate_task(model, task, tc.batch, tc.seed, tc.eval_batches, 1);
    CHECK(again.loss == e.loss);
    CHECK(again.accuracy == e.accuracy);
}
