// attn/train/loop.hpp: the one training loop of the library. `attn train` (train_model,
// attn/train/trainer.hpp) and the training experiments (their TrainableStack runs, their
// variant Transformers, their RNN) all step through it; what differs between them -- the model, the
// batches, the step seeds, what an evaluation records -- comes in as hooks, so the order
// of a step and the evaluation schedule are written once.
//
// Step s (0-based) of a run of cfg.steps steps:
//   stop flag set?                          the run ends before the step (stopped)
//   stats = step(s)                         the caller's batch s, forward + backward: gradients in params
//   on_gradients(s)                         (optional) reads the gradients before clipping
//   norm  = clip_grad_norm(params, clip)    clip 0: measured, not clipped
//   lr    = lr_at(cfg, s)
//   loss or norm not finite?                the run ends, before the update (diverged; unless
//                                           stop_on_divergence is off: the step goes on)
//   optimiser step (cfg.optimizer: AdamW or SGD with momentum, cfg's settings, lr)
//   after_update(state)                     (optional) the step is taken; nothing evaluated yet
//   evaluate(state) when steps done % eval_every == 0 or steps done == cfg.steps; true ends the run
//   after_step(state, evaluated)            (optional) progress lines
// evaluate is also called before the first step (steps done 0) and, when the run ended
// anywhere else than on an evaluation (stopped, diverged), once more at the end.
//
// Of cfg the loop reads steps, eval_every, clip, the optimiser's and the schedule's fields;
// batch, seed, threads and eval_batches are the hooks' business. Nothing is validated here
// (train_model validates; the experiments' settings are fixed in code).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "attn/nn/trainable_stack.hpp"
#include "attn/train/tasks.hpp"
#include "attn/train/train_config.hpp"

namespace attn {

// What the hooks see of a run in progress, and what it returns.
struct TrainLoopState {
    int64_t steps_done = 0;
    StepStats last;                // the training batch of the last step
    double lr = 0, grad_norm = 0;  // of the last step (the norm before clipping)
    // Since the previous evaluation (set to zero after each), over the steps taken:
    int64_t since = 0;
    double loss_sum = 0, norm_sum = 0;
    int64_t correct = 0, counted = 0;
    double train_seconds = 0;      // step time so far, evaluations excluded
    std::vector<float> step_loss;  // every step's training loss, the diverged step's included
    bool stopped = false;          // the stop flag ended the run
    bool diverged = false;         // a loss or gradient norm was not finite: the run ended there
};

struct TrainLoopHooks {
    std::function<StepStats(int64_t step)> step;                  // required
    std::function<bool(const TrainLoopState&)> evaluate;          // required; true: end the run here
    std::function<void(int64_t step)> on_gradients;               // optional
    std::function<void(const TrainLoopState&)> after_update;      // optional
    std::function<void(const TrainLoopState&, bool evaluated)> after_step;  // optional
    const std::atomic<bool>* stop = nullptr;  // read before every step; may be null
    // Off: a non-finite loss or norm does not end the run (the lab's runs record what follows).
    bool stop_on_divergence = true;
    // On: a diverged run is evaluated once more even when the last evaluation was at that step,
    // so its record ends on a point of its own (the experiments' traces count on it).
    bool reevaluate_on_divergence = false;
};

// Trains the parameters `params` (the model's, in the order the optimiser keeps its state by).
TrainLoopState run_train_loop(std::vector<Param>& params, const TrainConfig& cfg, const TrainLoopHooks& hooks);

// The step hook of a TrainableStack trained on a task, as every run of the library builds it:
// batch s of the task's train split, task.batch(batch, seed, Train, s) (or batch_of(s) when
// given), then model.forward_backward under step_seed(seeds, seed, s).
struct TaskStep {
    int64_t batch = 0;
    uint64_t seed = 0;
    int threads = 1;
    StepSeedRule seeds = StepSeedRule::Train;
    std::function<TaskBatch(int64_t step)> batch_of;  // empty: the task's train split
};
std::function<StepStats(int64_t step)> task_step(TrainableStack& model, const Task& task, TaskStep how);

}  // namespace attn
