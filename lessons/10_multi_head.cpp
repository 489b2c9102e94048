// Lesson 10: multi-head attention: the 512 = 8 × 64 split, what it costs,
// and merging the heads back (C29-C31, C33); then the block around the heads
// (LayerNorm, residual adds, feed-forward, logits) computed by hand on a model
// trained live, against the trainer's own forward pass.
#include "common.hpp"
#include "attn/experiments/experiment.hpp"
#include "attn/nn/trainable_stack.hpp"
#include "attn/nn/ops.hpp"
#include "attn/train/tasks.hpp"
#include "attn/train/trainer.hpp"

namespace attn::lessons::lesson10 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

// ---- the block of a trained model, by hand (the last section)

// A parameter of the model, by its PyTorch state_dict name (a copy).
Tensor param(TrainableStack& m, const std::string& name) {
    for (const Param& p : m.params())
        if (p.name == name) return *p.value;
    throw std::logic_error("lesson multi-head: the model has no parameter " + name);
}

// LayerNorm over the last dimension (the trainer's own reference op, eps 1e-5).
Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
    Tensor out(x.shape);
    const int64_t D = x.dim(-1), N = x.numel() / D;
    std::vector<float> mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
    nn::layernorm_forward(out.ptr(), mean.data(), rstd.data(), x.ptr(), w.ptr(), b.ptr(), N, D);
    return out;
}

Tensor plus(const Tensor& a, const Tensor& b) {
    Tensor out(a.shape);
    nn::residual_forward(out.ptr(), a.ptr(), b.ptr(), a.numel());
    return out;
}

Linear linear_of(TrainableStack& m, const std::string& prefix) {
    Linear l;
    l.W = param(m, prefix + ".weight");
    l.b = param(m, prefix + ".bias");
    return l;
}

