// The shared training loop of the training experiments (exp_common.hpp).
#include "exp_common.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/core/rng.hpp"
#include "attn/train/optim.hpp"
#include "chosen_optimiser.hpp"

namespace attn::exp {

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

}  // namespace

RunTrace run_training(const RunSpec& spec, uint64_t seed, int threads, const RunProgress& progress) {
    const Task task(spec.task, spec.task_opt);
    ModelConfig mc = spec.model;
    if (mc.vocab <= 0) mc.vocab = task.vocab();  // a custom data source sets its own
    mc.max_seq = std::max<int64_t>(mc.max_seq, task.seq());
    mc.causal = spec.task_opt.causal;
    TinyTransformer model(mc);
    init_for_training(model, seed, spec.emb_std);  // as attn train does
    if (spec.after_init) spec.after_init(model);
    std::vector<Param> params = model.params();
    ChosenOptimiser opt(spec.lr, spec.weight_decay, spec.momentum, spec.opt != OptimizerKind::AdamW);

    RunTrace tr;
    double gqk_sum = 0, gall_sum = 0;
    int64_t since = 0;
    auto evaluate = [&](int64_t step) {
        EvalPoint pt;
        pt.step = step;
        EvalStats e = spec.eval_of ? spec.eval_of(model)
                                   : evaluate_task(model, task, spec.batch, seed, spec.eval_batches, threads);
        pt.loss = e.loss;
        pt.acc = e.accuracy;
        if (spec.track_attention) {
            const TaskBatch b = task.batch(spec.batch, seed, DataSplit::Eval, 0);
            model.evaluate(b.tokens.data(), b.targets.data(), b.B, b.T, threads);
            pt.onehot = onehot_share(model.attention_weights(), mc.causal);
            pt.spread = score_spread(model.attention_weights(), mc.causal);
        }
        pt.grad_qk = since ? gqk_sum / static_cast<double>(since) : 0.0;
        pt.grad_all = since ? gall_sum / static_cast<double>(since) : 0.0;
        gqk_sum = gall_sum = 0;
        since = 0;
        tr.points.push_back(pt);
        if (tr.steps_to_target < 0 && pt.acc >= spec.target_acc) tr.steps_to_target = step;
        if (progress) progress(step, &tr.points.back());
    };
    evaluate(0);
    for (int64_t s = 0; s < spec.steps; ++s) {
        const TaskBatch b = spec.batch_of ? spec.batch_of(s) : task.batch(spec.batch, seed, DataSplit::Train, s);
        const StepStats st =
            model.forward_backward(b.tokens.data(), b.targets.data(), b.B, b.T, mix64(seed ^ (0x5eedULL + s)), threads);
        double gqk = 0, gatt = 0;
        for (const Param& p : params)
            if (is_attn_weight(p.name)) {
                const double g = sq_norm(*p.grad);
                gatt += g;
                if (is_qk_weight(p.name)) gqk += g;
            }
        tr.max_grad_attn = std::max(tr.max_grad_attn, std::sqrt(gatt));
        const double gnorm = clip_grad_norm(params, spec.clip);
        if (!std::isfinite(st.loss) || !std::isfinite(gnorm)) {
            tr.diverged = true;
            break;
        }
        gqk_sum += std::sqrt(gqk);
        gall_sum += gnorm;
        tr.max_grad_qk = std::max(tr.max_grad_qk, std::sqrt(gqk));
        ++since;
        opt.step(params);
        tr.steps_done = s + 1;
        const bool last = s + 1 == spec.steps;
        if (last || (spec.eval_every > 0 && (s + 1) % spec.eval_every == 0)) {
            evaluate(s + 1);
            if (spec.stop_at_target && tr.steps_to_target >= 0) break;
        } else if (progress && (s + 1) % 25 == 0) {
            progress(s + 1, nullptr);
        }
    }
    if (tr.diverged || tr.points.back().step != tr.steps_done) evaluate(tr.steps_done);
    if (spec.after_train) spec.after_train(model);
    for (const Param& p : params)
        if (p.name.ends_with(".attn.log_tau")) tr.learned_tau.push_back(std::exp(static_cast<double>(p.value->data[0])));
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

std::string steps_text(const std::vector<int64_t>& steps) {
    const nlohmann::json c = steps_cell(steps);
    const int n = reached(steps);
    if (c.is_null()) return n == 0 ? "never" : fmt::format("never ({}/{} runs)", n, steps.size());
    const std::string s = fmt::format("{:g}", c.get<double>());
    return n == static_cast<int>(steps.size()) ? s : fmt::format("{} ({}/{} runs)", s, n, steps.size());
}

std::string pct(double v) { return fmt::format("{:.1f}%", 100.0 * v); }

}  // namespace attn::exp
