// The experiments' training runs (lab_training.hpp): the library's loop with their
// batches, step seeds and held-out evaluations.
#include "lab_training.hpp"

#include "attn/train/loop.hpp"
#include "attn/train/trainer.hpp"

namespace attn::lab {

EvalResult eval_lab(TrainableStack& m, const Task& task, int64_t batch, uint64_t seed, int64_t batches, int threads) {
    const EvalStats e = evaluate_task(m, task, batch, seed, batches, threads, false);
    return {e.loss, e.accuracy};
}

LabCurve train_lab(TrainableStack& m, const Task& task, const LabTrainSpec& s,
                   const std::function<void(int64_t)>& after_step, const std::function<void(int64_t)>& at_eval) {
    const TrainConfig cfg = constant_lr_config({s.steps, s.eval_every, s.clip,
                                                s.sgd ? OptimizerKind::Sgd : OptimizerKind::AdamW, s.lr,
                                                s.weight_decay, s.momentum});
    LabCurve c;
    TrainLoopHooks h;
    h.stop_on_divergence = false;
    h.step = task_step(m, task, {s.batch, s.seed, s.threads, StepSeedRule::Lab, s.train_batch});
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