void block_section(LessonContext& ctx) {
    ctx.section("The block around the heads");
    ctx.para("Attention never runs alone. In a Transformer it is half of a block: the residual stream x is "
             "normalised (LayerNorm), attended over, and the result is added back to x; then normalised again, "
             "passed through a feed-forward network (two Linear layers with a GELU between them, applied to each "
             "position on its own) and added back again. After the last block a final LayerNorm and the output "
             "head turn every position into logits, one score per token of the vocabulary. Attention is the "
             "only step where positions exchange information; everything else works on one position at a time.");
    // a 1-layer decoder trained live on reverse: x1..xn SEP -> xn..x1
    TaskOptions to;
    to.seq = 11;
    to.symbols = 8;
    const Task task(TaskKind::Reverse, to);
    ModelConfig mc;
    mc.vocab = task.vocab();
    mc.max_seq = task.seq();
    mc.d_model = 32;
    mc.heads = 2;
    mc.layers = 1;
    TrainableStack model(mc);
    model.init(ctx.seed());
    TrainConfig tc;
    tc.steps = 200;
    tc.seed = ctx.seed();
    tc.eval_every = 0;
    ctx.busy("training: a 1-layer decoder on reverse, 200 steps");
    const TrainResult tr = train_model(model, task, tc);
    ctx.idle();
    const ModelConfig& cfg = model.config();
    ctx.para(ctx.f("Below, a decoder of one block (D = {}, {} heads of Dk = {}, feed-forward width {}, vocabulary "
                   "V = {}) is trained live for {} steps on `reverse`: five symbols, a separator, then the five "
                   "symbols backwards. Then one held-out sequence goes through the block by hand, from the weights "
                   "the trainer learned, every step with its shape:",
                   cfg.d_model, cfg.heads, cfg.d_k, cfg.d_ff, cfg.vocab, tr.steps_done));
    ctx.code("x      = tok_emb[tokens] + pos_emb[:T]\n"
             "x      = x + MHA(LN1(x))\n"
             "x      = x + GELU(LN2(x)·W1ᵀ + b1)·W2ᵀ + b2\n"
             "logits = LN_f(x)·headᵀ");
    const TaskBatch one = task.batch(1, ctx.seed(), DataSplit::Eval, 0);
    const int64_t T = one.T, D = cfg.d_model;
    // embeddings: a row of tok_emb per token, plus the position's row
    const Tensor tok_emb = param(model, "tok_emb.weight"), pos_emb = param(model, "pos_emb.weight");
    Tensor x({1, T, D});
    nn::embedding_forward(x.ptr(), one.tokens.data(), tok_emb.ptr(), pos_emb.ptr(), 1, T, D);
    ctx.shape("tokens", Shape{1, T}, "[B, T] ids");
    ctx.shape("tok_emb", tok_emb, "[V, D], one row per token");
    ctx.shape("x", x, "tok_emb[tokens] + pos_emb[:T]: the residual stream");
    // attention sublayer: the same MultiHeadAttention as above, holding the trained weights
    const Tensor h1 = layer_norm(x, param(model, "blocks.0.ln1.weight"), param(model, "blocks.0.ln1.bias"));
    ctx.shape("LN1(x)", h1, "mean 0, variance 1 per position, then scaled and shifted");
    MhaConfig ac;
    ac.d_model = D;
    ac.heads = cfg.heads;
    MultiHeadAttention mha(ac.resolved());
    mha.q_proj = linear_of(model, "blocks.0.attn.q_proj");
    mha.k_proj = linear_of(model, "blocks.0.attn.k_proj");
    mha.v_proj = linear_of(model, "blocks.0.attn.v_proj");
    mha.o_proj = linear_of(model, "blocks.0.attn.o_proj");
    const TraceFn trace = [&ctx](const TraceEvent& e) {
        if (e.name != "x") ctx.shape(e.name, e.shape, e.formula);  // its input is LN1(x), shown above
    };
    const Tensor a = mha.forward(h1, Mask::make_causal(), AttentionOptions{}, nullptr, &trace);
    const Tensor x1 = plus(x, a);
    ctx.shape("x + attn", x1, "the first residual add");
    // feed-forward sublayer
    const Tensor h2 = layer_norm(x1, param(model, "blocks.0.ln2.weight"), param(model, "blocks.0.ln2.bias"));
    const Tensor f1 = linear_of(model, "blocks.0.mlp.fc1").forward(h2);
    Tensor g(f1.shape);
    nn::gelu_forward(g.ptr(), f1.ptr(), f1.numel());
    const Tensor f2 = linear_of(model, "blocks.0.mlp.fc2").forward(g);
    ctx.shape("ffn hidden", g, "GELU(LN2(x)·W1ᵀ + b1): [B, T, F], each position widened on its own");
    ctx.shape("ffn out", f2, "hidden·W2ᵀ + b2: back to [B, T, D]");
    const Tensor x2 = plus(x1, f2);
    ctx.shape("x + ffn", x2, "the second residual add");
    // the output head
    const Tensor hf = layer_norm(x2, param(model, "ln_f.weight"), param(model, "ln_f.bias"));
    Linear head;
    head.W = param(model, "head.weight");
    const Tensor logits = head.forward(hf);
    ctx.shape("logits", logits, "LN_f(x)·headᵀ: [B, T, V]");
    ctx.identity(
        a.shape == x.shape && f2.shape == x.shape, "",
        ctx.f("both sublayers return x's shape {}, which is what lets the block add them back", shape_str(x.shape)));
    // the same logits from the trainer's own (fast) forward pass
    const Tensor fast = model.logits(one.tokens.data(), 1, T, 1);
    const double diff = max_abs_diff(fast, logits);
    ctx.figure("block_logits_max_diff", diff);
    ctx.identity(diff < 1e-4, "",
                 ctx.f("the block by hand gives the model's own logits (max diff {}: float rounding, the same "
                       "arithmetic in two codes)",
                       e2(diff)));
    // what the trained block predicts at the scored positions
    std::string in, want, got;
    int right = 0, scored = 0;
    for (int64_t t = 0; t < T; ++t) {
        in += (in.empty() ? "" : " ") + task.token_text(one.tokens[static_cast<size_t>(t)]);
        const int32_t target = one.targets[static_cast<size_t>(t)];
        if (target < 0) continue;
        int32_t best = 0;
        for (int64_t v = 1; v < cfg.vocab; ++v)
            if (logits.at({0, t, v}) > logits.at({0, t, best})) best = static_cast<int32_t>(v);
        want += (want.empty() ? "" : " ") + task.token_text(target);
        got += (got.empty() ? "" : " ") + task.token_text(best);
        ++scored;
        right += best == target ? 1 : 0;
    }
    ctx.code(ctx.f("input      {}\ntarget     {}\npredicted  {}", in, want, got));
    ctx.figure("block_right", right);
    ctx.check(scored > 0 && right == scored, "",
              ctx.f("after {} steps the block reverses this held-out sequence: {} of {} positions right (the argmax "
                    "of each row of logits)",
                    tr.steps_done, right, scored));
    ctx.para("The reversal is attention's work: the feed-forward network sees one position at a time, so only "
             "the attention weights can fetch the symbol that belongs at each output position. Every lesson of "
             "this tour zooms into one step of this block.");
}

// A 512-wide multi-head layer (8 heads of 64), its input x [B=2, T=10, 512], output and record.
struct Layer {
    MhaConfig cfg;
    MultiHeadAttention mha;
    Tensor x, out;
    ForwardRecord rec;
};

// Returns the 512-wide layer, its input, output and record, which the next sections reuse.
Layer split_into_heads(LessonContext& ctx) {
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
    ctx.identity(
        cfg.heads * cfg.d_k == cfg.d_model && rec.Q.shape == Shape({B, cfg.heads, T, cfg.d_k}) && out.shape == x.shape,
        "C29",
        ctx.f("{} = {} × {}; per-head Q is {}, the output {} has x's shape", cfg.d_model, cfg.heads, cfg.d_k,
              shape_str(rec.Q.shape), shape_str(out.shape)));

    ctx.predict("params_added_by_heads", "d_model = 512: how many more parameters do 8 heads of 64 have than 1 head "
                "of 512 (W_q, W_k, W_v, W_o and their biases)?",
                static_cast<double>(attention_cost(1, 128, 512, 8, 64, 64).params_total) -
                    static_cast<double>(attention_cost(1, 128, 512, 1, 512, 512).params_total),
                Closeness::absolute(0.5));
    return {cfg, std::move(mha), x, out, std::move(rec)};
}

