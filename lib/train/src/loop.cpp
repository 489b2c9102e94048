// The training loop (attn/train/loop.hpp).
#include "attn/train/loop.hpp"

#include <chrono>
#include <cmath>

#include "attn/core/rng.hpp"
#include "attn/train/optim.hpp"

namespace attn {

namespace {

// The optimiser a TrainConfig asks for, behind one call. The lr is set at every step (the
// schedule's); a constant one is the same float every time, so setting it once would give
// the same numbers.
struct Optimiser {
    OptimizerKind kind;
    AdamW adamw;
    Sgd sgd;
    explicit Optimiser(const TrainConfig& cfg) : kind(cfg.optimizer) {
        adamw.beta1 = static_cast<float>(cfg.beta1);
        adamw.beta2 = static_cast<float>(cfg.beta2);
        adamw.eps = static_cast<float>(cfg.eps);
        adamw.weight_decay = static_cast<float>(cfg.weight_decay);
        sgd.momentum = static_cast<float>(cfg.momentum);
        sgd.weight_decay = static_cast<float>(cfg.weight_decay);
    }
    void step(std::vector<Param>& params, double lr) {
        if (kind == OptimizerKind::AdamW) {
            adamw.lr = static_cast<float>(lr);
            adamw.step(params);
        } else {
            sgd.lr = static_cast<float>(lr);
            sgd.step(params);
        }
    }
};

// The running sums the evaluations report start again after each.
void reset_since(TrainLoopState& st) {
    st.since = 0;
    st.loss_sum = st.norm_sum = 0;
    st.correct = st.counted = 0;
}

}  // namespace

TrainLoopState run_train_loop(std::vector<Param>& params, const TrainConfig& cfg, const TrainLoopHooks& h) {
    using clock = std::chrono::steady_clock;
    TrainLoopState st;
    st.step_loss.reserve(static_cast<size_t>(cfg.steps));
    Optimiser opt(cfg);
    int64_t evaluated_at = 0;
    auto evaluate = [&] {
        const bool end = h.evaluate(st);
        evaluated_at = st.steps_done;
        reset_since(st);
        return end;
    };

    evaluate();  // step 0: the untrained model, where every record starts
    for (int64_t s = 0; s < cfg.steps; ++s) {
        if (h.stop != nullptr && h.stop->load()) {
            st.stopped = true;
            break;
        }
        const auto t0 = clock::now();
        st.last = h.step(s);
        if (h.on_gradients) h.on_gradients(s);
        // Set before the divergence check: the point that closes a diverged run shows its lr and norm.
        st.grad_norm = clip_grad_norm(params, cfg.clip);
        st.lr = lr_at(cfg, s);
        st.step_loss.push_back(static_cast<float>(st.last.loss));
        if (h.stop_on_divergence && (!std::isfinite(st.last.loss) || !std::isfinite(st.grad_norm))) {
            // A NaN would spread through every weight: keep the model as it was before this step.
            st.diverged = true;
            break;
        }
        opt.step(params, st.lr);
        st.train_seconds += std::chrono::duration<double>(clock::now() - t0).count();
        ++st.steps_done;
        ++st.since;
        st.loss_sum += st.last.loss;
        st.norm_sum += st.grad_norm;
        st.correct += st.last.correct;
        st.counted += st.last.counted;
        if (h.after_update) h.after_update(st);
        const bool due = (cfg.eval_every > 0 && st.steps_done % cfg.eval_every == 0) || st.steps_done == cfg.steps;
        const bool end = due && evaluate();
        if (h.after_step) h.after_step(st, due);
        if (end) break;
    }
    // A run that ended early (stopped, diverged) still ends on a measured point.
    if (evaluated_at != st.steps_done || (st.diverged && h.reevaluate_on_divergence)) evaluate();
    return st;
}

uint64_t step_seed(StepSeedRule rule, uint64_t seed, int64_t step) {
    const auto s = static_cast<uint64_t>(step);
    switch (rule) {
        case StepSeedRule::Train: return mix64(seed ^ 0x64726f70ULL) ^ mix64(s);  // "drop"
        case StepSeedRule::Experiment: return mix64(seed ^ (0x5eedULL + s));
        case StepSeedRule::Lab: return mix64(seed * 1000003ULL + s);
    }
    return 0;
}

TrainConfig constant_lr_config(const ConstantLrRun& r) {
    TrainConfig c;
    c.steps = r.steps;
    c.eval_every = r.eval_every;
    c.clip = r.clip;
    c.optimizer = r.optimizer;
    c.lr = r.lr;
    c.weight_decay = r.weight_decay;
    c.momentum = r.momentum;
    return c;
}

std::function<StepStats(int64_t)> task_step(TrainableStack& model, const Task& task, TaskStep how) {
    return [&model, &task, how = std::move(how)](int64_t s) {
        const TaskBatch b = how.batch_of ? how.batch_of(s) : task.batch(how.batch, how.seed, DataSplit::Train, s);
        return model.forward_backward(b.tokens.data(), b.targets.data(), b.B, b.T, step_seed(how.seeds, how.seed, s),
                                      how.threads);
    };
}

}  // namespace attn
