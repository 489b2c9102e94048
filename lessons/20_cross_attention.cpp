// Lesson 20: cross-attention: a decoder reading an encoder's output. Queries
// from one sequence, keys and values from another (kdim/vdim); the output has
// the queries' length; the padding mask sits on the key side (the source), and
// no causal mask is needed there. Beyond the source material, which presumes an
// encoder-decoder (C24, C28) without showing the cross step.
#include "common.hpp"

namespace attn::lessons::lesson20 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

constexpr int64_t B = 2, T = 4, D = 8, H = 2, S = 7, Denc = 12;

double max_diff_rows(const Tensor& a, const Tensor& b, int64_t batch, int64_t rows) {
    // largest |a - b| over rows [0, rows) of batch row `batch` of two (B, T, D) tensors
    double worst = 0;
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t d = 0; d < a.dim(2); ++d)
            worst = std::max(worst, std::fabs(double(a.at({batch, t, d})) - b.at({batch, t, d})));
    return worst;
}

// The decoder's states, the encoder's output, and the layer between them.
struct CrossLayer {
    Tensor enc, dec;  // [B, S, Denc], [B, T, D]
    MultiHeadAttention mha;
};

// The masked source and the output under it, which the padded-targets section compares against.
struct PaddedSource {
    Mask src_pad;
    Tensor outp;
};

Tensor queries_from_one_sequence(LessonContext& ctx, const CrossLayer& c) {
    const Tensor &enc = c.enc, &dec = c.dec;
    const MultiHeadAttention& mha = c.mha;
    ctx.section("Queries from one sequence, keys and values from another");
    ctx.para("In self-attention one sequence x plays all three parts. An encoder-decoder (a translator, a "
             "speech recogniser) has two: the encoder has read the source sentence, and the decoder, writing "
             "the target one token at a time, asks the source what it needs. So the queries come from the "
             "decoder's states and the keys and values from the encoder's output. The two sequences have their "
             "own lengths (T target tokens, S source tokens) and may have their own widths: "
             "nn.MultiheadAttention's kdim and vdim are the widths of the key and value inputs, and W_k, W_v "
             "project them to the heads' Dk and Dv, which is all the dot product needs.");
    ForwardRecord rec;
    const Tensor out = mha.forward(dec, enc, enc, Mask::none(), AttentionOptions{}, &rec);
    ctx.shape("x (decoder)", dec, "[B, T, D] queries' input");
    ctx.shape("x_kv (encoder)", enc, "[B, S, kdim] keys' and values' input");
    ctx.shape("W_k", mha.k_proj.W, "[H·Dk, kdim]");
    ctx.shape("Q", rec.Q, "[B, H, T, Dk]");
    ctx.shape("K", rec.K, "[B, H, S, Dk]");
    ctx.shape("weights", rec.attn.weights, "[B, H, T, S]: one row per target token, one column per source token");
    ctx.shape("out", out, "[B, T, D]");
    ctx.heatmap("cross_weights",
                make_panel("decoder rows over source columns, head 0", block(rec.attn.weights, 0, 0).data(), T, S,
                           index_labels(T, "t"), index_labels(S, "s")));
    const double err = max_row_sum_error(rec.attn.weights, Mask::none());
    ctx.identity(out.shape == dec.shape && rec.attn.weights.dim(3) == S, "C6",
              ctx.f("out {} has the decoder's shape; each of its {} rows spreads weight over the {} source "
                    "tokens (rows sum to 1 within {})",
                    shape_str(out.shape), T, S, e2(err)));
    return out;
}

void the_output_follows_the_queries(LessonContext& ctx, const CrossLayer& c, const Tensor& out) {
    const Tensor& dec = c.dec;
    const MultiHeadAttention& mha = c.mha;
    ctx.section("The output follows the queries");
    ctx.para("Give the decoder a longer source: S grows from 7 to 11 tokens. The weights get wider, the "
             "output does not: each target token still gets one vector, a weighted mix of the source's values.");
    Rng rng2 = ctx.rng(22);
    const Tensor enc11 = randn({B, 11, Denc}, rng2);
    ForwardRecord rec11;
    const Tensor out11 = mha.forward(dec, enc11, enc11, Mask::none(), AttentionOptions{}, &rec11);
    ctx.shape("weights", rec11.attn.weights, "[B, H, T, 11]");
    ctx.shape("out", out11, "[B, T, D]: unchanged");
    ctx.identity(
        out11.shape == out.shape && rec11.attn.weights.dim(3) == 11, "C6",
        ctx.f("S = 11: weights {} but out still {}", shape_str(rec11.attn.weights.shape), shape_str(out11.shape)));
}

