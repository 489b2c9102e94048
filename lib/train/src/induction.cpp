// induction.cpp: scores, phase change and ablation of induction heads (attn/train/induction.hpp).
#include "attn/train/induction.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/core/head_scores.hpp"
#include "attn/core/rng.hpp"
#include "attn/train/trainer.hpp"

namespace attn {

namespace {

Tensor* find_param(std::vector<Param>& ps, const std::string& name) {
    for (auto& p : ps)
        if (p.name == name) return p.value;
    throw InputError(fmt::format("the model has no parameter '{}'", name));
}

// x - mean(x), in place
void centre(std::vector<double>& x) {
    double m = 0;
    for (double v : x) m += v;
    m /= static_cast<double>(x.size());
    for (double& v : x) v -= m;
}

}  // namespace

TaskBatch induction_probe(const Task& task, int64_t rows, uint64_t seed) {
    if (rows < 1) throw InputError(fmt::format("the induction probe needs at least one row, got {}", rows));
    const int64_t T = task.seq(), n = T / 2, S = task.options().symbols;
    TaskBatch b;
    b.B = rows;
    b.T = T;
    b.tokens.assign(static_cast<size_t>(rows * T), 0);
    b.targets.assign(static_cast<size_t>(rows * T), -1);
    for (int64_t r = 0; r < rows; ++r) {
        Rng rng(mix64(seed ^ 0x70726f6265ULL), static_cast<uint64_t>(r));  // "probe"
        int32_t* tok = b.tokens.data() + r * T;
        for (int64_t t = 0; t < n; ++t) tok[t] = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(S));
        for (int64_t t = n; t < 2 * n; ++t) tok[t] = tok[t - n];
        if (T > 2 * n) tok[T - 1] = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(S));
        for (int64_t t = n; t + 1 < 2 * n; ++t) b.targets[static_cast<size_t>(r * T + t)] = tok[t + 1];
    }
    return b;
}

std::vector<double> copying_scores(TrainableStack& model, int64_t layer) {
    const ModelConfig& c = model.config();
    if (layer < 0 || layer >= c.layers)
        throw InputError(fmt::format("layer {} is out of range (the model has {})", layer, c.layers));
    auto ps = model.params();
    const std::string p = fmt::format("blocks.{}.", layer);
    const Tensor& E = *find_param(ps, "tok_emb.weight");          // (V, D)
    const Tensor& g1 = *find_param(ps, p + "ln1.weight");         // (D)
    const Tensor& Wv = *find_param(ps, p + "attn.v_proj.weight");  // (H Dv, D)
    const Tensor& Wo = *find_param(ps, p + "attn.o_proj.weight");  // (D, H Dv)
    const Tensor& gf = *find_param(ps, "ln_f.weight");            // (D)
    const Tensor& Wu = *find_param(ps, "head.weight");            // (V, D)
    const int64_t V = c.vocab, D = c.d_model, H = c.heads, Dv = c.d_v, HDv = H * Dv;
    const int64_t S = V;  // the induction task's tokens are its symbols
    std::vector<double> out(static_cast<size_t>(H), 0.0);
    std::vector<double> x(static_cast<size_t>(D)), v(static_cast<size_t>(Dv)), o(static_cast<size_t>(D));
    for (int64_t h = 0; h < H; ++h) {
        int64_t hits = 0;
        for (int64_t t = 0; t < S; ++t) {
            for (int64_t d = 0; d < D; ++d) x[static_cast<size_t>(d)] = E.ptr()[t * D + d];
            centre(x);
            for (int64_t d = 0; d < D; ++d) x[static_cast<size_t>(d)] *= g1.ptr()[d];
            for (int64_t j = 0; j < Dv; ++j) {  // v = W_V^h x
                const float* row = Wv.ptr() + (h * Dv + j) * D;
                double s = 0;
                for (int64_t d = 0; d < D; ++d) s += static_cast<double>(row[d]) * x[static_cast<size_t>(d)];
                v[static_cast<size_t>(j)] = s;
            }
            for (int64_t d = 0; d < D; ++d) {  // o = W_O^h v: columns h Dv .. (h+1) Dv of o_proj
                const float* row = Wo.ptr() + d * HDv + h * Dv;
                double s = 0;
                for (int64_t j = 0; j < Dv; ++j) s += static_cast<double>(row[j]) * v[static_cast<size_t>(j)];
                o[static_cast<size_t>(d)] = s;
            }
            centre(o);
            for (int64_t d = 0; d < D; ++d) o[static_cast<size_t>(d)] *= gf.ptr()[d];
            int64_t best = 0;
            double best_logit = 0;
            for (int64_t u = 0; u < V; ++u) {
                const float* row = Wu.ptr() + u * D;
                double s = 0;
                for (int64_t d = 0; d < D; ++d) s += static_cast<double>(row[d]) * o[static_cast<size_t>(d)];
                if (u == 0 || s > best_logit) {
                    best = u;
                    best_logit = s;
                }
            }
            hits += best == t;
        }
        out[static_cast<size_t>(h)] = static_cast<double>(hits) / static_cast<double>(S);
    }
    return out;
}

