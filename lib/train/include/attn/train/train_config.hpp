// attn/train/train_config.hpp: the settings of a training run (TrainConfig), its optimiser
// and lr schedule, shared by `attn train` (attn/train/trainer.hpp) and the one training loop
// (attn/train/loop.hpp), and the step seeds of every kind of run.
#pragma once

#include <cstdint>

namespace attn {

enum class OptimizerKind { AdamW, Sgd };
const char* optimizer_name(OptimizerKind k);  // "adamw", "sgd"
enum class LrSchedule { Constant, Cosine };
const char* lr_schedule_name(LrSchedule s);   // "constant", "cosine"

// The learning rate `attn train` and the lab's training page use on the toy tasks (AdamW,
// 2 layers, D = 64): reverse reaches 100% in about 40 steps. TrainConfig keeps 1e-3.
inline constexpr double kTaskLr = 3e-3;

struct TrainConfig {
    int64_t steps = 1000;
    int64_t batch = 32;               // B rows per step (and per eval batch)
    uint64_t seed = 0;                // data and dropout (the model's init is the caller's)
    int threads = 1;                  // 0: every core
    OptimizerKind optimizer = OptimizerKind::AdamW;
    double lr = 1e-3;
    double weight_decay = 0.01;       // AdamW: decoupled; SGD: added to the gradient
    double momentum = 0.9;            // SGD only
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // AdamW only
    double clip = 1.0;                // max global gradient norm; 0 = no clipping
    LrSchedule schedule = LrSchedule::Constant;
    int64_t warmup = 0;               // linear warmup steps
    int64_t eval_every = 100;         // 0: evaluate only after the last step
    int64_t eval_batches = 4;

    // Throws InputError naming the field on a value out of range (lr <= 0 or not finite, ...).
    void validate() const;  // InputError "FIELD: rule" (lr finite and > 0, warmup <= steps, ...)
};

// The learning rate of step s (0-based) under cfg's schedule.
double lr_at(const TrainConfig& cfg, int64_t step);

// The settings of a run at a constant lr with no warmup, as the experiments train: these
// optimiser fields, TrainConfig's defaults for the rest (betas, eps, schedule).
struct ConstantLrRun {
    int64_t steps = 0, eval_every = 0;
    double clip = 0;
    OptimizerKind optimizer = OptimizerKind::AdamW;
    double lr = 0, weight_decay = 0, momentum = 0;
};
TrainConfig constant_lr_config(const ConstantLrRun& r);

// The seed of step s's randomness (dropout) from a run's seed. Each kind of run keeps its own
// rule, so that the results stored of each stay what they are:
//   Train       attn train (train_model)             mix64(seed ^ "drop") ^ mix64(s)
//   Experiment  the training experiments' runs       mix64(seed ^ (0x5eed + s))
//   Lab         the experiments' lab_training runs   mix64(seed * 1000003 + s)
enum class StepSeedRule { Train, Experiment, Lab };
uint64_t step_seed(StepSeedRule rule, uint64_t seed, int64_t step);

}  // namespace attn
