// Lesson 5: why scores are divided by √Dk: the variance of q·k, what
// unscaled scores do to softmax, and the "not below 64" folklore (C10,
// C14-C18). The variance table comes from the library's experiment
// (attn/experiments/variance.hpp), the same code as `attn variance`.
#include <Eigen/Dense>

#include "attn/experiments/variance.hpp"
#include "common.hpp"
#include "attn/experiments/experiment.hpp"

namespace attn::lessons::lesson05 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

void variance_section(LessonContext& ctx);  // below: the C14/C15/C17 table

// The numerical rank of S: its singular values above 1e-3 of the largest (float32 rounding
// of the scores leaves the "zero" ones near 1e-6 of it). The singular values are the square
// roots of the eigenvalues of SᵀS, so the test is λ > 1e-6 λ_max on the symmetric Gram matrix
// (in double its rounding sits near 1e-16 λ_max, far below the threshold). A symmetric
// eigensolver, not an SVD: the same numbers at a third of the compile time of Eigen's BDCSVD.
int64_t numerical_rank(const Eigen::MatrixXd& S) {
    const Eigen::MatrixXd gram = S.transpose() * S;
    const Eigen::VectorXd ev =
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(gram, Eigen::EigenvaluesOnly).eigenvalues();
    const double top = ev.maxCoeff();
    int64_t rank = 0;
    for (Eigen::Index i = 0; i < ev.size(); ++i) rank += ev(i) > 1e-6 * top ? 1 : 0;
    return rank;
}

struct RowSharpness {
    double std = 0, max_weight = 0, norm_entropy = 0, jac = 0;
    double dead = 0;    // fraction of rows with ‖J‖_F < 0.01: they pass (almost) no gradient
    double onehot = 0;  // fraction of rows whose largest weight is above 0.99
    double top = 0;     // a row's largest score (as softmax gets it), averaged over rows
};

// One head of T random queries and keys (entries N(0, 1)) at width Dk.
RowSharpness sharpness(int64_t Dk, int64_t T, bool scaled, uint64_t seed, uint64_t stream,
                       Tensor* weights_out = nullptr, LessonContext* show = nullptr) {
    Rng rng(seed, stream);
    const Tensor q = randn({1, 1, T, Dk}, rng), k = randn({1, 1, T, Dk}, rng);  // [1, 1, T, Dk]
    AttentionRecord rec;
    attention_reference(q, k, k, Mask::none(), opts_scale(Scale{scaled ? ScaleKind::InvSqrtDk : ScaleKind::None, 1.0f}),
                        &rec);
    if (show) {
        show->shape(fmt::format("q, k (Dk = {})", Dk), q);
        show->shape("weights", rec.weights);
    }
    RowSharpness r;
    double m = 0, m2 = 0;
    for (float s : rec.scores_scaled.data) m += s, m2 += double(s) * s;
    const double n = double(rec.scores_scaled.numel());
    r.std = std::sqrt(std::max(0.0, (m2 - m * m / n) / (n - 1)));
    const auto hs = head_stats(rec.weights, Mask::none());
    r.max_weight = hs[0].mean_max_weight;
    r.norm_entropy = hs[0].mean_normalized_entropy;
    for (int64_t i = 0; i < T; ++i) {
        const double j = softmax_jacobian_norm(rec.weights.ptr() + i * T, T);
        r.jac += j / double(T);
        r.dead += j < 0.01 ? 1.0 / double(T) : 0.0;
        r.onehot += *std::max_element(rec.weights.ptr() + i * T, rec.weights.ptr() + (i + 1) * T) > 0.99f
                        ? 1.0 / double(T)
                        : 0.0;
        r.top += *std::max_element(rec.scores_scaled.ptr() + i * T, rec.scores_scaled.ptr() + (i + 1) * T) / double(T);
    }
    if (weights_out) *weights_out = rec.weights;
    return r;
}

