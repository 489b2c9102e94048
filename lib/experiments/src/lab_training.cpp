// The experiments' training runs (lab_training.hpp): the library's loop with their
// batches, step seeds and held-out evaluations.
#include "lab_training.hpp"

#include "attn/train/loop.hpp"

namespace attn::lab {

EvalResult eval_lab(TinyTransformer& m, const Task& task, int64_t batch, uint64_t seed, int64_t batches, int threads) {
    double loss = 0;
    int64_t correct = 0, counted = 0;
    for (int64_t i = 0; i < batches; ++i) {
        const TaskBatch b = task.batch(batch, seed, DataSplit::Eval, i);
        const StepStats s = m.evaluate(b.tokens.data(), b.targets.data(), b.B, b.T, threads);
        loss += s.loss * double(s.counted);
        correct += s.correct;
        counted += s.counted;
    }
    return {counted ? loss / double(counted) : 0.0, counted ? double(correct) / double(counted) : 0.0};
}

LabCurve train_lab(TinyTransformer& m, const Task& task, const LabTrainSpec& s,
                   const std::function<void(int64_t)>& after_step, const std::function<void(int64_t)>& at_eval) {
    TrainConfig cfg;  // a constant lr, no warmup
    cfg.steps = s.steps;
    cfg.eval_every = s.eval_every;
    cfg.clip = s.clip;
    cfg.optimizer = s.sgd ? OptimizerKind::Sgd : OptimizerKind::AdamW;
    cfg.lr = s.lr;
    cfg.weight_decay = s.weight_decay;
    cfg.momentum = s.momentum;
    LabCurve c;
    TrainLoopHooks h;
    h.stop_on_divergence = false;
    h.step = [&](int64_t st) {
        const TaskBatch b = s.train_batch ? s.train_batch(st) : task.batch(s.batch, s.seed, DataSplit::Train, st);
        return m.forward_backward(b.tokens.data(), b.targets.data(), b.B, b.T,
                                  mix64(s.seed * 1000003ULL + uint64_t(st)), s.threads);
    };
    if (after_step) h.after_update = [&](const TrainLoopState& st) { after_step(st.steps_done); };
    h.evaluate = [&](const TrainLoopState& st) {
        const EvalResult e = eval_lab(m, task, s.batch, s.seed, s.eval_batches, s.threads);
        c.step.push_back(double(st.steps_done));
        c.eval_loss.push_back(e.loss);
        c.eval_acc.push_back(e.acc);
        // Before the first step there is no training loss yet: the held-out one stands in.
        c.train_loss.push_back(st.since ? st.loss_sum / double(st.since) : e.loss);
        if (at_eval) at_eval(st.steps_done);
        return false;
    };
    std::vector<Param> params = m.params();
    run_train_loop(params, cfg, h);
    return c;
}

}  // namespace attn::lab
