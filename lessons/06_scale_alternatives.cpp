// Lesson 6: alternatives to 1/√Dk: a fixed constant, and cosine similarity
// (C19, C20, with C39's L2-normalised Q and K).
#include <limits>

#include "common.hpp"

#include "attn/experiments/experiment.hpp"

namespace attn::lessons::lesson06 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

struct Spread {
    double std = 0, max_abs = 0, norm_entropy = 0, max_weight = 0;
};

// Scores of N random queries against N random keys (entries N(0, 1)) under a scale.
Spread spread(int64_t Dk, const Scale& scale, uint64_t seed, uint64_t stream, LessonContext* show = nullptr) {
    const int64_t N = 128;
    Rng rng(seed, stream);
    const Tensor q = randn({1, 1, N, Dk}, rng), k = randn({1, 1, N, Dk}, rng);  // [1,1,N,Dk]
    AttentionRecord rec;
    attention_reference(q, k, k, Mask::none(), opts_scale(scale), &rec);
    if (show) {
        show->shape(show->f("q, k (Dk={})", Dk), q, "128 random queries; keys alike");
        show->shape("scores", rec.scores_scaled, "128 × 128 per Dk");
    }
    Spread s;
    double m = 0, m2 = 0;
    for (float x : rec.scores_scaled.data)
        m += x, m2 += double(x) * x, s.max_abs = std::max(s.max_abs, double(std::fabs(x)));
    const double n = double(rec.scores_scaled.numel());
    s.std = std::sqrt(std::max(0.0, (m2 - m * m / n) / (n - 1)));
    const auto hs = head_stats(rec.weights, Mask::none());
    s.norm_entropy = hs[0].mean_normalized_entropy;
    s.max_weight = hs[0].mean_max_weight;
    return s;
}

const std::vector<int64_t> kDks{16, 64, 100, 512};  // the widths of the first two sections

void divide_by_a_fixed_constant(LessonContext& ctx) {
    ctx.section("Divide by a fixed constant instead");
    const float constant = 10.0f;  // the source's example: divide by 10
    ctx.para(ctx.f("Lesson 5 divides scores by √Dk because their spread grows like √Dk. A simpler idea is to "
                         "divide by one constant, say {:g}, whatever Dk is. The spread of the scaled scores then still "
                         "grows like √Dk, just {:g} times smaller: the constant is right for exactly one Dk ({:g}² = "
                         "{:g}) and wrong for the rest. Below, 128 random queries against 128 random keys (entries "
                         "N(0, 1)) for each Dk.",
                         constant, constant, constant, constant * constant));
    const std::vector<int64_t>& dks = kDks;
    Table t;
    t.columns = {"Dk", "std ÷√Dk", "std ÷10", "entropy ÷√Dk", "entropy ÷10", "max weight ÷√Dk", "max weight ÷10"};
    t.formats = {"", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}"};
    std::vector<double> std_sqrt, std_const;
    for (size_t i = 0; i < dks.size(); ++i) {
        const Spread a = spread(dks[i], Scale{ScaleKind::InvSqrtDk, 1.0f}, ctx.seed(), 60 + i, &ctx);
        const Spread b = spread(dks[i], Scale{ScaleKind::Constant, 1.0f / constant}, ctx.seed(), 60 + i);
        std_sqrt.push_back(a.std);
        std_const.push_back(b.std);
        t.add({dks[i], a.std, b.std, a.norm_entropy, b.norm_entropy, a.max_weight, b.max_weight});
    }
    ctx.table("fixed_constant", t);
    ctx.para("Entropy is normalised: 1 means uniform over the 128 keys, 0 means one-hot.");
    ctx.figure("dk", dks);
    ctx.figure("std_inv_sqrt_dk", std_sqrt);
    ctx.figure("std_div_10", std_const);
    bool flat = true;
    for (double s : std_sqrt) flat = flat && s > 0.85 && s < 1.15;
    ctx.check(flat, "C17", ctx.f("÷√Dk keeps the spread near 1 at every Dk ({} .. {})",
                                       g3(*std::min_element(std_sqrt.begin(), std_sqrt.end())),
                                       g3(*std::max_element(std_sqrt.begin(), std_sqrt.end()))));
    const double ratio = std_const.back() / std_const.front(),
                 expect = std::sqrt(double(dks.back()) / double(dks.front()));
    ctx.check(std::fabs(ratio / expect - 1) < 0.15, "C20",
              ctx.f("÷10 lets the spread grow {}× from Dk = {} to {} (√({}/{}) = {})", g3(ratio), dks.front(),
                          dks.back(), dks.back(), dks.front(), g3(expect)));
    {
        const int64_t src = 64, small = 16;  // the source's Dk, and the narrower width the experiment also trains
        const double r64 = std::sqrt(double(src)) / 10.0, r16 = std::sqrt(double(small)) / 10.0;
        ctx.para(ctx.f("The source names no Dk for this comparison. Dk = {} is the width of its multi-head "
                       "example (512 = 8 × 64) and of most models: there √Dk = {:g}, so ÷10 gives scores {:g} times "
                       "the size ÷√Dk gives, a small change. At Dk = {} the factor is {:g}, a large one. The verdict "
                       "below trains both widths and is taken at Dk = {}, the width of the source's heads.",
                       src, std::sqrt(double(src)), r64, small, r16, src));
    }
    ctx.experiment_claim(experiment_scale(), "C20",
                         ctx.f("the source says a fixed constant \"trained slightly worse\"; that is a "
                                     "training result (`attn experiment scale` trains it). What the numbers show is "
                                     "why it could: with ÷10 the score spread is {} at Dk = {} (softmax nearly "
                                     "uniform) and {} at Dk = {} (sharper), so the constant suits only one width, "
                                     "while ÷√Dk gives ~1 at all of them.",
                                     g3(std_const.front()), dks.front(), g3(std_const.back()), dks.back()));
}

