// The shared training loop of the training experiments (exp_common.hpp).
#include "exp_common.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/core/rng.hpp"
#include "attn/train/loop.hpp"

namespace attn::training_runs {

double onehot_share(const std::vector<Tensor>& weights, bool causal, double thr) {
    int64_t rows = 0, hot = 0;
    for (const Tensor& w : weights) {
        const int64_t B = w.shape[0], H = w.shape[1], T = w.shape[2], Tk = w.shape[3];
        for (int64_t bh = 0; bh < B * H; ++bh)
            for (int64_t i = causal ? 1 : 0; i < T; ++i) {
                const float* r = w.ptr() + (bh * T + i) * Tk;
                const float mx = *std::max_element(r, r + Tk);
                if (mx == 0.0f) continue;  // an all-masked row
                ++rows;
                if (mx > thr) ++hot;
            }
    }
    return rows ? static_cast<double>(hot) / static_cast<double>(rows) : 0.0;
}

double score_spread(const std::vector<Tensor>& weights, bool causal) {
    double total = 0;
    int64_t rows = 0;
    for (const Tensor& w : weights) {
        const int64_t B = w.shape[0], H = w.shape[1], T = w.shape[2], Tk = w.shape[3];
        for (int64_t bh = 0; bh < B * H; ++bh)
            for (int64_t i = causal ? 1 : 0; i < T; ++i) {
                const float* r = w.ptr() + (bh * T + i) * Tk;
                const int64_t n = causal ? i + 1 : Tk;
                double m = 0, m2 = 0;
                for (int64_t j = 0; j < n; ++j) {
                    const double l = std::log(std::max(static_cast<double>(r[j]), 1e-30));
                    m += l;
                    m2 += l * l;
                }
                m /= static_cast<double>(n);
                total += std::sqrt(std::max(0.0, m2 / static_cast<double>(n) - m * m));
                ++rows;
            }
    }
    return rows ? total / static_cast<double>(rows) : 0.0;
}

namespace {

double sq_norm(const Tensor& t) {
    double s = 0;
    for (float x : t.data) s += static_cast<double>(x) * static_cast<double>(x);
    return s;
}

bool is_attn_weight(const std::string& n) {
    return n.find(".attn.") != std::string::npos && n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0;
}

bool is_qk_weight(const std::string& n) {
    return n.find("attn.q_proj.weight") != std::string::npos || n.find("attn.k_proj.weight") != std::string::npos;
}

// One evaluation of a run: the spec's (or the task's eval split), the attention's one-hot share
// and score spread when tracked, and the gradient norms averaged over the steps since the last.
EvalPoint eval_point(const RunSpec& spec, const Task& task, TrainableStack& model, const TrainLoopState& st,
                     double gqk_sum, uint64_t seed, int threads) {
    EvalPoint pt;
    pt.step = st.steps_done;
    const EvalStats e = spec.eval_of ? spec.eval_of(model)
                                     : evaluate_task(model, task, spec.batch, seed, spec.eval_batches, threads);
    pt.loss = e.loss;
    pt.acc = e.accuracy;
    if (spec.track_attention) {
        const TaskBatch b = task.batch(spec.batch, seed, DataSplit::Eval, 0);
        model.evaluate(b.tokens.data(), b.targets.data(), b.B, b.T, threads);
        pt.onehot = onehot_share(model.attention_weights(), model.config().causal);
        pt.spread = score_spread(model.attention_weights(), model.config().causal);
    }
    pt.grad_qk = st.since ? gqk_sum / static_cast<double>(st.since) : 0.0;
    pt.grad_all = st.since ? st.norm_sum / static_cast<double>(st.since) : 0.0;
    return pt;
}

// The loop's settings for a run: the spec's optimiser at a constant lr, no warmup.
TrainConfig loop_config(const RunSpec& spec) {
    return constant_lr_config({spec.steps, spec.eval_every, spec.clip, spec.opt, spec.lr, spec.weight_decay,
                               spec.momentum});
}

// The squared gradient norms of the attention projections (q, k, v, o) and of q and k alone.
struct AttnGrads {
    double all = 0, qk = 0;
};
AttnGrads attn_grads(const std::vector<Param>& params) {
    AttnGrads g;
    for (const Param& p : params)
        if (is_attn_weight(p.name)) {
            const double n = sq_norm(*p.grad);
            g.all += n;
            if (is_qk_weight(p.name)) g.qk += n;
        }
    return g;
}

}  // namespace

RunTrace run_training(const RunSpec& spec, uint64_t seed, int threads, const RunProgress& progress) {
    const Task task(spec.task, spec.task_opt);
    ModelConfig mc = spec.model;
    if (mc.vocab <= 0) mc.vocab = task.vocab();  // a custom data source sets its own
    mc.max_seq = std::max<int64_t>(mc.max_seq, task.seq());
    mc.causal = spec.task_opt.causal;
    TrainableStack model(mc);
    init_for_training(model, seed, spec.emb_std);
    if (spec.after_init) spec.after_init(model);
    std::vector<Param> params = model.params();

    RunTrace tr;
    double gqk_sum = 0;  // sqrt(|dW_q|^2 + |dW_k|^2) summed since the last point
    AttnGrads g;         // the step's, before clipping
    TrainLoopHooks h;
    h.reevaluate_on_divergence = true;
    h.step = task_step(model, task, {spec.batch, seed, threads, StepSeedRule::Experiment, spec.batch_of});
    h.on_gradients = [&](int64_t) {
        g = attn_grads(params);
        tr.max_grad_attn = std::max(tr.max_grad_attn, std::sqrt(g.all));  // the diverged step's too
    };
    h.after_update = [&](const TrainLoopState&) {
        gqk_sum += std::sqrt(g.qk);
        tr.max_grad_qk = std::max(tr.max_grad_qk, std::sqrt(g.qk));
    };
    h.evaluate = [&](const TrainLoopState& st) {
        tr.points.push_back(eval_point(spec, task, model, st, gqk_sum, seed, threads));
        gqk_sum = 0;
        if (tr.steps_to_target < 0 && tr.points.back().acc >= spec.target_acc) tr.steps_to_target = st.steps_done;
        if (progress) progress(st.steps_done, &tr.points.back());
        // Not at step 0: a model right from the start still trains to the next evaluation.
        return spec.stop_at_target && tr.steps_to_target >= 0 && st.steps_done > 0;
    };
    h.after_step = [&](const TrainLoopState& st, bool evaluated) {
        if (progress && !evaluated && st.steps_done % 25 == 0) progress(st.steps_done, nullptr);
    };
    const TrainLoopState end = run_train_loop(params, loop_config(spec), h);
    tr.diverged = end.diverged;
    tr.steps_done = end.steps_done;
    if (spec.after_train) spec.after_train(model);
    for (const Param& p : params)
        if (p.name.ends_with(".attn.log_tau"))
            tr.learned_tau.push_back(std::exp(static_cast<double>(p.value->data[0])));
    tr.final_acc = tr.points.back().acc;
    tr.final_loss = tr.points.back().loss;
    return tr;
}

int reached(const std::vector<int64_t>& steps) {
    return static_cast<int>(std::count_if(steps.begin(), steps.end(), [](int64_t s) { return s >= 0; }));
}

nlohmann::json steps_cell(const std::vector<int64_t>& steps) {
    std::vector<double> got;
    for (int64_t s : steps)
        if (s >= 0) got.push_back(static_cast<double>(s));
    if (got.empty() || 2 * got.size() < steps.size()) return nullptr;
    return median(got);
}

std::string pct(double v) { return fmt::format("{:.1f}%", 100.0 * v); }

}  // namespace attn::training_runs
