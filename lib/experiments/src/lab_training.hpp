// Training the Transformer of lib/nn (attn/nn/trainable_stack.hpp, with the knobs the experiments
// turn: positions, dropout on the scores, head masks, sparse and linear attention) on a task,
// for the experiments dropout, heads, distance and length (private header): the library's
// training loop with held-out evaluations (lab_training.cpp), a finite training pool, and the
// statistics of a few seeds they report (the steps to a target, mean curves; means and stds
// are attn/core/stats.hpp's).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/core/rng.hpp"
#include "attn/core/stats.hpp"  // mean, sample_std: the statistics of a few seeds
#include "attn/experiments/experiment.hpp"
#include "attn/nn/trainable_stack.hpp"
#include "attn/train/tasks.hpp"

namespace attn::lab {

struct LabTrainSpec {
    int64_t steps = 200, batch = 16, eval_every = 20, eval_batches = 2;
    double lr = 3e-3, weight_decay = 0.0, clip = 1.0;
    bool sgd = false;       // SGD with momentum instead of AdamW (the same lr field)
    double momentum = 0.9;  // SGD
    uint64_t seed = 0;  // data and dropout; the model's init is the caller's
    int threads = 2;
    std::function<TaskBatch(int64_t step)> train_batch;  // empty: the task's own train split
};

struct LabCurve {
    std::vector<double> step, eval_loss, eval_acc, train_loss;
    double final_loss() const { return eval_loss.empty() ? NAN : eval_loss.back(); }
    double final_acc() const { return eval_acc.empty() ? NAN : eval_acc.back(); }
    // First evaluated step whose eval accuracy >= target; -1 when never.
    double steps_to_acc(double target) const {
        for (size_t i = 0; i < step.size(); ++i)
            if (eval_acc[i] >= target) return step[i];
        return -1;
    }
};

// A fresh model of the experiments: every parameter from init(seed) (nn.Linear's default
// init, LayerNorm 1 and 0), then the embeddings (token, learned positions) drawn from
// N(0, emb_std^2) when emb_std is not init's 0.02 (1 is nn.Embedding's default).
inline TrainableStack experiment_model(const ModelConfig& c, uint64_t seed, double emb_std = 0.02) {
    TrainableStack m(c);
    m.init(seed);
    if (emb_std != 0.02) redraw_embeddings(m, seed, emb_std);
    return m;
}

struct EvalResult {
    double loss = 0, acc = 0;
};

// Loss and accuracy on `batches` held-out batches of the task.
EvalResult eval_lab(TrainableStack& m, const Task& task, int64_t batch, uint64_t seed, int64_t batches, int threads);

// The library's training loop (attn/train/loop.hpp) on the model: AdamW or SGD with momentum
// (PyTorch's rules) with gradient clipping, a constant lr, step seeds StepSeedRule::Lab (attn/train/train_config.hpp);
// evaluates before the first step, every eval_every steps and after the last. after_step
// (optional) is called with the step count after every step, before that step's evaluation
// (progress lines, per-step measurements); at_eval (optional) after each evaluation. A loss
// that is not finite does not end the run: the curve records what follows.
LabCurve train_lab(TrainableStack& m, const Task& task, const LabTrainSpec& s,
                   const std::function<void(int64_t)>& after_step = {},
                   const std::function<void(int64_t)>& at_eval = {});

// Mean of a "steps to target" list where -1 means never: never counts as the budget
// (a lower bound), and `reached` says how many made it.
inline double mean_steps(const std::vector<double>& v, double budget, int* reached) {
    std::vector<double> w;
    int r = 0;
    for (double x : v) {
        if (x >= 0) ++r;
        w.push_back(x >= 0 ? x : budget);
    }
    if (reached) *reached = r;
    return mean(w);
}
// Element-wise mean of several curves sampled at the same x.
inline std::vector<double> mean_curve(const std::vector<std::vector<double>>& ys) {
    if (ys.empty()) return {};
    std::vector<double> m(ys[0].size(), 0.0);
    for (const auto& y : ys)
        for (size_t i = 0; i < m.size() && i < y.size(); ++i) m[i] += y[i] / double(ys.size());
    return m;
}

inline int64_t pick(ExperimentSize s, int64_t quick, int64_t dflt, int64_t full) {
    return s == ExperimentSize::Quick ? quick : s == ExperimentSize::Default ? dflt : full;
}


// A finite training set: `pool` rows drawn once from the task's train split; training
// batches pick rows of it (a counter-seeded choice per step), evaluation uses the task's
// held-out split, so the gap between the two measures overfitting.
struct PoolData {
    TaskBatch pool;
    int64_t rows = 0;
    PoolData(const Task& t, int64_t rows_, uint64_t seed)
        : pool(t.batch(rows_, seed, DataSplit::Train, 0)), rows(rows_) {}
    TaskBatch batch(int64_t B, uint64_t seed, int64_t step) const {
        TaskBatch b;
        b.B = B, b.T = pool.T;
        Rng r(seed ^ 0x9001ULL, static_cast<uint64_t>(step));
        for (int64_t i = 0; i < B; ++i) {
            const int64_t k = static_cast<int64_t>(r.next_u64() % static_cast<uint64_t>(rows));
            b.tokens.insert(b.tokens.end(), pool.tokens.begin() + k * b.T, pool.tokens.begin() + (k + 1) * b.T);
            b.targets.insert(b.targets.end(), pool.targets.begin() + k * b.T, pool.targets.begin() + (k + 1) * b.T);
        }
        return b;
    }
};

}  // namespace attn::lab