void spread_grows_like_sqrt_dk(LessonContext& ctx) {
    ctx.section("The spread of q·k grows like √Dk");
    {  // the draws of the table's Dk = 256 row below (run_variance draws each Dk from a stream of its own)
        VarianceConfig c256;
        c256.d_k = {256};
        c256.samples = 64 * 2048;
        c256.keys = 64;
        c256.seed = ctx.seed();
        for (const auto& r : run_variance(c256))
            if (!r.scaled)
                ctx.predict("std_qk_256", "q and k have 256 entries each, every one drawn from N(0, 1). What is the "
                            "standard deviation of q·k (before any scaling)?", r.std);
    }
    ctx.para(
        ctx.f("A score is q·k = q₁k₁ + … + q_Dk k_Dk. Suppose the entries are independent with mean 0 "
              "and variance 1 (roughly what a well-initialised layer produces). Each product qᵢkᵢ then has "
              "mean 0 and variance 1, and a sum of Dk independent terms has variance Dk. So the typical size "
              "of a score, its standard deviation, is √Dk: {:g} for Dk = 1, {:g} for Dk = 64, about {:.1f} for "
              "Dk = 512. Dividing by √Dk brings it back to 1, whatever Dk.",
              std::sqrt(1.0), std::sqrt(64.0), std::sqrt(512.0)));
    variance_section(ctx);
}

// The first 12 queries against the keys that matter to them, unscaled and scaled.
void top_keys_heatmaps(LessonContext& ctx, const Tensor& w_raw, const Tensor& w_scaled) {
    // the first 12 queries, and the keys that matter to them: each row's largest
    // unscaled weight, then (to fill 12 columns) the keys with the most weight
    const int64_t nq = 12, nk = 12;
    std::vector<int64_t> cols;
    for (int64_t i = 0; i < nq; ++i) {
        int64_t best_j = 0;
        for (int64_t j = 1; j < 64; ++j)
            if (w_raw.at({0, 0, i, j}) > w_raw.at({0, 0, i, best_j})) best_j = j;
        if (std::find(cols.begin(), cols.end(), best_j) == cols.end()) cols.push_back(best_j);
    }
    const size_t argmax_cols = cols.size();
    std::vector<std::pair<double, int64_t>> mass;
    for (int64_t j = 0; j < 64; ++j) {
        double m = 0;
        for (int64_t i = 0; i < nq; ++i) m += w_raw.at({0, 0, i, j});
        mass.emplace_back(-m, j);
    }
    std::sort(mass.begin(), mass.end());
    for (const auto& mj : mass)
        if (static_cast<int64_t>(cols.size()) < nk && std::find(cols.begin(), cols.end(), mj.second) == cols.end())
            cols.push_back(mj.second);
    std::sort(cols.begin(), cols.end());
    std::vector<float> panel_raw, panel_sc;
    double shown_raw = 0;
    for (int64_t i = 0; i < nq; ++i)
        for (int64_t j : cols) {
            panel_raw.push_back(w_raw.at({0, 0, i, j}));
            panel_sc.push_back(w_scaled.at({0, 0, i, j}));
            shown_raw += w_raw.at({0, 0, i, j}) / double(nq);
        }
    std::vector<std::string> klabels;
    for (int64_t j : cols) klabels.push_back(ctx.f("k{}", j));
    ctx.para(ctx.f("The heatmaps show the first {} queries against the {} keys that matter to them: the key "
                         "each row weights most ({} distinct keys), then the keys with the most weight. These "
                         "{} of the 64 columns hold {:.0f}% of the unscaled rows' weight.",
                         nq, cols.size(), argmax_cols, cols.size(), 100 * shown_raw));
    ctx.figure("heatmap_columns", cols);
    ctx.heatmap("unscaled", make_panel(ctx.f("unscaled, first {} queries, their top keys", nq), panel_raw.data(), nq,
                                       static_cast<int64_t>(cols.size()), index_labels(nq, "q"), klabels));
    ctx.heatmap("scaled", make_panel("divided by √Dk, same queries and keys", panel_sc.data(), nq,
                                     static_cast<int64_t>(cols.size()), index_labels(nq, "q"), klabels));
}