InductionScores induction_scores(TrainableStack& model, const Task& task, int64_t rows, uint64_t seed, int threads) {
    const ModelConfig& c = model.config();
    const TaskBatch b = induction_probe(task, rows, seed);
    (void)model.logits(b.tokens.data(), b.B, b.T, threads);
    const auto& att = model.attention_weights();  // per layer (B, H, T, T)
    const int64_t H = c.heads, T = b.T, n = T / 2;
    InductionScores s;
    for (int64_t l = 0; l < c.layers; ++l) {
        std::vector<double> prev(static_cast<size_t>(H), 0.0), prefix(static_cast<size_t>(H), 0.0);
        Tensor one({1, H, T, T});
        for (int64_t r = 0; r < b.B; ++r) {
            const float* src = att[static_cast<size_t>(l)].ptr() + r * H * T * T;
            std::copy(src, src + H * T * T, one.data.begin());
            const auto p = previous_token_scores(one);
            const auto m = prefix_matching_scores(one, 0, n);
            for (int64_t h = 0; h < H; ++h) {
                prev[static_cast<size_t>(h)] += p[static_cast<size_t>(h)] / static_cast<double>(b.B);
                prefix[static_cast<size_t>(h)] += m[static_cast<size_t>(h)] / static_cast<double>(b.B);
            }
        }
        s.prev.push_back(std::move(prev));
        s.prefix.push_back(std::move(prefix));
        s.copy.push_back(copying_scores(model, l));
    }
    return s;
}

PhaseChange find_phase_change(const std::vector<int64_t>& steps, const std::vector<double>& losses, double plateau) {
    if (steps.size() != losses.size())
        throw InputError(fmt::format("phase change: {} steps for {} losses", steps.size(), losses.size()));
    PhaseChange pc;
    pc.plateau = plateau;
    if (losses.empty()) return pc;
    pc.final = losses.back();
    if (!(pc.final <= 0.5 * plateau)) return pc;  // no drop to half of ln S: no phase change
    const double drop = plateau - pc.final, mid = pc.final + 0.5 * drop;
    const double hi = pc.final + 0.9 * drop, lo = pc.final + 0.1 * drop;
    size_t k = 0;
    while (k < losses.size() && losses[k] > mid) ++k;
    pc.found = true;
    pc.step = steps[k];
    size_t a = k;
    while (a > 0 && losses[a] < hi) --a;
    size_t e = k;
    while (e + 1 < losses.size() && losses[e] > lo) ++e;
    pc.start = steps[a];
    pc.end = steps[e];
    return pc;
}

ScoredHead best_head(const PerHead& scores, int64_t layer) {
    if (layer < 0 || layer >= static_cast<int64_t>(scores.size()))
        throw InputError(fmt::format("layer {} is out of range ({} layers scored)", layer, scores.size()));
    const auto& row = scores[static_cast<size_t>(layer)];
    ScoredHead r;
    r.layer = layer;
    for (size_t h = 0; h < row.size(); ++h)
        if (r.head < 0 || row[h] > r.score) {
            r.head = static_cast<int64_t>(h);
            r.score = row[h];
        }
    return r;
}

double ablated_loss(TrainableStack& model, const Task& task, const std::vector<std::pair<int64_t, int64_t>>& heads,
                    int64_t batch, uint64_t seed, int64_t batches, int threads) {
    const ModelConfig& c = model.config();
    auto ps = model.params();
    struct Saved {
        Tensor* w;
        std::vector<float> values;
    };
    std::vector<Saved> saved;
    for (const auto& [layer, head] : heads) {
        if (layer < 0 || layer >= c.layers || head < 0 || head >= c.heads)
            throw InputError(fmt::format("head {}.{} is not in the model ({} layers of {} heads)", layer, head,
                                         c.layers, c.heads));
        Tensor* w = find_param(ps, fmt::format("blocks.{}.attn.o_proj.weight", layer));  // (D, H Dv)
        saved.push_back({w, w->data});
        const int64_t D = c.d_model, HDv = c.heads * c.d_v;
        for (int64_t d = 0; d < D; ++d)
            for (int64_t j = 0; j < c.d_v; ++j) w->data[static_cast<size_t>(d * HDv + head * c.d_v + j)] = 0.0f;
    }
    double loss = 0;
    try {
        loss = evaluate_task(model, task, batch, seed, batches, threads).loss;
    } catch (...) {
        for (auto it = saved.rbegin(); it != saved.rend(); ++it) it->w->data = it->values;
        throw;
    }
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) it->w->data = it->values;
    return loss;
}

void InductionObserver::observe(TrainableStack& model, const CurvePoint& point) {
    InductionScores s = induction_scores(model, *task_, kInductionProbeRows, seed_, threads_);
    s.step = point.step;
    s.loss = point.eval.loss;
    s.seconds = point.seconds;
    trace_.push_back(std::move(s));
}

InductionRun finish_induction(TrainableStack& model, const Task& task, std::vector<InductionScores> trace,
                              int64_t batch, uint64_t seed, int64_t eval_batches, int threads) {
    InductionRun r;
    r.trace = std::move(trace);
    if (r.trace.empty()) throw InputError("the induction run has no evaluation to analyse");
    std::vector<int64_t> steps;
    std::vector<double> losses;
    for (const auto& s : r.trace) {
        steps.push_back(s.step);
        losses.push_back(s.loss);
    }
    r.phase = find_phase_change(steps, losses, std::log(static_cast<double>(task.options().symbols)));
    const InductionScores& last = r.trace.back();
    const auto layers = static_cast<int64_t>(last.prev.size());
    r.prev_head = best_head(last.prev, 0);
    r.induction_head = best_head(last.prefix, layers - 1);
    r.loss = evaluate_task(model, task, batch, seed, eval_batches, threads).loss;
    for (int64_t l = 0; l < layers; ++l) {
        std::vector<double> row;
        for (int64_t h = 0; h < static_cast<int64_t>(last.prev[static_cast<size_t>(l)].size()); ++h)
            row.push_back(ablated_loss(model, task, {{l, h}}, batch, seed, eval_batches, threads));
        r.ablation.push_back(std::move(row));
    }
    r.both = ablated_loss(model, task,
                          {{r.prev_head.layer, r.prev_head.head}, {r.induction_head.layer, r.induction_head.head}},
                          batch, seed, eval_batches, threads);
    return r;
}

}  // namespace attn
