// Experiment "distance" (C1, C4): "output the token d steps back" (the distance task of
// attn/train/tasks.hpp, T = d + 16, 8 symbols, every position t >= d scored) learned by a
// small Elman RNN (attn/nn/elman.hpp, BPTT) and by one attention layer (the lab
// model, 1 layer, 4 heads, learned positions, no MLP), for growing d: held-out accuracy
// against d. Then C4's other half (attn/experiments/positions.hpp): attention with no
// positional information fails an order-dependent task and succeeds with positions.
#include "attn/experiments/positions.hpp"

#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn/core/rng.hpp"
#include "attn/nn/elman.hpp"
#include "attn/train/loop.hpp"
#include "lab_training.hpp"

namespace attn {

namespace {
using namespace lab;

double eval_rnn(ElmanRnn& m, const Task& task, int64_t B, uint64_t seed, int64_t batches) {
    int64_t c = 0, n = 0;
    for (int64_t i = 0; i < batches; ++i) {
        const TaskBatch b = task.batch(B, seed, DataSplit::Eval, i);
        const RnnStats s = m.evaluate(b.tokens.data(), b.targets.data(), b.B, b.T);
        c += s.correct, n += s.counted;
    }
    return n ? double(c) / double(n) : 0.0;
}

// The library's loop (attn/train/loop.hpp) on the RNN: AdamW lr 3e-3 without weight decay, clip 1;
// the held-out accuracy before the first step, every eval_every steps and after the last.
std::vector<double> train_rnn(ElmanRnn& m, const Task& task, int64_t steps, int64_t B, uint64_t seed,
                              int64_t eval_every, const std::function<void(int64_t)>& prog) {
    TrainConfig cfg;
    cfg.steps = steps, cfg.eval_every = eval_every;
    cfg.lr = 3e-3, cfg.weight_decay = 0.0, cfg.clip = 1.0;
    std::vector<double> acc;
    TrainLoopHooks h;
    h.stop_on_divergence = false;  // as the lab's runs: the curve records what follows
    h.step = [&](int64_t st) {
        const TaskBatch b = task.batch(B, seed, DataSplit::Train, st);
        const RnnStats r = m.step(b.tokens.data(), b.targets.data(), b.B, b.T);
        return StepStats{r.loss, r.correct, r.counted};
    };
    if (prog) h.after_update = [&](const TrainLoopState& st) { prog(st.steps_done); };
    h.evaluate = [&](const TrainLoopState&) {
        acc.push_back(eval_rnn(m, task, B, seed, 2));
        return false;
    };
    std::vector<Param> params = m.params();
    run_train_loop(params, cfg, h);
    return acc;
}

// Largest |a - b| over two logits tensors with row b of `perm` rows mapped.
double perm_diff(TrainableStack& m, const std::vector<int32_t>& tok, int64_t T, uint64_t seed) {
    std::vector<int64_t> perm(static_cast<size_t>(T));
    for (int64_t i = 0; i < T; ++i) perm[static_cast<size_t>(i)] = i;
    Rng r(seed, 0x9e7);
    for (int64_t i = T - 1; i > 0; --i)
        std::swap(perm[static_cast<size_t>(i)], perm[r.next_u64() % uint64_t(i + 1)]);
    std::vector<int32_t> ptok(static_cast<size_t>(T)), tgt(static_cast<size_t>(T), -1);
    for (int64_t i = 0; i < T; ++i)
        ptok[static_cast<size_t>(i)] = tok[static_cast<size_t>(perm[static_cast<size_t>(i)])];
    // every row's output through the weights P (1 layer, no MLP): compare the attention outputs
    // via the logits of a direct forward: use evaluate's attention weights and a second model pass
    m.evaluate(tok.data(), tgt.data(), 1, T, 1);
    const std::vector<float> Pa = m.attention_weights()[0].data;
    m.evaluate(ptok.data(), tgt.data(), 1, T, 1);
    const std::vector<float> Pb = m.attention_weights()[0].data;
    const int64_t H = m.config().heads;
    double mx = 0;
    // P(perm x)[i, j] must equal P(x)[perm i, perm j]
    for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j < T; ++j) {
                const float a = Pb[static_cast<size_t>((h * T + i) * T + j)];
                const float b = Pa[static_cast<size_t>((h * T + perm[static_cast<size_t>(i)]) * T +
                                                          perm[static_cast<size_t>(j)])];
                mx = std::max(mx, double(std::fabs(a - b)));
            }
    return mx;
}

}  // namespace