void same_cost_as_one_head(LessonContext& ctx, const Layer& layer) {
    const MultiHeadAttention& mha = layer.mha;
    const ForwardRecord& rec = layer.rec;
    const int64_t T = layer.x.dim(1);
    ctx.section("8 heads of 64 cost what 1 head of 512 costs");
    ctx.para("Splitting does not add parameters or arithmetic: the projections are the same four [512, 512] "
             "matrices, and the score products Q·Kᵀ and weights·V do H × Dk = 512 multiply-adds per (query, "
             "key) pair either way. What does grow is the score matrix: one [T, T] per head.");
    const int64_t Tc = 128;
    const AttentionCost one = attention_cost(1, Tc, 512, 1, 512, 512), eight = attention_cost(1, Tc, 512, 8, 64, 64);
    Table t;
    t.columns = {"layout", "parameters", "proj. FLOPs", "QKᵀ + wV FLOPs", "total FLOPs", "scores"};
    t.formats = {"", "", "{:.4g}", "{:.4g}", "{:.4g}"};
    t.add({"1 head × 512", one.params_total, one.flops_projections, one.flops_scores + one.flops_weighted_sum,
           one.flops_total, format_bytes(one.bytes_score_matrix)});
    t.add({"8 heads × 64", eight.params_total, eight.flops_projections, eight.flops_scores + eight.flops_weighted_sum,
           eight.flops_total, format_bytes(eight.bytes_score_matrix)});
    ctx.para(ctx.f("For B = 1, T = {} (a FLOP is a multiply or an add):", Tc));
    ctx.table("cost", t);
    ctx.figure("params_1x512", one.params_total);
    ctx.figure("params_8x64", eight.params_total);
    ctx.figure("flops_1x512", one.flops_total);
    ctx.figure("flops_8x64", eight.flops_total);
    ctx.identity(
        one.params_total == eight.params_total && one.flops_total == eight.flops_total, "C30",
        ctx.f("same parameters ({}) and same FLOPs ({}) for both layouts", one.params_total, g4(one.flops_total)));
    ctx.identity(eight.bytes_score_matrix == 8 * one.bytes_score_matrix, "C30",
              ctx.f("but 8 heads keep 8 score matrices: {} instead of {}", format_bytes(eight.bytes_score_matrix),
                          format_bytes(one.bytes_score_matrix)));
    ctx.identity(
        mha.q_proj.num_params() + mha.k_proj.num_params() + mha.v_proj.num_params() + mha.o_proj.num_params() ==
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

    ctx.source_error("C29", "each head gets d_k/h, and each head's d_k is 64",
                     ctx.f("uses one symbol for two widths (the second article, §4.1): first d_k is the whole "
                           "projection, split into h parts of d_k/h, then d_k is a single head's width, 64 when "
                           "d_model = 512 and h = 8. Read literally the two give d_k = {} and d_k = {}. This tour "
                           "writes D (or d_model) for the whole width and Dk for one head's, so the split is "
                           "Dk = D / H.",
                           8 * 64, 64),
                     LessonContext::SourceFlag::imprecise);
}

void merging_heads(LessonContext& ctx, const Layer& layer) {
    const MhaConfig& cfg = layer.cfg;
    const MultiHeadAttention& mha = layer.mha;
    const ForwardRecord& rec = layer.rec;
    const Tensor& out = layer.out;
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
              ctx.f("on the 512-wide layer, the wrong merge changes the output by up to {} (same shape {}, no error)",
                    g3(dw), shape_str(out_wrong.shape)));
    // at the quick size (300 steps) the 8-head model itself often fails to learn, so the seeds
    // judge noise; the stored full run (1200 steps, 5 seeds) is what the verdict rests on
    ctx.stored_claim(experiment_heads(), "C33", "heads-full.json", /*which: AdamW's*/ 0,
                     "the source adds that several heads give the gradient several paths, so some heads "
                     "keep learning when others' gradients vanish. That is a statement about training, "
                     "measured by attn experiment heads (half the heads behind a stop-gradient).");
}

void run(LessonContext& ctx) {
    const Layer layer = split_into_heads(ctx);
    same_cost_as_one_head(ctx, layer);
    merging_heads(ctx, layer);
    block_section(ctx);
    ctx.exercise("split-merge", "multi-head");
}

const RegisterLesson reg{{"multi-head", "Multi-head attention",
                          "512 = 8 × 64 at the cost of one wide head; merging needs the transpose; a whole block, by "
                          "hand, on a trained model",
                          {"C29", "C30", "C31", "C33"}, false, run, Part::core, /*minutes*/ 10}};

}  // namespace
}  // namespace attn::lessons::lesson10