// Returns the unscaled head's sharpness at Dk = 64, which the next section quotes.
RowSharpness unscaled_scores(LessonContext& ctx) {
    ctx.section("What unscaled scores do to softmax");
    const double sd64 = std::sqrt(64.0), three = 3 * sd64;  // the std at Dk = 64, and 3 of them
    // the share of a normal variable beyond 3σ (both sides), and above +3σ
    const double tail2 = std::erfc(3.0 / std::sqrt(2.0)), tail1 = tail2 / 2;
    ctx.para(ctx.f("A spread of {:g} puts the source's range of ±{:g} at three standard deviations: only {:.2f}% "
                   "of scores fall outside it ({:.2f}% above +{:g}). What matters to softmax is how far a row's "
                   "largest score stands above the others, and softmax exponentiates: exp({:g}) / exp(0) is",
                   sd64, three, 100 * tail2, 100 * tail1, three, three));
    const double e24 = std::exp(three);
    ctx.code(fmt::format("exp({:g}) / exp(0) = {:.3e}", three, e24));
    ctx.figure("exp24", e24);
    ctx.identity(e24 > 1e10, "C16",
              ctx.f("exp({:g}) = {:.2e}: one such score outweighs {:.1e} scores of 0 put together", three, e24, e24));
    ctx.para("Here is one head with T = 64 random queries and keys at Dk = 64, scores used as they are and "
             "divided by √Dk:");
    Tensor w_raw, w_scaled;
    const RowSharpness raw = sharpness(64, 64, false, ctx.seed(), 50, &w_raw, &ctx);
    const RowSharpness sc = sharpness(64, 64, true, ctx.seed(), 50, &w_scaled);
    ctx.predict("max_weight_unscaled", "without the division by √Dk, at Dk = 64 and T = 64: what is a row's largest "
                "weight, on average over the rows (between 1/64 and 1)?", raw.max_weight, Closeness::absolute(0.05));
    Table t;
    t.columns = {"Dk = 64, T = 64", "score std", "top score", "max weight", "entropy", "rows ‖J‖_F < 0.01"};
    t.formats = {"", "{:.3f}", "{:.2f}", "{:.3f}", "{:.3f}", "{:.1f}%"};
    t.add({"q·k (unscaled)", raw.std, raw.top, raw.max_weight, raw.norm_entropy, 100 * raw.dead});
    t.add({"q·k / √Dk", sc.std, sc.top, sc.max_weight, sc.norm_entropy, 100 * sc.dead});
    ctx.table("saturation64", t);
    ctx.para("top score: each row's largest score, averaged over rows. max weight: each row's largest weight, "
             "averaged over rows. entropy: the rows' mean entropy divided by log T, so 1 = uniform and 0 = one-hot.");
    ctx.figure("unscaled_mean_top_score", raw.top);
    ctx.figure("unscaled_mean_max_weight", raw.max_weight);
    ctx.figure("scaled_mean_max_weight", sc.max_weight);
    ctx.check(raw.max_weight > 0.6 && sc.max_weight < 0.2, "C16",
              ctx.f("unscaled, a row puts {:.0f}% of its weight on one key on average; scaled, {:.0f}%",
                          100 * raw.max_weight, 100 * sc.max_weight));
    ctx.check(raw.dead > 0.05 && sc.dead < 0.01, "C13,C16",
              ctx.f("{:.1f}% of unscaled rows are saturated so far that softmax's Jacobian is below 0.01 "
                          "(a two-way tie has 0.5); {:.1f}% of scaled rows", 100 * raw.dead, 100 * sc.dead));
    top_keys_heatmaps(ctx, w_raw, w_scaled);
    return raw;
}

