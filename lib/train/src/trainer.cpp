// The runs of `attn train` (attn/train/trainer.hpp): settings, lr schedule, evaluation, and
// train_model, the one loop of attn/train/loop.hpp with a TrainableStack and a task.
#include "attn/train/trainer.hpp"

#include <cmath>
#include <numbers>

#include <fmt/core.h>

#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "attn/train/loop.hpp"

namespace attn {

const char* optimizer_name(OptimizerKind k) { return k == OptimizerKind::AdamW ? "adamw" : "sgd"; }
const char* lr_schedule_name(LrSchedule s) { return s == LrSchedule::Constant ? "constant" : "cosine"; }

void TrainConfig::validate() const {
    auto bad = [](const char* field, const std::string& rule) {
        throw InputError(fmt::format("{}: {}", field, rule));
    };
    if (steps < 0) bad("steps", fmt::format("must be at least 0, got {}", steps));
    if (batch < 1) bad("batch", fmt::format("must be at least 1, got {}", batch));
    // Checked on the double and on its float, as the optimisers keep lr as a float.
    if (!(std::isfinite(lr) && lr > 0 && static_cast<float>(lr) > 0 && std::isfinite(static_cast<float>(lr))))
        bad("lr", fmt::format("must be a finite number above 0 (also as a float32), got {}", lr));
    if (!(std::isfinite(weight_decay) && weight_decay >= 0))
        bad("weight_decay", fmt::format("must be a finite number >= 0, got {}", weight_decay));
    if (!(momentum >= 0 && momentum < 1)) bad("momentum", fmt::format("must be in [0, 1), got {}", momentum));
    if (!(beta1 >= 0 && beta1 < 1)) bad("beta1", fmt::format("must be in [0, 1), got {}", beta1));
    if (!(beta2 >= 0 && beta2 < 1)) bad("beta2", fmt::format("must be in [0, 1), got {}", beta2));
    if (!(eps > 0 && std::isfinite(eps))) bad("eps", fmt::format("must be a finite number above 0, got {}", eps));
    if (!(std::isfinite(clip) && clip >= 0)) bad("clip", fmt::format("must be a finite number >= 0, got {}", clip));
    if (warmup < 0) bad("warmup", fmt::format("must be at least 0, got {}", warmup));
    if (warmup > steps) bad("warmup", fmt::format("must be at most steps ({}), got {}", steps, warmup));
    if (eval_every < 0) bad("eval_every", fmt::format("must be at least 0, got {}", eval_every));
    if (eval_batches < 1) bad("eval_batches", fmt::format("must be at least 1, got {}", eval_batches));
}

double training_memory_bytes(const ModelConfig& mc, int64_t batch, int64_t seq) {
    const double BT = static_cast<double>(batch) * static_cast<double>(seq);
    const double per_token = static_cast<double>(mc.layers) * (16.0 * mc.d_model + 2.0 * mc.d_ff +
                                                               3.0 * static_cast<double>(mc.heads) * seq) +
                             2.0 * mc.vocab;
    const double weights = 4.0 * (2.0 * mc.vocab * mc.d_model + static_cast<double>(mc.layers) *
                                  (mc.d_model * mc.heads * (2.0 * mc.d_k + 2.0 * mc.d_v) + 2.0 * mc.d_model * mc.d_ff));
    return 4.0 * (BT * per_token + weights);
}

double lr_at(const TrainConfig& cfg, int64_t step) {
    if (step < cfg.warmup) return cfg.lr * static_cast<double>(step + 1) / static_cast<double>(cfg.warmup);
    if (cfg.schedule == LrSchedule::Constant) return cfg.lr;
    const double lr_min = cfg.lr / 10;
    const int64_t span = cfg.steps - cfg.warmup - 1;  // steps after the warmup, less one: p reaches 1 at the last
    const double p = span > 0 ? std::min(1.0, static_cast<double>(step - cfg.warmup) / static_cast<double>(span)) : 1.0;
    return lr_min + (cfg.lr - lr_min) * 0.5 * (1.0 + std::cos(std::numbers::pi * p));
}

EvalStats evaluate_task(TrainableStack& model, const Task& task, int64_t batch, uint64_t seed, int64_t batches,
                        int threads, bool exact_match) {
    EvalStats e;
    double loss_sum = 0;
    int64_t correct = 0;
    TaskScore exact;
    for (int64_t k = 0; k < batches; ++k) {
        const TaskBatch b = task.batch(batch, seed, DataSplit::Eval, k);
        const StepStats s = model.evaluate(b.tokens.data(), b.targets.data(), b.B, b.T, threads);
        loss_sum += s.loss * static_cast<double>(s.counted);
        correct += s.correct;
        e.tokens += s.counted;
        if (exact_match && task.has_exact_match()) {
            const Tensor logits = model.logits(b.tokens.data(), b.B, b.T, threads);
            exact += score_predictions(b, argmax_rows(logits.ptr(), b.B * b.T, task.vocab()));
        }
    }
    if (e.tokens > 0) {
        e.loss = loss_sum / static_cast<double>(e.tokens);
        e.accuracy = static_cast<double>(correct) / static_cast<double>(e.tokens);
    }
    if (exact_match && task.has_exact_match()) e.exact = exact.exact_match();
    return e;
}

TrainResult train_model(TrainableStack& model, const Task& task, const TrainConfig& cfg,
                        const TrainCallback& on_progress, const std::atomic<bool>* stop) {
    cfg.validate();
    if (model.config().vocab < task.vocab())
        throw InputError(fmt::format("the model's vocabulary ({}) is smaller than task {}'s ({})", model.config().vocab,
                                     task.name(), task.vocab()));
    if (model.config().max_seq < task.seq())
        throw InputError(fmt::format("the model takes at most {} positions, task rows have {}", model.config().max_seq,
                                     task.seq()));
    TrainResult r;
    TrainLoopHooks h;
    h.stop = stop;
    h.step = task_step(model, task, {cfg.batch, cfg.seed, cfg.threads, StepSeedRule::Train, {}});
    h.evaluate = [&](const TrainLoopState& st) {
        CurvePoint p;
        p.step = st.steps_done;
        p.lr = st.lr;
        p.train_loss = st.since > 0 ? st.loss_sum / static_cast<double>(st.since) : 0.0;
        p.train_accuracy = st.counted > 0 ? static_cast<double>(st.correct) / static_cast<double>(st.counted) : 0.0;
        p.grad_norm = st.grad_norm;
        p.eval = evaluate_task(model, task, cfg.batch, cfg.seed, cfg.eval_batches, cfg.threads);
        p.seconds = st.train_seconds;
        r.curve.push_back(p);
        return false;
    };
    if (on_progress)
        h.after_step = [&](const TrainLoopState& st, bool evaluated) {
            TrainProgress pr;
            pr.step = st.steps_done;
            pr.steps = cfg.steps;
            pr.loss = st.last.loss;
            pr.accuracy = st.last.counted > 0
                              ? static_cast<double>(st.last.correct) / static_cast<double>(st.last.counted) : 0.0;
            pr.steps_per_s = st.train_seconds > 0 ? static_cast<double>(st.steps_done) / st.train_seconds : 0.0;
            pr.eta_s = pr.steps_per_s > 0 ? static_cast<double>(cfg.steps - st.steps_done) / pr.steps_per_s : 0.0;
            pr.eval = evaluated ? &r.curve.back() : nullptr;
            on_progress(pr);
        };
    std::vector<Param> params = model.params();
    TrainLoopState st = run_train_loop(params, cfg, h);
    r.step_loss = std::move(st.step_loss);
    r.steps_done = st.steps_done;
    r.stopped = st.stopped;
    r.diverged = st.diverged;
    r.train_seconds = st.train_seconds;
    return r;
}

}  // namespace attn
