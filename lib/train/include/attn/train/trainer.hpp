// attn/train/trainer.hpp: the runs of `attn train`: its settings (TrainConfig, shared with the
// one training loop of attn/train/loop.hpp), the lr schedule, the held-out evaluation and the
// curve. train_model is that loop with a TrainableStack and a task's batches:
//
// Step s (0-based) of a run:
//   batch   = task.batch(B, seed, Train, s)                   (attn/train/tasks.hpp)
//   loss    = model.forward_backward(batch, step seed of s)   gradients of the mean loss
//   norm    = clip_grad_norm(params, clip)                     (clip 0: measured, not clipped)
//   lr      = lr_at(cfg, s)                                    constant or warmup + cosine
//   optimiser step (AdamW or SGD with momentum)
// Before the first step, every eval_every steps, and after the last step, the model is evaluated on
// eval_batches held-out batches, task.batch(B, seed, Eval, 0 .. eval_batches-1):
// the same batches at every evaluation, drawn from a seed stream training
// never sees. Each evaluation adds a point to the curve.
//
// Learning rate: constant: lr at every step, after a linear warmup over the
// first `warmup` steps (lr (s+1)/warmup); cosine: the same warmup, then
// lr_min + (lr - lr_min) (1 + cos(pi p)) / 2 with p going from 0 to 1 over the
// remaining steps and lr_min = lr / 10 (nanoGPT's choice).
//
// Deterministic: the model's steps, the batches and the optimiser give the same
// numbers at any thread count, so the curve (all but the times) is bit-identical
// for a seed whatever `threads` is.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "attn/nn/trainable_stack.hpp"
#include "attn/train/tasks.hpp"
#include "attn/train/train_config.hpp"

namespace attn {

// The bytes (float32) a run of train_model holds for a model and a batch of B rows of T
// tokens: the activations the backward pass keeps, about (per layer) 16 D + 2 d_ff + 3 H T
// floats a token plus 2 V for the logits, and the weights four times (value, gradient,
// two AdamW moments). An estimate for refusing runs that cannot fit, in double.
double training_memory_bytes(const ModelConfig& mc, int64_t batch, int64_t seq);


// Loss and accuracy on held-out batches.
struct EvalStats {
    double loss = 0;          // mean cross-entropy per scored token
    double accuracy = 0;      // scored tokens right
    double exact = -1;        // rows with every scored token right; -1 when the task has none
    int64_t tokens = 0;       // scored tokens seen
};
// exact_match false: the exact-match share is not measured (one forward a batch fewer).
EvalStats evaluate_task(TrainableStack& model, const Task& task, int64_t batch, uint64_t seed, int64_t batches,
                        int threads, bool exact_match = true);

struct CurvePoint {
    int64_t step = 0;             // steps done when measured
    double lr = 0;                // of the last step
    double train_loss = 0;        // mean over the steps since the previous point
    double train_accuracy = 0;    // idem, per scored token
    double grad_norm = 0;         // of the last step, before clipping
    EvalStats eval;
    double seconds = 0;           // training time so far (evaluations excluded)
};

struct TrainResult {
    std::vector<CurvePoint> curve;
    std::vector<float> step_loss;  // the training loss of every step taken
    int64_t steps_done = 0;
    bool stopped = false;          // the stop flag ended the run early
    bool diverged = false;         // a loss or gradient norm was not finite: the run ended there
    double train_seconds = 0;      // forward, backward and optimiser time (evaluations excluded)
    double steps_per_s() const { return train_seconds > 0 ? static_cast<double>(steps_done) / train_seconds : 0.0; }
};

// What the progress callback sees after every step; `eval` is set after a step that evaluated.
struct TrainProgress {
    int64_t step = 0, steps = 0;   // steps done, steps asked
    double loss = 0, accuracy = 0; // this step's training batch
    double steps_per_s = 0;        // so far, evaluations excluded
    double eta_s = 0;              // remaining steps at that rate
    const CurvePoint* eval = nullptr;
};
using TrainCallback = std::function<void(const TrainProgress&)>;

// Trains `model` (already initialised or loaded) on `task` for cfg.steps steps.
// `stop` (may be null) is read before every step: once true, the run ends after
// the step in progress, evaluates once more and returns with stopped = true.
TrainResult train_model(TrainableStack& model, const Task& task, const TrainConfig& cfg,
                        const TrainCallback& on_progress = {}, const std::atomic<bool>* stop = nullptr);

}  // namespace attn
