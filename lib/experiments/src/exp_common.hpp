// The training loop the training experiments share (private to lib/experiments/src):
// one run = one model, one task, one optimiser, one seed, with evaluations that
// record what the experiments measure (accuracy, loss, the share of one-hot
// attention rows, the gradient norm reaching W_q and W_k), and the helpers that
// turn several seeds into a table cell.
//
// The loop is the library's (attn/train/loop.hpp): batch s of the train split (or batch_of),
// forward + backward, clip_grad_norm, AdamW or SGD at a constant lr; its hooks read the
// gradients before clipping and, at the evaluations, the attention weights.
// Deterministic: the same numbers at any thread count (the model's guarantee).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/core/stats.hpp"  // mean, median, sample_std
#include "attn/experiments/experiment.hpp"
#include "attn/nn/trainable_stack.hpp"
#include "attn/train/tasks.hpp"
#include "attn/train/trainer.hpp"

// The training experiments' runs (scale, lock-in, dk-floor, init, overfit): private to lib/experiments.
namespace attn::training_runs {

struct RunSpec {
    ModelConfig model;            // vocab 0: the task's; max_seq at least the task's T; causal from task_opt
    TaskOptions task_opt;
    TaskKind task = TaskKind::Recall;
    OptimizerKind opt = OptimizerKind::AdamW;
    double lr = 3e-3;
    double momentum = 0.9;        // SGD
    double weight_decay = 0.0;
    double clip = 1.0;            // 0: none
    int64_t steps = 1000;
    int64_t batch = 32;
    int64_t eval_every = 50;
    int64_t eval_batches = 2;
    double emb_std = 1.0;         // embeddings N(0, emb_std^2) (nn.Embedding's 1; see README, Training)
    double target_acc = 0.95;     // steps_to_target: the first evaluation at or above it
    bool stop_at_target = false;  // end the run at that evaluation
    bool track_attention = false; // one-hot share at each evaluation
    // After init_for_training (the init and embedding redraw of attn train), before the first step: zero weights, plant
    // rows...
    std::function<void(TrainableStack&)> after_init;
    // A custom batch source (overfit: a fixed set); default: the task's train split.
    std::function<TaskBatch(int64_t step)> batch_of;
    // A custom evaluation (overfit: the same fixed set); default: the task's eval split.
    std::function<EvalStats(TrainableStack&)> eval_of;
    // After the last evaluation, with the trained model (overfit: the smoke tests).
    std::function<void(TrainableStack&)> after_train;
};

struct EvalPoint {
    int64_t step = 0;
    double loss = 0, acc = 0;
    double onehot = -1;   // share of attention rows with max weight > 0.99 (rows with >= 2 keys), -1 untracked
    double spread =
        -1;  // mean over those rows of the std of the scaled scores within the row (from log P), -1 untracked
    double grad_qk =
        0;  // mean over the steps since the last point of sqrt(|dW_q|^2 + |dW_k|^2), every layer, before clipping
    double grad_all = 0;  // idem, every parameter
};

struct RunTrace {
    std::vector<EvalPoint> points;
    int64_t steps_to_target = -1;  // -1: never reached
    double final_acc = 0, final_loss = 0;
    double max_grad_qk = 0;
    double max_grad_attn = 0;  // largest |dW| of the q, k, v, o projection weights (every layer) at any step
    bool diverged = false;
    int64_t steps_done = 0;
    std::vector<double> learned_tau;  // a learned cosine temperature: tau of each layer at the end
};

// One line for the progress callback: "cell 3/24 (label), seed 1, step 200".
using RunProgress = std::function<void(int64_t step, const EvalPoint* point)>;

// The seed of the model init and of the data are both derived from `seed`.
RunTrace run_training(const RunSpec& spec, uint64_t seed, int threads, const RunProgress& progress = {});

// Share of rows (with at least two unmasked keys: causal rows i >= 1) of every layer's
// attention whose largest weight exceeds `thr`.
double onehot_share(const std::vector<Tensor>& weights, bool causal, double thr = 0.99);
// The mean within-row std of the scores, read from the weights: log P = S - logsumexp(S),
// so the std of log P over a row's unmasked keys is the std of its scores (P clamped at
// 1e-30 where it underflowed to 0, which understates the largest spreads).
double score_spread(const std::vector<Tensor>& weights, bool causal);

// Statistics of a few seeds: mean, median, sample_std of attn/core/stats.hpp.
// The steps-to-target of several runs as one cell: the median of the runs that got
// there, or null when fewer than half did; "reached" counts them.
nlohmann::json steps_cell(const std::vector<int64_t>& steps);
int reached(const std::vector<int64_t>& steps);

// The seeds of a config: seed, seed + 1, ...
inline uint64_t seed_of(const ExperimentConfig& c, int i) { return c.seed + static_cast<uint64_t>(i); }

// Tables as text for notes: "1/sqrt(d_k)" etc.
std::string pct(double v);

}  // namespace attn::training_runs