void cosine_bounded_scores(LessonContext& ctx) {
    const std::vector<int64_t>& dks = kDks;
    ctx.section("Cosine similarity: bounded scores");
    ctx.para("Another fix is to normalise q and k to length 1 before the dot product: the score becomes "
             "cos θ, always in [−1, 1], whatever Dk and whatever the vectors' sizes. (This is also what "
             "\"L2-normalised Q and K\" means in stability recipes.) Bounded has a price: a softmax over "
             "scores in [−1, 1] can never be sharp, so such models divide by a temperature τ, a learned or "
             "tuned constant.");
    Table c;
    c.columns = {"Dk", "max |score| cos", "entropy cos (τ = 1)", "entropy cos/0.1 (τ = 0.1)"};
    c.formats = {"", "{:.4f}", "{:.3f}", "{:.3f}"};
    double worst = 0;
    std::vector<double> ent1;
    for (size_t i = 0; i < dks.size(); ++i) {
        const Spread a = spread(dks[i], Scale{ScaleKind::Cosine, 1.0f}, ctx.seed(), 60 + i);
        const Spread b = spread(dks[i], Scale{ScaleKind::Cosine, 0.1f}, ctx.seed(), 60 + i);
        worst = std::max(worst, a.max_abs);
        ent1.push_back(a.norm_entropy);
        c.add({dks[i], a.max_abs, a.norm_entropy, b.norm_entropy});
    }
    ctx.table("cosine", c);
    ctx.figure("cosine_max_abs_score", worst);
    ctx.identity(worst <= 1.0 + 1e-5, "C19,C39",
                 ctx.f("cosine scores stay within [−1, 1] at every Dk (max |score| = {:.6f})", worst));
    ctx.identity(*std::min_element(ent1.begin(), ent1.end()) > 0.9, "C19",
              ctx.f("with τ = 1 every row is nearly uniform (normalised entropy ≥ {})",
                          g3(*std::min_element(ent1.begin(), ent1.end()))));
}

