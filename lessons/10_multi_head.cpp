// Lesson 10: multi-head attention: the 512 = 8 × 64 split, what it costs,
// and merging the heads back (C29-C31, C33).
#include "common.hpp"
#include "attn/experiments/experiment.hpp"

namespace attn::lessons {
namespace {

void run(LessonContext& ctx) {
    ctx.section("Split d_model into heads");
    ctx.para("One head gives each query one distribution over the keys. Multi-head attention runs several "
             "smaller heads side by side, each with its own projections, so a query can look for several "
             "things at once. The usual bookkeeping keeps the total width: d_model = 512 becomes 8 heads of "
             "64. Q is still computed by one [512, 512] projection; its 512 output columns are then cut into "
             "8 slices of 64, one per head. After attention the heads are concatenated back to 512 and a "
             "last projection W_o mixes them.");
    MhaConfig cfg;
    cfg.d_model = 512;
    cfg.heads = 8;
    cfg = cfg.resolved();
    const int64_t B = 2, T = 10;
    MultiHeadAttention mha(cfg);
    Rng rng = ctx.rng(10);
    mha.init(InitSpec{}, rng);
    const Tensor x = randn({B, T, cfg.d_model}, rng);  // [B, T, D]
    ForwardRecord rec;
    const TraceFn trace = [&ctx](const TraceEvent& e) { ctx.shape(e.name, e.shape, e.formula); };
    ctx.para(ctx.f("d_model = {}, heads = {}, so Dk = Dv = {}. The forward pass reports each step:", cfg.d_model,
                         cfg.heads, cfg.d_k));
    const Tensor out = mha.forward(x, Mask::none(), AttentionOptions{}, &rec, &trace);
    ctx.identity(cfg.heads * cfg.d_k == cfg.d_model && rec.Q.shape == Shape({B, cfg.heads, T, cfg.d_k}) &&
                  out.shape == x.shape,
              "C29", ctx.f("{} = {} × {}; per-head Q is {}, the output {} has x's shape", cfg.d_model, cfg.heads, cfg.d_k,
                                 shape_str(rec.Q.shape), shape_str(out.shape)));

    ctx.section("8 heads of 64 cost what 1 head of 512 costs");
    ctx.para("Splitting does not add parameters or arithmetic: the projections are the same four [512, 512] "
             "matrices, and the score products Q·Kᵀ and weights·V do H × Dk = 512 multiply-adds per (query, "
             "key) pair either way. What does grow is the score matrix: one [T, T] per head.");
    const int64_t Tc = 128;
    const AttentionCost one = attention_cost(1, Tc, 512, 1, 512, 512), eight = attention_cost(1, Tc, 512, 8, 64, 64);
    Table t;
    t.columns = {"layout", "parameters", "proj. FLOPs", "QKᵀ + wV FLOPs", "total FLOPs", "scores"};
    t.formats = {"", "", "{:.4g}", "{:.4g}", "{:.4g}"};
    t.add({"1 head × 512", one.params_total, one.flops_projections, one.flops_scores + one.flops_weighted_sum, one.flops_total,
           format_bytes(one.bytes_score_matrix)});
    t.add({"8 heads × 64", eight.params_total, eight.flops_projections, eight.flops_scores + eight.flops_weighted_sum,
           eight.flops_total, format_bytes(eight.bytes_score_matrix)});
    ctx.para(ctx.f("For B = 1, T = {} (a FLOP is a multiply or an add):", Tc));
    ctx.table("cost", t);
    ctx.figure("params_1x512", one.params_total);
    ctx.figure("params_8x64", eight.params_total);
    ctx.figure("flops_1x512", one.flops_total);
    ctx.figure("flops_8x64", eight.flops_total);
    ctx.identity(one.params_total == eight.params_total && one.flops_total == eight.flops_total, "C30",
              ctx.f("same parameters ({}) and same FLOPs ({}) for both layouts", one.params_total, g4(one.flops_total)));
    ctx.identity(eight.bytes_score_matrix == 8 * one.bytes_score_matrix, "C30",
              ctx.f("but 8 heads keep 8 score matrices: {} instead of {}", format_bytes(eight.bytes_score_matrix),
                          format_bytes(one.bytes_score_matrix)));
    ctx.identity(mha.q_proj.num_params() + mha.k_proj.num_params() + mha.v_proj.num_params() + mha.o_proj.num_params() ==
                  eight.params_total,
              "C30", "attention_cost's parameter count matches the layer's own tensors");

    ctx.source_error("C29", "Split d_model into h heads (512 = 8 × 64)",
                     ctx.f("is right, but the first article's table of the split gives the score matrices as "
                                 "[seq, 512, 512] for one head and 8 × [seq, 64, 64] for eight, as if scores "
                                 "were [Dk, Dk]. Scores compare queries with keys, so they are [T, T] in both "
                                 "layouts: the 512-wide layer above made scores of shape {} ([B, H, T, T] with "
                                 "T = {}), and Dk never appears in their shape.",
                                 shape_str(rec.attn.scores_raw.shape), T),
                     LessonContext::SourceFlag::slip);

    ctx.section("Merging heads: transpose before reshape");
    ctx.para("Heads come out as [B, H, T, Dv]. To concatenate them per token we need [B, T, H·Dv]: first "
             "swap H and T ([B, T, H, Dv]), then flatten the last two. Reshaping [B, H, T, Dv] straight to "
             "[B, T, H·Dv] has the right shape and the wrong contents: it glues together consecutive tokens "
             "of one head. (In PyTorch the transpose makes a non-contiguous view, hence the .contiguous() "
             "before .view(); attn's tensors are always contiguous copies.) A tiny example makes it visible: "
             "2 heads, 3 tokens, Dv = 2, each entry labelled h·100 + t·10 + d.");
    Tensor tiny({1, 2, 3, 2});  // [B=1, H=2, T=3, Dv=2]
    for (int64_t h = 0; h < 2; ++h)
        for (int64_t tt = 0; tt < 3; ++tt)
            for (int64_t d = 0; d < 2; ++d) tiny.at({0, h, tt, d}) = static_cast<float>(h * 100 + tt * 10 + d);
    const Tensor right = merge_heads(tiny), wrong = merge_heads_wrong(tiny);  // [1, 3, 4] each
    ctx.shape("heads", tiny, "[B, H, T, Dv]");
    ctx.shape("merged", right, "transpose(1, 2), then reshape");
    ctx.shape("merged_wrong", wrong, "reshape only");
    std::string txt = ctx.tr("token   right merge            reshape only");
    bool right_ok = true, wrong_mixes = false;
    for (int64_t tt = 0; tt < 3; ++tt) {
        std::vector<std::string> a, b;
        for (int64_t c = 0; c < 4; ++c) {
            const int ra = static_cast<int>(right.at({0, tt, c})), wb = static_cast<int>(wrong.at({0, tt, c}));
            a.push_back(fmt::format("{:3}", ra));
            b.push_back(fmt::format("{:3}", wb));
            right_ok = right_ok && (ra / 10) % 10 == tt;   // every entry from token tt
            wrong_mixes = wrong_mixes || (wb / 10) % 10 != tt;
        }
        txt += fmt::format("\n  {}     [{}]     [{}]", tt, fmt::join(a, " "), fmt::join(b, " "));
    }
    ctx.code(txt);
    ctx.identity(right_ok && wrong_mixes, "C31",
              "the right merge keeps each row to one token (tens digit = t); reshape alone mixes tokens in a row");
    const double rt = max_abs_diff(split_heads(merge_heads(rec.head_out), cfg.heads), rec.head_out);
    ctx.identity(rt == 0.0, "C31", ctx.f("split_heads undoes merge_heads exactly on the real layer (max diff {})", rt));
    const Tensor out_wrong = mha.o_proj.forward(merge_heads_wrong(rec.head_out));  // [B, T, D]
    ctx.shape("out, wrong", out_wrong, "merge_heads_wrong, then W_o");
    const double dw = max_abs_diff(out_wrong, out);
    ctx.figure("wrong_merge_output_max_diff", dw);
    ctx.check(dw > 1e-3, "C31",
              ctx.f("on the 512-wide layer, the wrong merge changes the output by up to {} (same shape {}, no error)", g3(dw),
                          shape_str(out_wrong.shape)));
    ctx.experiment_claim(experiment_heads(), "C33",
                         "the source adds that several heads give the gradient several paths, so some heads "
                         "keep learning when others' gradients vanish. That is a statement about training, "
                         "measured by attn experiment heads (half the heads behind a stop-gradient).");
}

const RegisterLesson reg{{"multi-head", "Multi-head attention",
                          "512 = 8 × 64; the cost is the same as one wide head; merging heads needs the transpose",
                          {"C29", "C30", "C31", "C33"}, false, run}};

}  // namespace
}  // namespace attn::lessons
