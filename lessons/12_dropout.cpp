// Lesson 12: attention dropout: on the weights after softmax, not on the
// scores; on in training, off in evaluation (C38).
#include <algorithm>

#include "common.hpp"

#include "attn/experiments/experiment.hpp"

namespace attn::lessons::lesson12 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

void training_side(LessonContext& ctx);  // below: the training runs and their verdicts on C38

// The sizes and the dropout probability of the lesson's layer.
constexpr int64_t B = 2, H = 4, T = 64, Dk = 16;
constexpr float p = 0.1f;

// The training-mode run the later sections compare against: its inputs, options, record and
// output, and its row sums (mean, min, max).
struct DroppedRun {
    Tensor q, k, v;  // [B, H, T, Dk]
    AttentionOptions train;
    AttentionRecord rt;
    Tensor out_train;
    double mean = 0, lo = 1e9, hi = -1e9;
};

DroppedRun dropout_on_the_weights(LessonContext& ctx) {
    ctx.section("Dropout on the weights, training mode");
    ctx.para("Attention dropout zeroes a random fraction p of the weights after softmax and multiplies the "
             "survivors by 1/(1−p), so each weight keeps its expected value. A row then no longer sums to "
             "exactly 1, but to 1 on average. Among the keys that survive, the proportions are untouched: "
             "the model still prefers what it preferred, it just cannot always see it.");
    Rng rng = ctx.rng(12);
    DroppedRun d;
    d.q = randn({B, H, T, Dk}, rng), d.k = randn({B, H, T, Dk}, rng), d.v = randn({B, H, T, Dk}, rng);
    const Tensor &q = d.q, &k = d.k, &v = d.v;
    ctx.shape("q, k, v", q, "[B=2, H=4, T=64, Dk=16]");
    AttentionOptions& train = d.train;
    train.dropout = p;
    train.train = true;
    train.seed = mix64(ctx.seed() ^ 0xd120ULL);
    AttentionRecord& rt = d.rt;
    d.out_train = attention_reference(q, k, v, Mask::none(), train, &rt);
    ctx.shape("weights", rt.weights, "softmax, before dropout");
    ctx.shape("weights_dropped", rt.weights_dropped, "dropout(p = 0.1) applied");
    // pass 1: dropped fraction, row sums, and the ratio test on survivors
    int64_t dropped = 0;
    double ratio_err = 0;
    const auto sums = row_sums(rt.weights_dropped);
    for (int64_t i = 0; i < rt.weights.numel(); ++i) {
        const float w = rt.weights.data[static_cast<size_t>(i)], wd = rt.weights_dropped.data[static_cast<size_t>(i)];
        if (wd == 0.0f && w != 0.0f) ++dropped;
        else if (w > 0) ratio_err = std::max(ratio_err, std::fabs(double(wd) / double(w) * (1.0 - p) - 1.0));
    }
    double &mean = d.mean, &lo = d.lo, &hi = d.hi, var = 0;
    for (double s : sums) mean += s, lo = std::min(lo, s), hi = std::max(hi, s);
    mean /= double(sums.size());
    for (double s : sums) var += (s - mean) * (s - mean);
    var /= double(sums.size() - 1);
    const double frac = double(dropped) / double(rt.weights.numel());
    const double se = std::sqrt(var / double(sums.size()));
    ctx.predict("row_sum_max_dropout", "dropout with p = 0.1 on 512 rows of 64 softmax weights each: what is the "
                "largest row sum?", hi, Closeness::absolute(0.05));
    ctx.code(ctx.f("dropped: {} of {} weights ({:.2f}%)\nrow sums over {} rows: mean {:.4f}, min {:.4f}, max {:.4f}",
                   dropped, rt.weights.numel(), 100 * frac, sums.size(), mean, lo, hi));
    ctx.figure("dropped_fraction", frac);
    ctx.figure("row_sum_mean", mean);
    ctx.figure("row_sum_min", lo);
    ctx.figure("row_sum_max", hi);
    const double fse = std::sqrt(p * (1 - p) / double(rt.weights.numel()));
    ctx.check(std::fabs(frac - p) < 4 * fse, "C38",
              ctx.f("the dropped fraction {:.4f} is p = {} within 4 standard errors ({})", frac, p, e2(4 * fse)));
    ctx.check(
        std::fabs(mean - 1) < 4 * se && hi - lo > 0.01, "C38",
        ctx.f("rows sum to 1 on average ({:.4f} ± {}), not each one (range {:.3f} .. {:.3f})", mean, e2(se), lo, hi));
    ctx.identity(ratio_err < 1e-5, "C38",
                 ctx.f("every surviving weight is exactly w/(1−p): proportions among survivors kept (max error {})",
                       e2(ratio_err)));
    return d;
}

