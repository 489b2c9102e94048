// Experiment "dropout" (C38): attention dropout p in {0, 0.1, 0.2, 0.3, 0.5} on the
// weights after softmax vs on the scores before it.
//
// Task: "output the token d steps back" (the distance task of attn/train/tasks.hpp, d = 5,
// T = 24, 16 symbols), a task that is nothing but an attention pattern, learned from the
// train split and measured on the held-out split. Model: the lab model
// (attn/experiments/lab_model.hpp), 1 layer, 4 heads x 8, d_model 32, learned positions, no
// MLP; AdamW. Measured per cell, over the seeds: steps until the held-out loss first
// reaches 0.1 nats, the final held-out loss and accuracy, the final training loss.
#include <chrono>

#include <fmt/format.h>

#include "attn/core/rng.hpp"
#include "exp_common2.hpp"

namespace attn {
namespace {

using namespace exp2;

ExperimentResult run_dropout(const ExperimentConfig& cfg, const ExperimentProgress& progress) {
    const ExperimentSize sz = cfg.size;
    const int64_t steps = pick(sz, 150, 300, 1000);
    const int64_t T = 24, dist = 5;
    const int64_t eval_every = pick(sz, 10, 10, 25);
    const double target = 0.1;
    std::vector<float> ps = {0.0f, 0.1f, 0.2f, 0.3f, 0.5f};
    if (sz == ExperimentSize::Quick) ps = {0.0f, 0.5f};
    TaskOptions to;
    to.seq = T, to.symbols = 16, to.distance = dist;
    const Task task(TaskKind::Distance, to);

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
            lc.vocab = task.vocab(), lc.max_seq = T, lc.d_model = 32, lc.heads = 4, lc.d_head = 8, lc.layers = 1;
            lc.mlp = false;
            lc.dropout = cell.p, lc.drop_where = cell.where;
            lab::LabModel m(lc);
            m.init(seed);
            LabTrainSpec spec;
            spec.steps = steps, spec.batch = 16, spec.eval_every = eval_every, spec.eval_batches = 4;
            spec.lr = 3e-3, spec.seed = seed, spec.threads = cfg.threads;
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
    ExperimentTable tab;
    tab.title = fmt::format("output the token {} steps back (T={}, 16 symbols): steps to held-out loss {} ({} steps, "
                            "{} seeds, mean; never = the budget)",
                            dist, T, target, steps, cfg.seeds);
    tab.columns = {"p", "where", "steps to target", "reached", "best held-out loss", "final held-out loss",
                   "final held-out acc", "final train loss"};
    struct Row {
        float p;
        bool scores;
        double steps_mean, best, final_loss, acc, loss_sd, steps_sd;
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
        std::vector<double> st_b;
        for (double x : st) st_b.push_back(x >= 0 ? x : double(steps));
        rows.push_back({cell.p, scores, ms, mean_of(best), mean_of(fin), mean_of(acc), sd_of(fin), sd_of(st_b)});
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
    // a difference counts only when it exceeds the larger seed standard deviation of the two cells
    int worse = 0, better = 0, cmp = 0;
    std::string fig1;
    for (float p : ps) {
        if (p == 0.0f) continue;
        const Row& w = find(p, false);
        const Row& s = find(p, true);
        ++cmp;
        const double tol_l = std::max(w.loss_sd, s.loss_sd), tol_s = std::max(w.steps_sd, s.steps_sd);
        const bool s_worse = s.final_loss - w.final_loss > tol_l || s.steps_mean - w.steps_mean > tol_s;
        const bool s_better = w.final_loss - s.final_loss > tol_l || w.steps_mean - s.steps_mean > tol_s;
        worse += s_worse && !s_better;
        better += s_better && !s_worse;
        fig1 += fmt::format("{}p={}: steps {:.0f} vs {:.0f} (sd {:.0f}), final loss {:.2e} vs {:.2e} (sd {:.1e})",
                            fig1.empty() ? "" : "; ", p, w.steps_mean, s.steps_mean, tol_s, w.final_loss,
                            s.final_loss, tol_l);
    }
    r.verdicts.push_back({"C38", "dropout belongs on the weights after softmax, not on the scores",
                          worse == cmp ? VerdictKind::Supported
                                       : (worse > better ? VerdictKind::Qualified : VerdictKind::NotSupported),
                          fmt::format("scores worse beyond seed noise at {}/{} p, better at {}/{} (weights vs scores) "
                                      "{}",
                                      worse, cmp, better, cmp, fig1)});
    // Verdict 2: p > 0.2 slows convergence (weights), compared with p <= 0.2.
    const Row& w0 = find(0.0f, false);
    const Row& whi = find(ps.back(), false);
    const double sd2 = std::max(whi.steps_sd, w0.steps_sd);
    const bool slower = whi.steps_mean - w0.steps_mean > sd2;
    std::string fig2;
    for (float p : ps) {
        const Row& w = find(p, false);
        fig2 += fmt::format("{}p={}: {:.0f} steps", fig2.empty() ? "" : ", ", p, w.steps_mean);
    }
    r.verdicts.push_back({"C38", "p > 0.2 slows convergence (dropout on the weights)",
                          slower ? VerdictKind::Supported
                                 : (whi.steps_mean > w0.steps_mean ? VerdictKind::Qualified : VerdictKind::NotSupported),
                          fmt::format("mean steps to held-out loss {:.3f}: {} (seed sd {:.0f} steps{})", target, fig2,
                                      sd2, slower ? "" : ": the difference is within it")});
    // Verdict 3: p ~ 0.1 is the sweet spot: best final held-out loss among the weight cells.
    float best_p = 0;
    double best_l = 1e30;
    for (float p : ps)
        if (find(p, false).final_loss < best_l) best_l = find(p, false).final_loss, best_p = p;
    const Row& w1 = find(0.1f, false);
    const double noise = std::max(w1.loss_sd, w0.loss_sd);
    const bool clear = std::fabs(w1.final_loss - w0.final_loss) > noise;
    r.verdicts.push_back({"C38", "p around 0.1 is a good default",
                          best_p == 0.1f && clear ? VerdictKind::Supported
                                                  : (best_p <= 0.2f ? VerdictKind::Qualified : VerdictKind::NotSupported),
                          fmt::format("lowest final held-out loss at p={} ({:.2e}); p=0.1 vs p=0: {:.2e} vs {:.2e} (seed "
                                      "sd {:.1e}{}), {:+.0f} steps to the target; no finite training set here, so "
                                      "nothing for dropout to regularise",
                                      best_p, best_l, w1.final_loss, w0.final_loss, noise,
                                      clear ? "" : ": within noise", w1.steps_mean - w0.steps_mean)});
    r.notes.push_back("dropout on the scores: S' = S * keep / (1 - p) before softmax (a dropped score becomes 0, not "
                      "-inf); on the weights: P' = P * keep / (1 - p); the same counter-based mask in both");
    r.notes.push_back("AdamW only; training batches are fresh draws (no finite training set to overfit), so this "
                      "measures dropout's cost, not its regularisation");
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
