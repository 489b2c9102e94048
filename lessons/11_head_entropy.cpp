// Lesson 11: diagnosing heads by their entropy and by how alike they are (C32),
// and what random weights can and cannot show.
#include "attn/model/heads.hpp"
#include "common.hpp"
#include "attn/experiments/experiment.hpp"

namespace attn::lessons::lesson11 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

constexpr int64_t B = 4, T = 12;

// The layer with a planted duplicate head, run on random x: returns its record.
ForwardRecord mean_entropy_per_head(LessonContext& ctx, const MhaConfig& cfg) {
    ctx.section("Mean entropy per head");
    ctx.para("Heads are not told to specialise; often several end up doing the same thing. The source's "
             "diagnosis: save each head's weights and compare their mean entropy. Entropy H = −Σ p log p "
             "measures how spread a row is: log T for uniform (every key equally), 0 for one-hot. We "
             "normalise by log T so 1 = uniform. Effective keys = e^H: how many keys a row really uses.");
    MultiHeadAttention mha(cfg);
    Rng rng = ctx.rng(11);
    // normal:0.3 makes the heads' scores spread enough to differ from one another
    mha.init(InitSpec{InitKind::Normal, 0.3f}, rng);
    // the same query and key weights in head 1 as in head 0: a planted duplicate
    const int64_t dk = cfg.d_k;
    for (int64_t r = 0; r < dk; ++r)
        for (int64_t c = 0; c < cfg.d_model; ++c) {
            mha.q_proj.W.at({dk + r, c}) = mha.q_proj.W.at({r, c});
            mha.k_proj.W.at({dk + r, c}) = mha.k_proj.W.at({r, c});
        }
    for (int64_t r = 0; r < dk; ++r) {
        mha.q_proj.b.at({dk + r}) = mha.q_proj.b.at({r});
        mha.k_proj.b.at({dk + r}) = mha.k_proj.b.at({r});
    }
    const Tensor x = randn({B, T, cfg.d_model}, rng);  // [B, T, D]
    ForwardRecord rec;
    mha.forward(x, Mask::none(), AttentionOptions{}, &rec);
    ctx.shape("x", x, "[B=4, T=12, D=64]");
    ctx.shape("weights", rec.attn.weights, "[B, H=8, T, T]");
    ctx.para("The layer has random weights drawn N(0, 0.3²), except that head 1 is given head 0's query and "
             "key weights: a planted duplicate the diagnosis should find.");
    const auto hs = head_stats(rec.attn.weights, Mask::none());
    Table t;
    t.columns = {"head", "mean entropy (nats)", "normalised", "mean max weight", "effective keys"};
    t.formats = {"", "{:.3f}", "{:.3f}", "{:.3f}", "{:.2f}"};
    std::vector<double> ent;
    for (size_t h = 0; h < hs.size(); ++h) {
        t.add({static_cast<int64_t>(h), hs[h].mean_entropy_nats, hs[h].mean_normalized_entropy, hs[h].mean_max_weight,
               hs[h].mean_effective_keys});
        ent.push_back(hs[h].mean_entropy_nats);
    }
    ctx.table("heads", t);
    ctx.figure("mean_entropy_nats", ent);
    const double logT = std::log(double(T));
    bool in_range = true;
    for (double e : ent) in_range = in_range && e >= 0 && e <= logT + 1e-9;
    ctx.identity(in_range, "C32", ctx.f("every head's mean entropy lies in [0, log T = {:.3f}] nats", logT));
    ctx.identity(std::fabs(ent[0] - ent[1]) < 1e-5, "C32",
              ctx.f("the planted duplicate has the same mean entropy as head 0 ({:.4f} vs {:.4f})", ent[0], ent[1]));
    return rec;
}

void head_to_head_similarity(LessonContext& ctx, const MhaConfig& cfg, const ForwardRecord& rec) {
    ctx.section("Head-to-head similarity");
    ctx.para(ctx.f("Equal mean entropy does not prove two heads look at the same keys; two heads can be "
                   "equally sharp about different things. A direct comparison: the Jensen-Shannon divergence "
                   "between the two heads' rows, averaged over all queries. 0 means identical rows; ln 2 = "
                   "{:.3f} nats is the maximum (disjoint).",
                   std::log(2.0)));
    const Tensor sim = head_similarity(rec.attn.weights, Mask::none());  // [H, H]
    ctx.shape("similarity", sim, "[H, H], mean JS divergence (nats)");
    ctx.heatmap("similarity",
                make_panel("mean JS divergence between heads (0 = identical)", sim.ptr(), cfg.heads, cfg.heads,
                           index_labels(cfg.heads, "h"), index_labels(cfg.heads, "h")),
                0.0, 0.0, false);
    // the closest pair, and every pair closer than a tenth of the median distance
    const std::vector<HeadPair> pairs = head_pairs(sim);  // most alike first
    const HeadPair closest = pairs.front();
    const double median = pairs[pairs.size() / 2].js, threshold = 0.1 * median;
    const std::vector<HeadPair> flagged = near_duplicate_heads(sim, threshold);
    std::string listed;
    for (const HeadPair& p : flagged)
        listed += fmt::format("{}(h{}, h{}: {})", listed.empty() ? "" : " ", p.a, p.b, e2(p.js));
    ctx.para(ctx.f("Median divergence between heads: {:.4f} nats. Flagged as near-duplicates (below a "
                   "tenth of the median, {:.4f}): {}",
                   median, threshold, flagged.empty() ? ctx.tr("none") : listed));
    ctx.figure("median_js", median);
    ctx.figure("closest_pair", std::vector<int64_t>{closest.a, closest.b});
    ctx.check(closest.a == 0 && closest.b == 1 && flagged.size() == 1, "C32",
              ctx.f("the closest pair is (h{}, h{}), the planted duplicate, and it is the only one flagged",
                    closest.a, closest.b));
    ctx.heatmap("head0", make_panel("head 0, batch 0", block(rec.attn.weights, 0, 0).data(), T, T));
    ctx.heatmap("head2", make_panel("head 2, batch 0", block(rec.attn.weights, 0, 2).data(), T, T));
}

void what_random_weights_show(LessonContext& ctx) {
    ctx.section("What random weights can and cannot show");
    ctx.para("Everything above is a tool test on an untrained layer. Random heads differ from one another "
             "only by chance, so their entropies and divergences say nothing about what trained heads do: "
             "whether real heads homogenise, and how many, can only be measured on a trained model's weights "
             "(the 'Real heads' lesson, where a pretrained model is available, does that). What this lesson "
             "does show: the diagnosis works. A duplicate head is found, at (near) zero divergence, and "
             "mean entropy alone would not have told it apart from any other head of similar sharpness.");
    ctx.experiment_claim(experiment_heads(), "C32",
                         "\"heads often homogenise\" in trained models: not measurable with random weights here; "
                         "attn experiment heads trains 1x64, 4x16 and 8x8 heads and counts near-identical pairs.");
}

void run(LessonContext& ctx) {
    MhaConfig cfg;
    cfg.d_model = 64;
    cfg.heads = 8;
    cfg = cfg.resolved();
    const ForwardRecord rec = mean_entropy_per_head(ctx, cfg);
    head_to_head_similarity(ctx, cfg, rec);
    what_random_weights_show(ctx);
}

const RegisterLesson reg{{"head-entropy", "Diagnosing heads",
                          "per-head mean entropy, head-to-head divergence, a planted duplicate found",
                          {"C32"}, true, run, Part::advanced, /*minutes*/ 6}};

}  // namespace
}  // namespace attn::lessons::lesson11
