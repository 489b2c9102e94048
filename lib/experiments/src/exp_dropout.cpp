// Experiment "dropout" (C38): attention dropout p in {0, 0.1, 0.2, 0.3, 0.5} on the
// weights after softmax vs on the scores before it.
//
// Task: associative recall (attn/train/tasks.hpp) learned from a FINITE training set
// (a pool of rows drawn once) and evaluated on held-out rows, so that dropout's two
// effects can both show: slower fitting and (maybe) less overfitting. Model: the lab
// model (attn/experiments/lab_model.hpp), 2 layers, 4 heads; AdamW. Measured per cell,
// over the seeds: steps until the held-out loss first reaches a target (the loss the
// p = 0 runs reach at 60% of the budget), the best and the final held-out loss and accuracy.
#include <chrono>

#include <fmt/format.h>

#include "attn/core/rng.hpp"
#include "exp_common2.hpp"

namespace attn {
namespace {

using namespace exp2;

ExperimentResult run_dropout(const ExperimentConfig& cfg, const ExperimentProgress& progress) {
    const ExperimentSize sz = cfg.size;
    const int64_t steps = pick(sz, 120, 500, 1500);
    const int64_t pool_rows = pick(sz, 256, 512, 1024);
    const int64_t T = 16;
    const int64_t eval_every = pick(sz, 20, 25, 50);
    std::vector<float> ps = {0.0f, 0.1f, 0.2f, 0.3f, 0.5f};
    if (sz == ExperimentSize::Quick) ps = {0.0f, 0.1f, 0.5f};
    TaskOptions to;
    to.seq = T, to.symbols = 16;
    const Task task(TaskKind::Recall, to);

    struct Cell {
        float p;
        lab::DropWhere where;
        std::vector<LabCurve> runs;
    };
    std::vector<Cell> cells;
    for (float p : ps) {
        cells.push_back({p, lab::DropWhere::Weights, {}});
        if (p > 0) cells.push_back({p, lab::DropWhere::Scores, {}});
    }
    const auto t0 = std::chrono::steady_clock::now();
    const int total = static_cast<int>(cells.size()) * cfg.seeds;
    int done = 0;
    for (Cell& cell : cells) {
        for (int s = 0; s < cfg.seeds; ++s) {
            const uint64_t seed = cfg.seed + uint64_t(s);
            lab::LabConfig lc;
            lc.vocab = task.vocab(), lc.max_seq = T, lc.d_model = 64, lc.heads = 4, lc.d_head = 16, lc.layers = 2;
            lc.dropout = cell.p, lc.drop_where = cell.where;
            lab::LabModel m(lc);
            m.init(seed);
            PoolData pool(task, pool_rows, seed);
            LabTrainSpec spec;
            spec.steps = steps, spec.batch = 32, spec.eval_every = eval_every, spec.eval_batches = 4;
            spec.lr = 3e-3, spec.seed = seed, spec.threads = cfg.threads;
            spec.train_batch = [&](int64_t st) { return pool.batch(spec.batch, seed, st); };
            cell.runs.push_back(train_lab(m, task, spec, [&](int64_t st) {
                if (st % 100 == 0 && progress)
                    progress(fmt::format("dropout: run {}/{}, p {} on {}, seed {}, step {}", done + 1, total, cell.p,
                                         cell.where == lab::DropWhere::Weights ? "weights" : "scores", seed, st));
            }));
            ++done;
        }
    }
    ExperimentResult r;
    r.name = "dropout";
    // Target: the mean held-out loss the p = 0 runs reach at 60% of the budget.
    const LabCurve& ref0 = cells[0].runs[0];
    size_t at = 0;
    while (at + 1 < ref0.step.size() && ref0.step[at] < 0.6 * double(steps)) ++at;
    std::vector<double> at_list;
    for (const LabCurve& c : cells[0].runs) at_list.push_back(c.eval_loss[at]);
    const double target = mean_of(at_list);

    ExperimentTable tab;
    tab.title = fmt::format("recall T={} from a pool of {} rows, held-out loss target {:.3f} ({} steps, {} seeds)", T,
                            pool_rows, target, steps, cfg.seeds);
    tab.columns = {"p", "where", "steps to target", "reached", "best held-out loss", "final held-out loss",
                   "final held-out acc", "final train loss"};
    struct Row {
        float p;
        bool scores;
        double steps_mean, best, final_loss, acc;
    };
    std::vector<Row> rows;
    for (const Cell& cell : cells) {
        std::vector<double> st, best, fin, acc, tr;
        for (const LabCurve& c : cell.runs) {
            st.push_back(c.steps_to_loss(target));
            best.push_back(*std::min_element(c.eval_loss.begin(), c.eval_loss.end()));
            fin.push_back(c.final_loss());
            acc.push_back(c.final_acc());
            tr.push_back(c.train_loss.back());
        }
        int reached = 0;
        const double ms = mean_steps(st, double(steps), &reached);
        const bool scores = cell.where == lab::DropWhere::Scores;
        tab.rows.push_back({cell.p, scores ? "scores" : "weights", ms, fmt::format("{}/{}", reached, cell.runs.size()),
                            mean_of(best), mean_of(fin), mean_of(acc), mean_of(tr)});
        rows.push_back({cell.p, scores, ms, mean_of(best), mean_of(fin), mean_of(acc)});
        std::vector<std::vector<double>> ys;
        for (const LabCurve& c : cell.runs) ys.push_back(c.eval_loss);
        r.curves.push_back({"held-out loss", fmt::format("p={} {}", cell.p, scores ? "scores" : "weights"), "step",
                            cell.runs[0].step, mean_curve(ys)});
    }
    r.tables.push_back(tab);
    auto find = [&](float p, bool scores) -> const Row& {
        for (const Row& w : rows)
            if (w.p == p && (w.scores == scores || p == 0.0f)) return w;
        return rows[0];
    };
    // Verdict 1: on the scores vs on the weights, at the same p.
    int worse = 0, cmp = 0;
    std::string fig1;
    for (float p : ps) {
        if (p == 0.0f) continue;
        const Row& w = find(p, false);
        const Row& s = find(p, true);
        ++cmp;
        worse += s.final_loss > w.final_loss;
        fig1 += fmt::format("{}p={}: final held-out loss weights {:.3f} vs scores {:.3f}", fig1.empty() ? "" : "; ", p,
                            w.final_loss, s.final_loss);
    }
    r.verdicts.push_back({"C38", "dropout belongs on the weights after softmax, not on the scores",
                          worse == cmp ? VerdictKind::Supported
                                       : (worse > 0 ? VerdictKind::Qualified : VerdictKind::NotSupported),
                          fmt::format("scores worse at {}/{} p; {}", worse, cmp, fig1)});
    // Verdict 2: p > 0.2 slows convergence (weights), compared with p <= 0.2.
    const Row& w0 = find(0.0f, false);
    const Row& whi = find(ps.back(), false);
    const bool slower = whi.steps_mean > w0.steps_mean;
    std::string fig2;
    for (float p : ps) {
        const Row& w = find(p, false);
        fig2 += fmt::format("{}p={}: {:.0f} steps", fig2.empty() ? "" : ", ", p, w.steps_mean);
    }
    r.verdicts.push_back({"C38", "p > 0.2 slows convergence (dropout on the weights)",
                          slower ? VerdictKind::Supported : VerdictKind::NotSupported,
                          fmt::format("mean steps to held-out loss {:.3f}: {}", target, fig2)});
    // Verdict 3: p ~ 0.1 is the sweet spot: best final held-out loss among the weight cells.
    float best_p = 0;
    double best_l = 1e30;
    for (float p : ps)
        if (find(p, false).final_loss < best_l) best_l = find(p, false).final_loss, best_p = p;
    r.verdicts.push_back({"C38", "p around 0.1 is a good default",
                          best_p == 0.1f ? VerdictKind::Supported
                                         : (best_p <= 0.2f ? VerdictKind::Qualified : VerdictKind::NotSupported),
                          fmt::format("lowest final held-out loss at p={} ({:.3f}; p=0: {:.3f})", best_p, best_l,
                                      w0.final_loss)});
    r.notes.push_back("dropout on the scores: S' = S * keep / (1 - p) before softmax (a dropped score becomes 0, not "
                      "-inf); on the weights: P' = P * keep / (1 - p); the same counter-based mask in both");
    r.notes.push_back("AdamW only: dropout's cost is a noisier gradient, which Adam and SGD see alike; the training set "
                      "is a finite pool, the held-out rows are fresh");
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace

ExperimentInfo experiment_dropout() {
    return {"dropout", {"C38"},
            "attention dropout p in {0, 0.1, 0.2, 0.3, 0.5} on the weights vs on the scores: steps to a held-out "
            "loss and the final held-out loss",
            run_dropout};
}

}  // namespace attn