// Returns the dot-product row's two scores, which the stability recipe's check reuses.
std::vector<float> what_cosine_throws_away(LessonContext& ctx) {
    ctx.section("What cosine throws away");
    ctx.para("Take one query and two keys that point the same way (roughly towards the query), one of length "
             "1 and one of length 4. For "
             "the dot product the long key is the stronger match. For cosine they are the same key. If a "
             "model uses vector length to mark how strong or salient a token is, cosine attention cannot "
             "see it.");
    const int64_t Dk = 16;
    Rng rng = ctx.rng(6);
    const Tensor q = randn({1, 1, 1, Dk}, rng);  // [1,1,1,Dk]
    Tensor dir = randn({1, 1, 1, Dk}, rng);  // a direction near q's, so the score is clearly positive
    for (size_t i = 0; i < dir.data.size(); ++i) dir.data[i] = q.data[i] + 0.5f * dir.data[i];
    double n = 0;
    for (float x : dir.data) n += double(x) * x;
    n = std::sqrt(n);
    std::vector<float> k1(static_cast<size_t>(Dk)), k4(static_cast<size_t>(Dk));
    for (size_t i = 0; i < k1.size(); ++i) k1[i] = static_cast<float>(dir.data[i] / n), k4[i] = 4 * k1[i];
    const Tensor K = rows4({k1, k4});  // [1,1,2,Dk]
    ctx.shape("q", q);
    ctx.shape("K", K, "k and 4·k");
    AttentionRecord rd, rc;
    attention_reference(q, K, K, Mask::none(), AttentionOptions{}, &rd);
    attention_reference(q, K, K, Mask::none(), opts_scale(Scale{ScaleKind::Cosine, 1.0f}), &rc);
    Table w;
    w.columns = {"score", "key", "score value", "weight"};
    w.formats = {"", "", "{:.4f}", "{:.4f}"};
    w.add({"q·k/√Dk", "|k| = 1", rd.scores_scaled.data[0], rd.weights.data[0]});
    w.add({"q·k/√Dk", "|k| = 4", rd.scores_scaled.data[1], rd.weights.data[1]});
    w.add({"cos(q, k)", "|k| = 1", rc.scores_scaled.data[0], rc.weights.data[0]});
    w.add({"cos(q, k)", "|k| = 4", rc.scores_scaled.data[1], rc.weights.data[1]});
    ctx.table("length", w);
    const double dcos = std::fabs(double(rc.weights.data[0]) - rc.weights.data[1]);
    const double ddot = std::fabs(double(rd.weights.data[0]) - rd.weights.data[1]);
    ctx.figure("cosine_weight_diff", dcos);
    ctx.figure("dot_weight_diff", ddot);
    ctx.identity(dcos < 1e-6, "C19", ctx.f("cosine gives both keys the same weight (diff {})", e2(dcos)));
    ctx.identity(
        ddot > 0.1, "C19,C11",
        ctx.f("the dot product tells them apart (weights {:.3f} vs {:.3f})", rd.weights.data[0], rd.weights.data[1]));
    return {rd.scores_scaled.data[0], rd.scores_scaled.data[1]};
}