PositionsResult run_positions(ExperimentSize sz, int seeds, uint64_t seed0, int threads,
                              const ExperimentProgress& progress) {
    PositionsResult res;
    const int64_t n = 6;
    res.seq = 2 * n + 1, res.symbols = 8, res.steps = pick(sz, 150, 200, 1000);
    res.chance = 1.0 / double(res.symbols);
    TaskOptions to;
    to.seq = res.seq, to.symbols = res.symbols, to.causal = false;
    const Task task(TaskKind::Reverse, to);
    // equivariance, measured on untrained encoders (one layer, no MLP)
    {
        ModelConfig lc;
        lc.vocab = task.vocab(), lc.max_seq = res.seq, lc.d_model = 32, lc.heads = 2, lc.d_k = 16, lc.layers = 1;
        lc.causal = false, lc.mlp = false, lc.pos = PosKind::None;
        TrainableStack m0 = experiment_model(lc, seed0);
        lc.pos = PosKind::Learned;
        TrainableStack m1 = experiment_model(lc, seed0);
        for (float& x : m1.params()[1].value->data) x *= 50.0f;  // positions large enough to matter at init
        const TaskBatch b = task.batch(1, seed0, DataSplit::Eval, 0);
        res.equivariance_max_diff = perm_diff(m0, b.tokens, res.seq, seed0);
        res.equivariance_with_pos = perm_diff(m1, b.tokens, res.seq, seed0);
    }
    // the equivariant ceiling on the evaluation rows of every seed (2 batches of 32, as evaluated)
    {
        double sum = 0;
        int64_t rows = 0;
        for (int s = 0; s < seeds; ++s)
            for (int64_t i = 0; i < 2; ++i) {
                const TaskBatch b = task.batch(32, seed0 + uint64_t(s), DataSplit::Eval, i);
                for (int64_t r = 0; r < b.B; ++r) {
                    std::vector<int> count(static_cast<size_t>(res.symbols), 0);
                    int best = 0;
                    for (int64_t j = 0; j < n; ++j)
                        best = std::max(best, ++count[static_cast<size_t>(b.tokens[static_cast<size_t>(r * b.T + j)])]);
                    sum += double(best) / double(n), ++rows;
                }
            }
        res.equivariant_ceiling = sum / double(rows);
    }
    int done = 0;
    const int total = 3 * seeds;
    for (PosKind pos : {PosKind::None, PosKind::Learned, PosKind::Sinusoidal}) {
        PositionsRun run;
        run.pos = pos;
        std::vector<std::vector<double>> curves;
        for (int s = 0; s < seeds; ++s) {
            const uint64_t seed = seed0 + uint64_t(s);
            ModelConfig lc;
            lc.vocab = task.vocab(), lc.max_seq = res.seq, lc.d_model = 32, lc.heads = 4, lc.d_k = 8, lc.layers = 2;
            lc.causal = false, lc.pos = pos;
            TrainableStack m = experiment_model(lc, seed);
            if (pos == PosKind::Learned)
                for (float& x : m.params()[1].value->data)
                    x *= 10.0f;  // N(0, 0.2^2): comparable to the token embeddings' role
            LabTrainSpec spec;
            spec.steps = res.steps, spec.batch = 32, spec.eval_every = 25, spec.eval_batches = 2;
            spec.lr = 3e-3, spec.seed = seed, spec.threads = threads;
            const LabCurve c = train_lab(m, task, spec, [&](int64_t st) {
                if (st % 50 == 0 && progress)
                    progress(fmt::format("positions: run {}/{}, {}, seed {}, step {}", done + 1, total,
                                         pos_kind_name(pos), seed, st));
            });
            ++done;
            run.final_acc.push_back(c.final_acc());
            curves.push_back(c.eval_acc);
            run.curve_step = c.step;
        }
        run.curve_acc = mean_curve(curves);
        res.runs.push_back(run);
    }
    return res;
}