PaddedSource which_side_the_mask_is_on(LessonContext& ctx, const CrossLayer& c) {
    const Tensor &enc = c.enc, &dec = c.dec;
    const MultiHeadAttention& mha = c.mha;
    ctx.section("Which side the mask is on");
    ctx.para("Sources in a batch have different lengths too: here source 0 has all 7 tokens and source 1 only "
             "4, padded to 7. Padding is a property of the keys, so the mask is a key-padding mask over the "
             "source: the columns of the [T, S] weights, the same for every decoder row. No causal mask here: "
             "the source is complete before the decoder starts, and every target token may read all of it. "
             "(The causal mask belongs to the decoder's own self-attention, over its T × T scores.)");
    const Mask src_pad = Mask::key_padding({S, 4});
    ForwardRecord rp;
    const Tensor outp = mha.forward(dec, enc, enc, src_pad, AttentionOptions{}, &rp);
    double leak = 0;
    for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 4; j < S; ++j) leak = std::max(leak, double(rp.attn.weights.at({1, h, i, j})));
    ctx.heatmap("cross_padded",
                make_panel("source 1 (4 real tokens), head 0", block(rp.attn.weights, 1, 0).data(), T, S, {}, {}));
    // what the padded source tokens hold cannot matter: change them and compare
    Tensor enc_junk = enc;
    for (int64_t j = 4; j < S; ++j)
        for (int64_t d = 0; d < Denc; ++d) enc_junk.at({1, j, d}) += 5.0f;
    const Tensor outj = mha.forward(dec, enc_junk, enc_junk, src_pad, AttentionOptions{});
    const double moved = max_diff_rows(outj, outp, 1, T);
    ctx.figure("padded_source_weight", leak);
    ctx.identity(leak == 0.0 && moved == 0.0, "C23,C26",
              ctx.f("padded source tokens get weight {} and changing them moves the output by {}", leak, moved));
    // without the mask, they leak in
    const Tensor outn = mha.forward(dec, enc_junk, enc_junk, Mask::none(), AttentionOptions{});
    const Tensor outn0 = mha.forward(dec, enc, enc, Mask::none(), AttentionOptions{});
    const double leaked = max_diff_rows(outn, outn0, 1, T);
    ctx.check(leaked > 1e-3, "C23",
              ctx.f("without the source mask the same change moves the output by {}", g3(leaked)));
    // every target row sees every real source token, the last one included
    Tensor enc_last = enc;
    for (int64_t d = 0; d < Denc; ++d) enc_last.at({0, S - 1, d}) += 1.0f;
    const Tensor outl = mha.forward(dec, enc_last, enc_last, src_pad, AttentionOptions{});
    const double first_row = max_diff_rows(outl, outp, 0, 1);
    ctx.check(first_row > 1e-3, "C24",
              ctx.f("no causal mask across: changing the last source token moves target token 0 by {}",
                    g3(first_row)));
    return {src_pad, outp};
}

void padded_targets(LessonContext& ctx, const CrossLayer& c, const PaddedSource& padded) {
    const Tensor &enc = c.enc, &dec = c.dec;
    const MultiHeadAttention& mha = c.mha;
    const Mask& src_pad = padded.src_pad;
    const Tensor& outp = padded.outp;
    ctx.section("Padded target tokens: computed, then ignored");
    ctx.para("The decoder side may be padded as well. Those are query rows, and a row of attention never "
             "reads another row's query: changing a padded target token's state changes its own output row "
             "and nothing else. So the query side needs no mask; the loss simply ignores the padded rows.");
    Tensor dec_junk = dec;
    for (int64_t d = 0; d < D; ++d) dec_junk.at({1, T - 1, d}) += 5.0f;
    const Tensor outq = mha.forward(dec_junk, enc, enc, src_pad, AttentionOptions{});
    const double real_rows = max_diff_rows(outq, outp, 1, T - 1),
                 own_row = std::fabs(double(outq.at({1, T - 1, 0})) - outp.at({1, T - 1, 0}));
    ctx.identity(real_rows == 0.0 && own_row > 0.0, "C26",
              ctx.f("the other target rows move by {}; the changed row itself by {}", real_rows, g3(own_row)));
}

void run(LessonContext& ctx) {
    Rng rng = ctx.rng(20);
    CrossLayer c{randn({B, S, Denc}, rng),  // an encoder's output: the source sentence, S tokens of width 12
                 randn({B, T, D}, rng),     // the decoder's states: T target tokens of width 8
                 MultiHeadAttention(MhaConfig{D, H, 0, 0, true, Denc, Denc})};
    Rng wrng = ctx.rng(21);
    c.mha.init(InitSpec{}, wrng);
    const Tensor out = queries_from_one_sequence(ctx, c);
    the_output_follows_the_queries(ctx, c, out);
    const PaddedSource padded = which_side_the_mask_is_on(ctx, c);
    padded_targets(ctx, c, padded);
}

const RegisterLesson reg{{"cross-attention", "Cross-attention",
                          "a decoder reading an encoder's output: Tq ≠ Tk, kdim/vdim, the mask on the source's keys",
                          {"C6", "C23", "C24", "C26"}, true, run, Part::advanced, /*minutes*/ 4}};

}  // namespace
}  // namespace attn::lessons::lesson20
