// The one training loop (attn/train/loop.hpp) on a model small enough to follow by hand: one
// weight w, loss (w - 3)^2 on every batch. What the hooks see and when, the evaluation
// schedule, the three ways a run ends early, and that a step is clip, then optimiser.
// (train_model and the experiments run through it too: tests/test_trainer.cpp and
// tests/test_experiments*.cpp check their numbers.)
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attn/train/loop.hpp"
#include "attn/train/optim.hpp"

using namespace attn;

namespace {

struct Quadratic {
    Tensor w{Shape{1}, 0.0f}, g{Shape{1}, 0.0f};
    std::vector<Param> params() { return {{"w", &w, &g, false}}; }
    StepStats step() {
        const float d = w.data[0] - 3.0f;
        g.data[0] = 2.0f * d;
        return {static_cast<double>(d) * d, 0, 1};
    }
};

TrainConfig sgd_run(int64_t steps, int64_t eval_every) {
    TrainConfig c;
    c.steps = steps;
    c.eval_every = eval_every;
    c.optimizer = OptimizerKind::Sgd;
    c.lr = 0.1;
    c.momentum = 0.0;
    c.weight_decay = 0.0;
    c.clip = 0.0;
    return c;
}

// Hooks that log every call as "kind@steps_done".
struct Log {
    std::vector<std::string> calls;
    TrainLoopHooks hooks(Quadratic& m) {
        TrainLoopHooks h;
        h.step = [&m, this](int64_t s) {
            calls.push_back("step" + std::to_string(s));
            return m.step();
        };
        h.evaluate = [this](const TrainLoopState& st) {
            calls.push_back("eval@" + std::to_string(st.steps_done));
            return false;
        };
        h.after_update = [this](const TrainLoopState& st) {
            calls.push_back("update@" + std::to_string(st.steps_done));
        };
        h.after_step = [this](const TrainLoopState& st, bool evaluated) {
            calls.push_back(std::string(evaluated ? "after+@" : "after@") + std::to_string(st.steps_done));
        };
        return h;
    }
};

}  // namespace

TEST_CASE("train loop: hooks in order, evaluations at 0, every eval_every steps and at the end") {
    Quadratic m;
    Log log;
    auto params = m.params();
    const TrainLoopState st = run_train_loop(params, sgd_run(3, 2), log.hooks(m));
    const std::vector<std::string> want = {"eval@0",   "step0",  "update@1", "after@1", "step1",   "update@2",
                                           "eval@2",   "after+@2", "step2",  "update@3", "eval@3", "after+@3"};
    CHECK(log.calls == want);
    CHECK(st.steps_done == 3);
    CHECK(st.step_loss.size() == 3);
    CHECK_FALSE(st.stopped);
    CHECK_FALSE(st.diverged);
}

TEST_CASE("train loop: a step is the optimiser's update on the clipped gradient, sums reset at each evaluation") {
    Quadratic m, ref;
    auto params = m.params();
    TrainConfig c = sgd_run(4, 2);
    c.clip = 1.0;  // |g| = 6 at w = 0: clipped to 1 / (6 + 1e-6) of itself
    Log log;
    TrainLoopHooks h = log.hooks(m);
    std::vector<double> seen_since;
    h.evaluate = [&](const TrainLoopState& st) {
        seen_since.push_back(static_cast<double>(st.since));
        return false;
    };
    run_train_loop(params, c, h);
    auto ref_params = ref.params();
    Sgd sgd;
    sgd.lr = 0.1f, sgd.momentum = 0.0f, sgd.weight_decay = 0.0f;
    for (int s = 0; s < 4; ++s) {
        ref.step();
        clip_grad_norm(ref_params, 1.0);
        sgd.step(ref_params);
    }
    CHECK(m.w.data[0] == ref.w.data[0]);  // the same operations in the same order: the same bits
    CHECK(seen_since == std::vector<double>{0, 2, 2});
}

TEST_CASE("train loop: evaluate returning true ends the run on that evaluation") {
    Quadratic m;
    Log log;
    auto params = m.params();
    TrainLoopHooks h = log.hooks(m);
    int evals = 0;
    h.evaluate = [&](const TrainLoopState& st) {
        ++evals;
        return st.steps_done == 2;
    };
    const TrainLoopState st = run_train_loop(params, sgd_run(10, 1), h);
    CHECK(st.steps_done == 2);
    CHECK(evals == 3);  // 0, 1, 2: none again at the end
}

TEST_CASE("train loop: the stop flag ends the run before the next step, which ends on an evaluation") {
    Quadratic m;
    auto params = m.params();
    std::atomic<bool> stop{false};
    std::vector<int64_t> evals;
    TrainLoopHooks h;
    h.stop = &stop;
    h.step = [&](int64_t s) {
        if (s == 2) stop = true;
        return m.step();
    };
    h.evaluate = [&](const TrainLoopState& st) {
        evals.push_back(st.steps_done);
        return false;
    };
    const TrainLoopState st = run_train_loop(params, sgd_run(10, 5), h);
    CHECK(st.stopped);
    CHECK(st.steps_done == 3);
    CHECK(evals == std::vector<int64_t>{0, 3});
}

TEST_CASE("train loop: a loss that is not finite ends the run before the update, unless told otherwise") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const bool guard : {true, false}) {
        CAPTURE(guard);
        Quadratic m;
        auto params = m.params();
        std::vector<int64_t> evals;
        float w_before = 0;
        TrainLoopHooks h;
        h.stop_on_divergence = guard;
        h.step = [&](int64_t s) {
            w_before = m.w.data[0];
            StepStats r = m.step();
            if (s == 2) r.loss = nan;
            return r;
        };
        h.evaluate = [&](const TrainLoopState& st) {
            evals.push_back(st.steps_done);
            return false;
        };
        const TrainLoopState st = run_train_loop(params, sgd_run(4, 2), h);
        CHECK(st.diverged == guard);
        CHECK(std::isnan(st.step_loss[2]));
        if (guard) {
            CHECK(st.steps_done == 2);
            CHECK(st.step_loss.size() == 3);
            CHECK(m.w.data[0] == w_before);                  // the diverged step changed nothing
            CHECK(evals == std::vector<int64_t>{0, 2});      // ended on the evaluation at 2: no other
        } else {
            CHECK(st.steps_done == 4);
            CHECK(evals == std::vector<int64_t>{0, 2, 4});
        }
    }
    // reevaluate_on_divergence: the run's record ends on a point of its own.
    Quadratic m;
    auto params = m.params();
    int evals = 0;
    TrainLoopHooks h;
    h.reevaluate_on_divergence = true;
    h.step = [&](int64_t s) {
        StepStats r = m.step();
        if (s == 2) r.loss = nan;
        return r;
    };
    h.evaluate = [&](const TrainLoopState&) { return ++evals, false; };
    run_train_loop(params, sgd_run(4, 2), h);
    CHECK(evals == 3);  // 0, 2, and 2 again
}
