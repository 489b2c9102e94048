// Experiment "dropout" (C38): attention dropout p in {0, 0.1, 0.2, 0.3, 0.5} on the
// weights after softmax vs on the scores before it, under AdamW and SGD with momentum.
//
// Task: associative recall (attn/train/tasks.hpp; T = 6: 2 key-value pairs, 8 keys, 8
// values) learned from a FINITE training set of 256 rows (a pool of rows drawn once from the train
// split, lab::PoolData) and measured on the held-out split. The pool is small enough that
// the model can memorise it instead of learning the lookup, so the gap between training
// and held-out loss is real and dropout has something to regularise. Model: the Transformer
// (attn/nn/trainable_stack.hpp), 2 layers (recall needs one to copy the key next to its
// value and one to look it up), 4 heads x 8, d_model 32, learned positions, no MLP,
// embeddings N(0, 1) (nn.Embedding's init; at 0.02 recall sits on a plateau).
// Measured per cell, over the seeds: steps until the held-out accuracy first reaches the
// target, the best and final held-out loss, the final held-out accuracy and training loss.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn/core/rng.hpp"
#include "lab_training.hpp"

namespace attn {
namespace {

using namespace lab;

struct Row {
    bool sgd;
    float p;
    bool scores;
    double steps_mean, best, final_loss, acc, train_loss, loss_sd, steps_sd;
};

const Row& find_row(const std::vector<Row>& rows, bool sgd, float p, bool scores) {
    for (const Row& w : rows)
        if (w.sgd == sgd && w.p == p && (w.scores == scores || p == 0.0f)) return w;
    return rows[0];
}

// The three C38 verdicts of one optimiser, from its rows.
void verdicts_of(ExperimentResult& r, const std::vector<Row>& rows, bool sgd, const std::vector<float>& ps,
                 double target) {
    const char* on = sgd ? "sgd" : "adamw";
    // 1: on the scores vs on the weights at the same p; a difference counts only beyond the larger seed sd
    int worse = 0, better = 0, cmp = 0;
    std::string fig1;
    for (float p : ps) {
        if (p == 0.0f) continue;
        const Row& w = find_row(rows, sgd, p, false);
        const Row& s = find_row(rows, sgd, p, true);
        ++cmp;
        const double tol_l = std::max(w.loss_sd, s.loss_sd), tol_s = std::max(w.steps_sd, s.steps_sd);
        const bool s_worse = s.final_loss - w.final_loss > tol_l || s.steps_mean - w.steps_mean > tol_s;
        const bool s_better = w.final_loss - s.final_loss > tol_l || w.steps_mean - s.steps_mean > tol_s;
        worse += s_worse && !s_better;
        better += s_better && !s_worse;
        fig1 += fmt::format("{}p={}: steps {:.0f} vs {:.0f} (sd {:.0f}), final loss {:.3f} vs {:.3f} (sd {:.3f})",
                            fig1.empty() ? "" : "; ", p, w.steps_mean, s.steps_mean, tol_s, w.final_loss,
                            s.final_loss, tol_l);
    }
    r.verdicts.push_back(
        {"C38", fmt::format("dropout belongs on the weights after softmax, not on the scores ({})", on),
         worse == cmp ? VerdictKind::Supported : (worse > better ? VerdictKind::Qualified : VerdictKind::NotSupported),
         fmt::format("scores worse beyond seed noise at {}/{} p, better at {}/{} (weights vs scores): {}", worse, cmp,
                     better, cmp, fig1)});
    // 2: p > 0.2 slows convergence (weights), the largest p against p = 0
    const Row& w0 = find_row(rows, sgd, 0.0f, false);
    const Row& whi = find_row(rows, sgd, ps.back(), false);
    const double sd2 = std::max(whi.steps_sd, w0.steps_sd);
    const bool slower = whi.steps_mean - w0.steps_mean > sd2;
    std::string fig2;
    for (float p : ps)
        fig2 +=
            fmt::format("{}p={}: {:.0f} steps", fig2.empty() ? "" : ", ", p, find_row(rows, sgd, p, false).steps_mean);
    r.verdicts.push_back({"C38", fmt::format("p > 0.2 slows convergence (dropout on the weights, {})", on),
                          slower
                              ? VerdictKind::Supported
                              : (whi.steps_mean > w0.steps_mean ? VerdictKind::Qualified : VerdictKind::NotSupported),
                          fmt::format("mean steps to held-out accuracy {:.0f}%: {} (seed sd {:.0f} steps{})",
                                      100 * target, fig2, sd2, slower ? "" : ": the difference is within it")});
    // 3: p ~ 0.1 is a good default: the lowest final held-out loss among the weight cells, beyond noise vs p = 0
    if (std::find(ps.begin(), ps.end(), 0.1f) == ps.end()) return;  // (not at the quick size)
    float best_p = 0;
    double best_l = 1e30;
    for (float p : ps)
        if (find_row(rows, sgd, p, false).final_loss < best_l)
            best_l = find_row(rows, sgd, p, false).final_loss, best_p = p;
    const Row& w1 = find_row(rows, sgd, 0.1f, false);
    const double noise = std::max(w1.loss_sd, w0.loss_sd);
    const bool clear = w0.final_loss - w1.final_loss > noise;
    r.verdicts.push_back(
        {"C38", fmt::format("p around 0.1 is a good default ({})", on),
         best_p == 0.1f && clear
             ? VerdictKind::Supported
             : (best_p > 0.0f && best_p <= 0.2f ? VerdictKind::Qualified : VerdictKind::NotSupported),
         fmt::format("lowest final held-out loss at p={} ({:.3f}); p=0.1 vs p=0: {:.3f} vs {:.3f} (seed sd {:.3f}{}); "
                     "train loss {:.3f} vs {:.3f} (the gap is what dropout regularises)",
                     best_p, best_l, w1.final_loss, w0.final_loss, noise,
                     clear                           ? ""
                     : w1.final_loss < w0.final_loss ? ": lower, within noise"
                                                     : ": not lower",
                     w1.train_loss, w0.train_loss)});
}

ExperimentResult run_dropout(const ExperimentConfig& cfg, const ExperimentProgress& progress) {
    const ExperimentSize sz = cfg.size;
    const int64_t steps = pick(sz, 200, 400, 1200);
    const int64_t T = 6, symbols = 8, pool_rows = 256;
    const int64_t eval_every = pick(sz, 20, 20, 50);
    const double target = 0.7;  // held-out accuracy (chance 1/8)
    std::vector<float> ps = {0.0f, 0.1f, 0.2f, 0.3f, 0.5f}, ps_sgd = {0.0f, 0.1f, 0.5f};
    if (sz == ExperimentSize::Quick) ps = {0.0f, 0.5f}, ps_sgd = {};
    if (sz == ExperimentSize::Full) ps_sgd = ps;
    TaskOptions to;
    to.seq = T, to.symbols = symbols;
    const Task task(TaskKind::Recall, to);

    struct Cell {
        bool sgd;
        float p;
        DropWhere where;
        std::vector<LabCurve> runs;
    };
    std::vector<Cell> cells;
    for (bool sgd : {false, true})
        for (float p : sgd ? ps_sgd : ps) {
            cells.push_back({sgd, p, DropWhere::Weights, {}});
            if (p > 0) cells.push_back({sgd, p, DropWhere::Scores, {}});
        }
    const auto t0 = std::chrono::steady_clock::now();
    const int total = static_cast<int>(cells.size()) * cfg.seeds;
    int done = 0;
    for (Cell& cell : cells) {
        for (int s = 0; s < cfg.seeds; ++s) {
            const uint64_t seed = cfg.seed + uint64_t(s);
            ModelConfig lc;
            lc.vocab = task.vocab(), lc.max_seq = T, lc.d_model = 32, lc.heads = 4, lc.d_k = 8, lc.layers = 2;
            lc.mlp = false;
            lc.dropout = cell.p, lc.drop_where = cell.where;
            TrainableStack m = experiment_model(lc, seed, 1.0);
            const PoolData pool(task, pool_rows, seed);
            LabTrainSpec spec;
            spec.steps = steps, spec.batch = 16, spec.eval_every = eval_every, spec.eval_batches = 8;
            spec.sgd = cell.sgd, spec.lr = cell.sgd ? 0.1 : 3e-3, spec.momentum = 0.9;
            spec.seed = seed, spec.threads = cfg.threads;
            spec.train_batch = [&](int64_t st) { return pool.batch(spec.batch, seed, st); };
            cell.runs.push_back(train_lab(m, task, spec, [&](int64_t st) {
                if (st % 100 == 0 && progress)
                    progress(fmt::format("dropout: run {}/{}, {}, p {} on {}, seed {}, step {}", done + 1, total,
                                         cell.sgd ? "sgd" : "adamw", cell.p,
                                         cell.where == DropWhere::Weights ? "weights" : "scores", seed, st));
            }));
            ++done;
        }
    }
    ExperimentResult r;
    r.name = "dropout";
    ExperimentTable tab;
    tab.title = fmt::format(
        "associative recall (T={}, {} pairs, {} keys/values) from a finite training set of {} rows, "
        "held-out rows for the loss: steps to held-out accuracy {:.0f}% ({} steps, {} seeds, mean; "
        "never = the budget)",
        T, (T - 2) / 2, symbols, pool_rows, 100 * target, steps, cfg.seeds);
    tab.columns = {"optimiser", "p", "where", "steps to target", "reached", "best held-out loss", "final held-out loss",
                   "final held-out acc", "final train loss"};
    std::vector<Row> rows;
    for (const Cell& cell : cells) {
        std::vector<double> st, best, fin, acc, tr;
        for (const LabCurve& c : cell.runs) {
            st.push_back(c.steps_to_acc(target));
            best.push_back(*std::min_element(c.eval_loss.begin(), c.eval_loss.end()));
            fin.push_back(c.final_loss());
            acc.push_back(c.final_acc());
            tr.push_back(c.train_loss.back());
        }
        int reached = 0;
        const double ms = mean_steps(st, double(steps), &reached);
        const bool scores = cell.where == DropWhere::Scores;
        const char* opt = cell.sgd ? "sgd" : "adamw";
        tab.rows.push_back({opt, cell.p, scores ? "scores" : "weights", ms,
                            fmt::format("{}/{}", reached, cell.runs.size()), mean(best), mean(fin), mean(acc),
                            mean(tr)});
        std::vector<double> st_b;
        for (double x : st) st_b.push_back(x >= 0 ? x : double(steps));
        rows.push_back({cell.sgd, cell.p, scores, ms, mean(best), mean(fin), mean(acc), mean(tr), sample_std(fin),
                        sample_std(st_b)});
        std::vector<std::vector<double>> ys;
        for (const LabCurve& c : cell.runs) ys.push_back(c.eval_loss);
        r.curves.push_back({fmt::format("held-out loss, {}", opt),
                            fmt::format("p={} {}", cell.p, scores ? "scores" : "weights"), "step", cell.runs[0].step,
                            mean_curve(ys)});
    }
    r.tables.push_back(tab);
    verdicts_of(r, rows, false, ps, target);
    if (!ps_sgd.empty()) verdicts_of(r, rows, true, ps_sgd, target);
    r.notes.push_back("dropout on the scores: S' = S * keep / (1 - p) before softmax (a dropped score becomes 0, not "
                      "-inf); on the weights: P' = P * keep / (1 - p); the same counter-based mask in both");
    r.notes.push_back(fmt::format(
        "AdamW lr 3e-3; SGD lr 0.1 momentum 0.9{}; both clipped at norm 1, batch 16 rows of the {}-row training set, "
        "held-out loss and accuracy on 8 batches of the task's eval split. Each optimiser has its own verdicts: where "
        "they disagree, the result depends on the optimiser",
        ps_sgd.empty() ? " (not in the quick size)" : fmt::format(" at p in {{{}}}", fmt::join(ps_sgd, ", ")),
        pool_rows));
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace

ExperimentInfo experiment_dropout() {
    return {"dropout", {"C38"},
            "attention dropout p in {0, 0.1, 0.2, 0.3, 0.5} on the weights vs on the scores, AdamW and SGD: recall "
            "from a finite training set, steps to a held-out accuracy and the held-out loss",
            run_dropout};
}

}  // namespace attn