void evaluation_mode(LessonContext& ctx, const DroppedRun& d) {
    const Tensor &q = d.q, &k = d.k, &v = d.v, &out_train = d.out_train;
    const AttentionOptions& train = d.train;
    ctx.section("Evaluation mode: dropout off");
    ctx.para("At inference dropout must be off (model.eval() in PyTorch), or the same input gives different "
             "answers each time. With train = false the dropout probability is ignored.");
    AttentionOptions eval = train;
    eval.train = false;
    AttentionRecord re;
    const Tensor out_eval = attention_reference(q, k, v, Mask::none(), eval, &re);
    const Tensor out_plain = attention_reference(q, k, v, Mask::none(), AttentionOptions{});
    const double de = max_abs_diff(out_eval, out_plain), dt = max_abs_diff(out_train, out_plain);
    ctx.figure("eval_vs_no_dropout", de);
    ctx.figure("train_vs_no_dropout", dt);
    ctx.identity(
        de == 0.0 && dt > 1e-3, "C38",
        ctx.f("eval output equals the no-dropout output exactly (diff {}); the training output differs by up to {}", de,
              g3(dt)));
}

void dropout_on_the_scores(LessonContext& ctx, const DroppedRun& d) {
    const AttentionRecord& rt = d.rt;
    const AttentionOptions& train = d.train;
    const double mean = d.mean, lo = d.lo, hi = d.hi;
    ctx.section("Dropout on the scores instead");
    ctx.para("Dropping scores before softmax is a different operation. A dropped score becomes 0, which "
             "for a high-scoring key is a large demotion and for a low-scoring key a promotion, and then the "
             "normaliser changes, so every other weight in the row moves too. We apply the same keep/drop "
             "pattern to the scaled scores and compare the surviving keys' weights with the originals.");
    Tensor sd = rt.scores_scaled;  // [B, H, T, T]
    for (int64_t i = 0; i < sd.numel(); ++i)
        if (dropout_drops(train.seed, static_cast<uint64_t>(i), p)) sd.data[static_cast<size_t>(i)] = 0.0f;
    softmax_rows(sd.ptr(), B * H * T, T);
    ctx.shape("weights (scores dropped)", sd, "softmax(dropout(scores))");
    double rel_scores = 0, rel_weights = 0, mass_moved = 0;
    for (int64_t r = 0; r < B * H * T; ++r) {
        double moved = 0;
        for (int64_t j = 0; j < T; ++j) {
            const auto i = static_cast<size_t>(r * T + j);
            if (dropout_drops(train.seed, i, p)) continue;  // compare survivors only
            const double w = rt.weights.data[i];
            rel_scores = std::max(rel_scores, std::fabs(sd.data[i] - w) / w);
            rel_weights = std::max(rel_weights, std::fabs(rt.weights_dropped.data[i] * (1 - p) - w) / w);
            moved += std::fabs(sd.data[i] - w);
        }
        mass_moved = std::max(mass_moved, moved);
    }
    Table t;
    t.columns = {"dropout on", "max relative change of a survivor", "row sums"};
    t.formats = {"", "{:.3g}"};
    t.add({"weights (after softmax)", rel_weights, ctx.f("mean {:.4f}, {:.3f} .. {:.3f}", mean, lo, hi)});
    t.add({"scores (before softmax)", rel_scores, ctx.f("all 1 (±{})", e2(max_sum_error(sd)))});
    ctx.table("where", t);
    ctx.figure("survivor_change_scores_dropout", rel_scores);
    ctx.figure("survivor_change_weights_dropout", rel_weights);
    ctx.check(rel_scores > 0.1 && rel_weights < 1e-5, "C38",
              ctx.f("dropout on scores changes surviving weights by up to {:.0f}%; on weights, by {} (after 1/(1−p))",
                    100 * rel_scores, e2(rel_weights)));
    ctx.para(ctx.f("The distortion is not small: in the worst row, {:.2f} of the weight mass moved between "
                   "the surviving keys.",
                   mass_moved));
}

void run(LessonContext& ctx) {
    const DroppedRun d = dropout_on_the_weights(ctx);
    evaluation_mode(ctx, d);
    dropout_on_the_scores(ctx, d);
    training_side(ctx);
}