namespace {

// C4, positions: the encoder on reverse without positions, with learned and with sinusoidal
// ones (run_positions), its table, curves and verdict added to r.
void add_positions(ExperimentResult& r, const ExperimentConfig& cfg, const ExperimentProgress& progress) {
    const ExperimentSize sz = cfg.size;
    const PositionsResult pr = run_positions(sz, cfg.seeds, cfg.seed, cfg.threads, progress);
    ExperimentTable pt;
    pt.title = fmt::format("encoder, reverse {} symbols (T = {}, chance {:.3f}), {} steps: held-out accuracy at the "
                           "[MASK] positions",
                           (pr.seq - 1) / 2, pr.seq, pr.chance, pr.steps);
    pt.title += fmt::format("; an equivariant model can reach at most {:.3f}", pr.equivariant_ceiling);
    pt.columns = {"positions", "mean acc", "sd", "min", "max"};
    for (const PositionsRun& run : pr.runs) {
        pt.rows.push_back({pos_kind_name(run.pos), mean(run.final_acc), sample_std(run.final_acc),
                           *std::min_element(run.final_acc.begin(), run.final_acc.end()),
                           *std::max_element(run.final_acc.begin(), run.final_acc.end())});
        r.curves.push_back({"reverse, encoder: held-out accuracy", pos_kind_name(run.pos), "step", run.curve_step,
                            run.curve_acc});
    }
    r.tables.push_back(pt);
    const double none = mean(pr.runs[0].final_acc), learned = mean(pr.runs[1].final_acc),
                 sinus = mean(pr.runs[2].final_acc);
    r.verdicts.push_back(
        {"C4", "attention alone is permutation-equivariant: without positions it cannot learn an order-dependent task",
         pr.equivariance_max_diff < 1e-5 && none <= pr.equivariant_ceiling + 1e-9 && std::max(learned, sinus) > 0.8
             ? VerdictKind::Supported
             : VerdictKind::Qualified,
         fmt::format("permuting the input permutes the weights (max diff {:.1e}; with learned positions {:.2g}); "
                     "reverse accuracy: none {:.3f} (the best an equivariant model can do here: {:.3f}), learned "
                     "{:.3f}, sinusoidal {:.3f} (chance {:.3f})",
                     pr.equivariance_max_diff, pr.equivariance_with_pos, none, pr.equivariant_ceiling, learned, sinus,
                     pr.chance)});
}

ExperimentResult run_distance(const ExperimentConfig& cfg, const ExperimentProgress& progress) {
    const ExperimentSize sz = cfg.size;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<int64_t> ds = {1, 8, 16, 32, 48, 64};
    if (sz == ExperimentSize::Quick) ds = {2, 24};
    if (sz == ExperimentSize::Full) ds = {1, 4, 8, 16, 24, 32, 40, 48, 56, 64};
    const int64_t steps = pick(sz, 150, 200, 1500), B = 32, S = 8, eval_every = 50, hidden = 64;
    ExperimentResult r;
    r.name = "distance";
    ExperimentTable tab;
    tab.title = fmt::format("output the token d steps back (T = d + 16, {} symbols, chance {:.3f}): held-out accuracy "
                            "after {} steps, mean over {} seeds",
                            S, 1.0 / double(S), steps, cfg.seeds);
    tab.columns = {"d", "Elman RNN (64 hidden)", "sd", "attention, 1 layer", "sd"};
    ExperimentCurve crnn{"accuracy against d", "Elman RNN", "d", {}, {}};
    ExperimentCurve catt{"accuracy against d", "attention (1 layer)", "d", {}, {}};
    int done = 0;
    const int total = static_cast<int>(ds.size()) * cfg.seeds * 2;
    std::vector<double> rnn_acc, att_acc;
    for (int64_t d : ds) {
        TaskOptions to;
        to.seq = d + 16, to.symbols = S, to.distance = d;
        const Task task(TaskKind::Distance, to);
        std::vector<double> ra, aa;
        for (int s = 0; s < cfg.seeds; ++s) {
            const uint64_t seed = cfg.seed + uint64_t(s);
            ElmanRnn rnn(task.vocab(), hidden);
            rnn.init(seed);
            const auto acc = train_rnn(rnn, task, steps, B, seed, eval_every, [&](int64_t st) {
                if (st % 100 == 0 && progress)
                    progress(
                        fmt::format("distance: run {}/{}, RNN, d {}, seed {}, step {}", done + 1, total, d, seed, st));
            });
            ++done;
            ra.push_back(acc.back());
            ModelConfig lc;
            lc.vocab = task.vocab(), lc.max_seq = task.seq(), lc.d_model = 64, lc.heads = 4, lc.d_k = 16;
            lc.layers = 1, lc.mlp = false;
            TrainableStack m = experiment_model(lc, seed);
            LabTrainSpec spec;
            spec.steps = steps, spec.batch = B, spec.eval_every = eval_every, spec.eval_batches = 2;
            spec.lr = 3e-3, spec.seed = seed, spec.threads = cfg.threads;
            const LabCurve c = train_lab(m, task, spec, [&](int64_t st) {
                if (st % 100 == 0 && progress)
                    progress(fmt::format("distance: run {}/{}, attention, d {}, seed {}, step {}", done + 1, total, d,
                                         seed, st));
            });
            ++done;
            aa.push_back(c.final_acc());
        }
        tab.rows.push_back({d, mean(ra), sample_std(ra), mean(aa), sample_std(aa)});
        crnn.x.push_back(double(d)), crnn.y.push_back(mean(ra));
        catt.x.push_back(double(d)), catt.y.push_back(mean(aa));
        rnn_acc.push_back(mean(ra)), att_acc.push_back(mean(aa));
    }
    r.tables.push_back(tab);
    r.curves = {crnn, catt};
    // Where the RNN falls below half-way between chance and perfect.
    const double chance = 1.0 / double(S), mid = 0.5 * (1.0 + chance);
    int64_t knee = -1;
    for (size_t i = 0; i < ds.size(); ++i)
        if (rnn_acc[i] < mid) {
            knee = ds[i];
            break;
        }
    double att_min = 1;
    for (double a : att_acc) att_min = std::min(att_min, a);
    std::string figs;
    for (size_t i = 0; i < ds.size(); ++i)
        figs += fmt::format("{}d={}: RNN {:.2f} / attention {:.2f}", i ? ", " : "", ds[i], rnn_acc[i], att_acc[i]);
    const bool rnn_drops = rnn_acc.back() < rnn_acc.front() - 0.2;
    r.verdicts.push_back(
        {"C1", "an RNN's errors concentrate on far tokens (the source: past ~40 tokens)",
         // the direction (far tokens fade) can be measured; the source's ~40 cannot be compared: it is a
         // sentence length in a text classifier, and this is a copy distance in a small RNN
         rnn_drops ? VerdictKind::Qualified : VerdictKind::NotSupported,
         fmt::format("RNN accuracy first below {:.2f} at d={}{}; {}", mid, knee,
                     knee >= 0 && knee < 32 ? " (much earlier than ~40 at this size and budget)" : "", figs)});
    {
        Verdict& v = r.verdicts.back();
        v.task = "the distance task: at every position, output the token seen d steps back; an RNN (64 hidden units, "
                 "its whole past in one state) and one attention layer train for the same number of steps; the metric "
                 "is held-out accuracy at each distance d";
        v.evidence.columns = {"distance d", "RNN accuracy", "attention accuracy"};
        for (size_t i = 0; i < ds.size(); ++i) v.evidence.rows.push_back({ds[i], rnn_acc[i], att_acc[i]});
        v.plain = knee < 0 ? "the RNN never falls below {} (half-way between chance and perfect) up to d = {} "
                             "(distances measured: {}), and attention's lowest accuracy at any d is {}"
                           : "the RNN falls below {} (half-way between chance and perfect) by d = {} (distances "
                             "measured: {}) while attention's lowest accuracy at any d is {}: far tokens fade in the "
                             "RNN. The source's ~40 is a sentence length in a text classifier, not a copy distance, "
                             "so it is not compared here";
        v.plain_args = {fmt::format("{:.2f}", mid), std::to_string(knee < 0 ? ds.back() : knee),
                        fmt::format("{}", fmt::join(ds, ", ")), fmt::format("{:.2f}", att_min)};
    }
    r.verdicts.push_back({"C4", "attention reaches any token directly, whatever the distance",
                          att_min > 0.9
                              ? VerdictKind::Supported
                              : (att_min > rnn_acc.back() ? VerdictKind::Qualified : VerdictKind::NotSupported),
                          fmt::format("one attention layer: lowest accuracy over d = {:.3f} (at d={}: {:.3f})", att_min,
                                      ds.back(), att_acc.back())});

    add_positions(r, cfg, progress);  // C4, positions
    r.notes.push_back(
        "Elman RNN: tanh, 64 hidden units, full BPTT, AdamW lr 3e-3, clip 1; attention: the Transformer, "
        "1 layer, 4 heads x 16, learned positions, no MLP, the same optimiser; steps are the same for both");
    r.notes.push_back("the RNN's knee depends on its size and the step budget: a bigger or gated (GRU, LSTM) network "
                      "or more steps moves it; attention's cost does not depend on d");
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace

ExperimentInfo experiment_distance() {
    return {"distance", {"C1", "C4"},
            "an Elman RNN (BPTT) vs one attention layer on 'output the token d steps back', d up to 64; attention "
            "with and without positions on an order-dependent task",
            run_distance};
}

}  // namespace attn