// The rest of the stability recipe; `row` is a dot-product row's scores for the log_softmax check.
void stability_recipe(LessonContext& ctx, const std::vector<float>& row) {
    // The rest of the recipe, measured live: the quick size of `attn experiment stability`.
    ExperimentConfig qc;
    qc.size = ExperimentSize::Quick, qc.seeds = 1, qc.seed = ctx.seed();
    ctx.busy("measuring: attn experiment stability at its quick size");
    const ExperimentResult st = experiment_stability().run(qc, {});
    ctx.idle();
    const auto& lrows = st.tables[1].rows;  // d_k 64, 1024 x (scaled, none, cosine)
    const std::string log_inf = lrows[4][2].get<std::string>(), lsm_bad = lrows[4][3].get<std::string>();
    ctx.check(log_inf.rfind("0/", 0) != 0 && lsm_bad.rfind("0/", 0) == 0, "C39",
              ctx.f("unscaled scores at d_k = 1024: log(softmax) of the lowest weight is -inf in {} rows, "
                          "log_softmax is finite in all ({} not finite); log_softmax rows sum to {:.0f}, so it "
                          "stabilises the loss but cannot stand in for the weights (attn experiment stability)",
                          log_inf, lsm_bad, lrows[4][4].get<double>()));
    ctx.unmeasured("C39", "loss scaling for mixed precision concerns training in float16, which attn does not do.");
    // log_softmax belongs in the loss; it cannot stand in for the weights
    const std::vector<float> p = softmax_vec(row);
    std::vector<double> logp;
    double lsum = 0;
    for (float x : p) logp.push_back(std::log(double(x))), lsum += logp.back();
    ctx.source_error("C39", "Stabilise with L2-normalised Q and K, log_softmax, and loss scaling in mixed precision",
                     ctx.f("names log_softmax among the fixes, and the second article has it replace softmax. "
                                 "It cannot replace the attention weights: for the dot-product row above, softmax "
                                 "gives {} and log_softmax gives {}, negative numbers that sum to {}, not 1, so "
                                 "they cannot weight the values. log_softmax is the stable way to compute a "
                                 "cross-entropy loss (log of the output probabilities), not attention.",
                                 list(p, 3), list(logp, 3), g3(lsum)));
}

// The premise of the same section: long sequences make the dot product overflow.
void long_sequences_do_not_overflow(LessonContext& ctx) {
    Rng r2 = ctx.rng(61);
    const int64_t dk = 64;
    const Tensor qq = randn({1, 1, 1, dk}, r2);
    double top64 = 0, top4k = 0;
    bool finite = true;
    for (int64_t len : {int64_t{64}, int64_t{4096}}) {
        const Tensor kk = randn({1, 1, len, dk}, r2), vv = randn({1, 1, len, 1}, r2);
        AttentionRecord rr;
        attention_reference(qq, kk, vv, Mask::none(), opts_scale(Scale{ScaleKind::None, 1.0f}), &rr);
        double top = 0;
        for (float x : rr.scores_scaled.data) top = std::max(top, std::fabs(double(x)));
        for (float x : rr.weights.data) finite = finite && std::isfinite(x);
        (len == 64 ? top64 : top4k) = top;
    }
    ctx.figure("unscaled_top_score_T64_T4096", std::vector<double>{top64, top4k});
    ctx.source_error("C39", "long sequences make the dot product overflow",
                     ctx.f("is wrong as the second article's numerics section (§5.2) puts it: it ties "
                           "数值溢出, overflow, to the sequence length. A score q·k sums Dk products, however long the "
                           "sequence: a longer row holds more scores, not larger ones (unscaled at Dk = {}, the "
                           "largest |q·k| of a row is {:.1f} at T = 64 and {:.1f} at T = 4096, only the largest "
                           "of more draws), and float32's exp overflows above {:.1f} only without the row "
                           "maximum subtracted, which every softmax does first (all weights finite at T = 4096: "
                           "{}).",
                           dk, top64, top4k, std::log(double(std::numeric_limits<float>::max())),
                           ctx.tr(finite ? "yes" : "no")));
}

void run(LessonContext& ctx) {
    divide_by_a_fixed_constant(ctx);
    cosine_bounded_scores(ctx);
    const std::vector<float> row = what_cosine_throws_away(ctx);
    stability_recipe(ctx, row);
    long_sequences_do_not_overflow(ctx);
}

const RegisterLesson reg{{"alternatives", "Alternatives to √Dk",
                          "a fixed constant suits one Dk only; cosine bounds scores but forgets vector length",
                          {"C11", "C17", "C19", "C20", "C39"}, false, run, Part::advanced, /*minutes*/ 7}};

}  // namespace
}  // namespace attn::lessons::lesson06