void weights_near_0_or_1(LessonContext& ctx, const RowSharpness& raw) {
    ctx.section("\"Weights all near 0 or 1\"");
    ctx.para("The source reports that a model trained without the scaling barely learned and that its weights "
             "were all close to 0 or 1. attn cannot repeat the training here, but it can measure the second half at "
             "initialisation. Counting single weights below 0.01 or above 0.99 would mislead: in a row of 64 "
             "soft weights most are below 0.01 anyway (a uniform row has 1/64 ≈ 0.016 each), so that count is "
             "high even for healthy rows. The measure that means \"0 or 1\" is the share of one-hot rows, whose "
             "largest weight is above 0.99 (all others then share less than 0.01):");
    Table x;
    x.columns = {"Dk", "one-hot rows, unscaled", "one-hot rows, ÷√Dk", "max weight, unscaled"};
    x.formats = {"", "{:.1f}%", "{:.1f}%", "{:.3f}"};
    std::vector<double> oh_raw, oh_sc;
    for (int64_t dk : {16, 64, 512}) {
        const RowSharpness a = sharpness(dk, 64, false, ctx.seed(), 51 + static_cast<uint64_t>(dk));
        const RowSharpness b = sharpness(dk, 64, true, ctx.seed(), 51 + static_cast<uint64_t>(dk));
        oh_raw.push_back(a.onehot);
        oh_sc.push_back(b.onehot);
        x.add({dk, 100 * a.onehot, 100 * b.onehot, a.max_weight});
    }
    ctx.table("onehot_rows", x);
    ctx.figure("onehot_rows_unscaled", oh_raw);
    ctx.figure("onehot_rows_scaled", oh_sc);
    ctx.qualified("C16", ctx.f("at Dk = 64, the claim's setting, unscaled rows are sharp (largest weight {:.0f}% on "
                               "average) but most are not one-hot: {:.1f}% of rows put more than 0.99 on one key, "
                               "against {:.1f}% at Dk = 512. A row's top score is about {:.0f}, not 24.",
                               100 * raw.max_weight, 100 * oh_raw[1], 100 * oh_raw.back(), raw.top));
    ctx.check(oh_raw.back() > 0.25 && oh_raw.back() > oh_raw.front() && oh_sc.back() < 0.05, "C18",
              ctx.f("at Dk = 512, {:.1f}% of unscaled rows are one-hot (Dk = 16: {:.1f}%); with the scaling, "
                          "{:.1f}%",
                          100 * oh_raw.back(), 100 * oh_raw.front(), 100 * oh_sc.back()));
    ctx.experiment_claim(experiment_scale(), "C18",
                         "\"almost untrainable\" is a training outcome (`attn experiment scale` trains it); "
                         "the saturation above (and lesson 4's vanishing Jacobian) is the mechanism the source "
                         "points to.");
}

void floor_at_64(LessonContext& ctx) {
    ctx.section("Is there a floor at Dk = 64?");
    ctx.para("The source also advises that for long sequences Dk may be lowered to save compute, \"but not "
             "below 64\". What changes with Dk once scores are scaled? Below: one head, T = 256, for Dk from "
             "16 to 128. The softmax statistics are the same at every width; what does change is the cost "
             "and the rank of the score matrix Q·Kᵀ, which can never exceed Dk.");
    Table f;
    f.columns = {"Dk", "score std", "max weight", "entropy", "rank of Q·Kᵀ", "rank of weights", "QKᵀ FLOPs"};
    f.formats = {"", "{:.3f}", "{:.3f}", "{:.3f}"};
    std::vector<double> ents;
    std::vector<int64_t> ranks, wranks;
    const int64_t T = 256;
    for (int64_t dk : {16, 32, 64, 128}) {
        Rng rng(ctx.seed(), 70 + static_cast<uint64_t>(dk));
        const Tensor q = randn({1, 1, T, dk}, rng), k = randn({1, 1, T, dk}, rng);  // [1, 1, T, Dk]
        AttentionRecord rec;
        attention_reference(q, k, k, Mask::none(), AttentionOptions{}, &rec);
        Eigen::MatrixXd S(T, T);
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j < T; ++j) S(i, j) = rec.scores_raw.at({0, 0, i, j});
        const int64_t rank = numerical_rank(S);
        // the weights softmax(Q·Kᵀ/√Dk), same threshold
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j < T; ++j) S(i, j) = rec.weights.at({0, 0, i, j});
        wranks.push_back(numerical_rank(S));
        const auto hs = head_stats(rec.weights, Mask::none());
        double m = 0, m2 = 0;
        for (float s : rec.scores_scaled.data) m += s, m2 += double(s) * s;
        const double n = double(rec.scores_scaled.numel());
        const double sd = std::sqrt((m2 - m * m / n) / (n - 1));
        const AttentionCost c = attention_cost(1, T, dk, 1, dk, dk);
        f.add({dk, sd, hs[0].mean_max_weight, hs[0].mean_normalized_entropy, rank, wranks.back(),
               ctx.f("{:.3g}", c.flops_scores)});
        ents.push_back(hs[0].mean_normalized_entropy);
        ranks.push_back(rank);
    }
    ctx.table("floor64", f);
    ctx.figure("entropy_by_dk_16_32_64_128", ents);
    ctx.figure("rank_by_dk_16_32_64_128", ranks);
    const double spread = *std::max_element(ents.begin(), ents.end()) - *std::min_element(ents.begin(), ents.end());
    ctx.identity(
        ranks[0] == 16 && ranks[1] == 32 && ranks[2] == 64 && ranks[3] == 128, "C10",
        ctx.f("the {} × {} score matrix has rank Dk: {}, {}, {}, {}", T, T, ranks[0], ranks[1], ranks[2], ranks[3]));
    ctx.figure("weights_rank_by_dk_16_32_64_128", wranks);
    ctx.para(ctx.f("Ranks count singular values above 1e-3 of the largest. The weights are another matter: "
                         "softmax exponentiates each score separately, and an entrywise exp of a rank-Dk matrix is "
                         "in general of full rank, so softmax(Q·Kᵀ/√Dk) has rank {} at Dk = 16 (of {}) even though "
                         "Q·Kᵀ has rank 16. The rank limit is on the scores a head can express, not on its weights.",
                         wranks[0], T));
    ctx.check(wranks[0] > 2 * ranks[0], "C10",
              ctx.f("at Dk = 16 the weights have rank {}, above the scores' {}: exp breaks the low rank",
                          wranks[0], ranks[0]));
    ctx.qualified("C10", ctx.f("the direction holds: a smaller Dk lowers the rank of the scores (above) and with "
                                     "it what a head can express, and it saves compute. The floor at 64 does not "
                                     "follow from anything measurable here: scaled, the softmax looks the same at "
                                     "Dk = 16, 32, 64, 128 (normalised entropy varies by {:.3f}), and where the rank "
                                     "limit starts to cost depends on the model and the task (`attn experiment "
                                     "dk-floor` trains heads of several widths on one task).",
                                     spread));
    ctx.experiment_claim(experiment_dk_floor(), "C10",
                         "attn experiment dk-floor reached no verdict: it trains one head's lookup at several d_k.");
}