// The training side: `attn experiment dropout` at its quick size on the evidence seeds (the same
// runs whatever --seed, so the verdict is the claim's): AdamW, p = 0 and p = 0.5 on the weights and
// on the scores, and its verdicts on C38, read by the rule of docs/claims.md.
void training_side(LessonContext& ctx) {
    const std::vector<uint64_t>& seeds = evidence_seeds();
    double loss[3] = {0, 0, 0}, train_loss[3] = {0, 0, 0};
    std::vector<std::vector<VerdictKind>> kinds;  // [verdict][seed]
    for (size_t si = 0; si < seeds.size(); ++si) {
        ctx.busy(ctx.f("training the evidence for {}: {}, seed {} of {}", "C38", "attn experiment dropout", si + 1,
                       seeds.size()));
        const ExperimentResult& dr = evidence_run(experiment_dropout(), seeds[si]);
        const auto& dtab = dr.tables[0];  // adamw: p 0 (weights), 0.5 weights, 0.5 scores
        auto cell = [&](size_t row, const char* column) {
            const auto c = std::find(dtab.columns.begin(), dtab.columns.end(), column) - dtab.columns.begin();
            return dtab.rows[row][static_cast<size_t>(c)].get<double>();
        };
        for (size_t r = 0; r < 3; ++r)
            loss[r] += cell(r, "final held-out loss") / double(seeds.size()),
                train_loss[r] += cell(r, "final train loss") / double(seeds.size());
        size_t k = 0;
        for (const Verdict& v : dr.verdicts)
            if (v.claim == "C38") {
                if (kinds.size() <= k) kinds.emplace_back();
                kinds[k++].push_back(v.kind);
            }
    }
    ctx.idle();
    const std::string range = number_ranges(std::vector<int>(seeds.begin(), seeds.end()));
    const char* better = loss[2] < loss[1] ? "the scores" : "the weights";
    ctx.para(ctx.f("Trained live (`attn experiment dropout` at its quick size, seeds {}; the full size runs p = 0, "
                   "0.1, 0.2, 0.3, 0.5 with AdamW and SGD): associative recall learned from a finite set of 256 rows, "
                   "scored on held-out rows. Mean final held-out loss {:.3f} with p = 0, {:.3f} with p = 0.5 on the "
                   "weights and {:.3f} with p = 0.5 on the scores; training loss {:.3f}, {:.3f}, {:.3f} (the gap is "
                   "the memorising dropout works against). At p = 0.5 dropout on {} generalised better here.",
                   range, loss[0], loss[1], loss[2], train_loss[0], train_loss[1], train_loss[2], ctx.tr(better)));
    ctx.figure("dropout_heldout_loss_p0_w05_s05", std::vector<double>{loss[0], loss[1], loss[2]});
    // the training verdicts: each the same on every seed, or the seeds disagree
    const std::vector<std::string> what{"dropout on the weights rather than the scores trains better (AdamW)",
                                        "p above 0.2 slows training (AdamW, p = 0.5 against p = 0)"};
    for (size_t k = 0; k < kinds.size() && k < what.size(); ++k) {
        bool agree = kinds[k].size() == seeds.size();
        for (VerdictKind x : kinds[k]) agree = agree && x == kinds[k].front();
        const std::string said = agree ? ctx.f("{}: {} on all {} training seeds (`attn experiment dropout` reruns it)",
                                               ctx.tr(what[k]), ctx.tr(verdict_name(kinds[k].front())), seeds.size())
                                       : ctx.f(
                                             "{}: the {} training seeds disagree (`attn experiment dropout --seeds 5` "
                                             "trains more)",
                                             ctx.tr(what[k]), seeds.size());
        const VerdictKind kind = agree ? kinds[k].front() : VerdictKind::Inconclusive;
        if (kind == VerdictKind::Supported) ctx.check(true, "C38", said);
        else if (kind == VerdictKind::Qualified) ctx.qualified("C38", said);
        else if (kind == VerdictKind::NotSupported) ctx.not_supported("C38", said);
        else ctx.inconclusive("C38", said);
    }
}

const RegisterLesson reg{{"dropout", "Attention dropout",
                          "on weights after softmax vs on scores; train vs eval; row sums and distortion",
                          {"C38"}, false, run, Part::advanced, /*minutes*/ 3}};

}  // namespace
}  // namespace attn::lessons::lesson12