void run(LessonContext& ctx) {
    spread_grows_like_sqrt_dk(ctx);
    const RowSharpness raw = unscaled_scores(ctx);
    weights_near_0_or_1(ctx, raw);
    floor_at_64(ctx);
    ctx.exercise("scores");
}

void variance_section(LessonContext& ctx) {
    // the experiment behind `attn variance`: samples dot products of random
    // q, k (entries N(0, 1)) per Dk, and softmax rows of T = 64 of them
    VarianceConfig cfg;
    cfg.d_k = {1, 16, 64, 256, 512};
    cfg.samples = 64 * 2048;
    cfg.keys = 64;
    cfg.seed = ctx.seed();
    const auto rows = run_variance(cfg);
    ctx.para(ctx.f("The experiment: for each Dk, {} dot products of random q and k with N(0, 1) entries "
                         "(attn::run_variance, the code behind `attn variance`). Measured next to theory:",
                         cfg.samples));
    ctx.shape("q, k (one pair)", Shape{cfg.d_k.back()}, "[Dk], drawn fresh for each sample");
    ctx.shape("scores per Dk", Shape{cfg.samples}, "one q·k per sample");
    Table t;
    t.columns = {"Dk", "std of q·k", "√Dk", "ratio", "typical range ±3σ", "observed 0.1%..99.9%", "std ÷√Dk"};
    t.formats = {"", "{:.3f}", "{:.3f}", "{:.4f}", "", "", "{:.4f}"};
    std::vector<double> stds, theory, scaled;
    bool c14 = true, c15 = true, c17 = true;
    double worst_tol = 0;
    for (const auto& un : rows) {
        if (un.scaled) continue;
        const VarianceRow* sc = nullptr;
        for (const auto& r : rows)
            if (r.scaled && r.d_k == un.d_k) sc = &r;
        if (sc == nullptr) continue;
        const double root = std::sqrt(double(un.d_k));
        // 5 standard errors of a sample std: se(s)/s = sqrt((kurtosis - 1) / (4 n))
        const double tol = 5 * std::sqrt(std::max(0.0, un.kurtosis - 1) / (4.0 * double(un.samples)));
        worst_tol = std::max(worst_tol, tol);
        c14 = c14 && std::fabs(un.std / root - 1) < tol;
        c15 = c15 && std::fabs(un.range_hi - 3 * root) < 3 * tol * root + std::fabs(un.mean) &&
              std::fabs(un.range_lo + 3 * root) < 3 * tol * root + std::fabs(un.mean);
        c17 = c17 && std::fabs(sc->std - 1) < tol;
        stds.push_back(un.std);
        theory.push_back(root);
        scaled.push_back(sc->std);
        t.add({un.d_k, un.std, root, un.std / root, ctx.f("[{:.1f}, {:.1f}]", un.range_lo, un.range_hi),
               ctx.f("[{:.1f}, {:.1f}]", un.p001, un.p999), sc->std});
    }
    ctx.table("variance", t);
    ctx.figure("std_measured", stds);
    ctx.figure("std_theory", theory);
    ctx.figure("std_scaled", scaled);
    ctx.check(c14 && stds.size() == cfg.d_k.size(), "C14",
              ctx.f("the std of q·k is √Dk at every Dk, within 5 standard errors of the estimate (≤ {:.2f}%)",
                          100 * worst_tol));
    ctx.identity(c15 && stds.size() == cfg.d_k.size(), "C15",
              ctx.f("typical ranges ±3σ: [{:.1f}, {:.1f}] at Dk = {}, up to [{:.1f}, {:.1f}] at Dk = {}",
                          -3 * stds.front(), 3 * stds.front(), cfg.d_k.front(), -3 * stds.back(), 3 * stds.back(),
                          cfg.d_k.back()));
    ctx.check(c17 && scaled.size() == cfg.d_k.size(), "C17",
              ctx.f("divided by √Dk the std is 1 at every Dk ({:.3f} .. {:.3f})",
                    *std::min_element(scaled.begin(), scaled.end()), *std::max_element(scaled.begin(), scaled.end())));
    ctx.para(ctx.f("The observed extremes are wider than ±3σ at Dk = 1: a product of two normals has heavy "
                         "tails. As Dk grows the sum of many products becomes normal, and ±3σ leaves out only "
                         "{:.2f}% of a normal distribution.",
                         100 * std::erfc(3 / std::sqrt(2.0))));

    Table s;
    s.columns = {"Dk", "max weight", "÷√Dk", "one-hot rows", "÷√Dk", "mean ‖J‖_F", "÷√Dk"};
    s.formats = {"", "{:.3f}", "{:.3f}", "{:.1f}%", "{:.1f}%", "{:.3g}", "{:.3g}"};
    double onehot_512 = 0, onehot_512_scaled = 1;
    for (const auto& un : rows) {
        if (un.scaled) continue;
        for (const auto& sc : rows)
            if (sc.scaled && sc.d_k == un.d_k) {
                s.add({un.d_k, un.mean_max_weight, sc.mean_max_weight, 100 * un.onehot_fraction,
                       100 * sc.onehot_fraction, un.mean_jacobian_norm, sc.mean_jacobian_norm});
                if (un.d_k == cfg.d_k.back()) onehot_512 = un.onehot_fraction, onehot_512_scaled = sc.onehot_fraction;
            }
    }
    ctx.para(ctx.f("The same samples as rows of T = {} scores through softmax (one-hot: max weight above "
                         "0.99):",
                         cfg.keys));
    ctx.table("variance_softmax", s);
    ctx.figure("onehot_fraction_unscaled_dk512", onehot_512);
    ctx.check(onehot_512 > 0.5 && onehot_512_scaled < 0.01, "C16,C17",
              ctx.f("at Dk = {}, {:.1f}% of unscaled rows are one-hot; scaled, {:.1f}%", cfg.d_k.back(),
                          100 * onehot_512, 100 * onehot_512_scaled));
}

}  // namespace

const RegisterLesson reg_sqrt_dk{
    {"why-sqrt-dk",
     "Why divide by √Dk",
     "the variance of q·k grows with Dk; unscaled scores saturate softmax; the 64 folklore",
     {"C10", "C13", "C14", "C15", "C16", "C17", "C18"},
     true,
     run,
     Part::core,
     /*minutes*/ 12}};

}  // namespace attn::lessons::lesson05
