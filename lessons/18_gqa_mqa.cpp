// Lesson 18: grouped-query and multi-query attention: the same queries and output
// shapes, fewer key/value heads, a fraction of the K/V bytes (beyond the source;
// it builds on the heads of C29, C30 and the memory of C40).
#include "common.hpp"

namespace attn::lessons::lesson18 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

// k (B, Hkv, T, d) -> (B, Hkv*g, T, d), each kv head repeated g times (torch.repeat_interleave(k, g, 1)).
Tensor repeat_heads(const Tensor& k, int64_t g) {
    const int64_t B = k.dim(0), Hkv = k.dim(1), T = k.dim(2), d = k.dim(3);
    Tensor out(Shape{B, Hkv * g, T, d});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hkv * g; ++h)
            std::copy_n(k.ptr() + (b * Hkv + h / g) * T * d, T * d, out.ptr() + (b * Hkv * g + h) * T * d);
    return out;
}

// One layer run with H_kv = 8, 2 and 1 on the same x (drawn from `rng`).
void fewer_kv_heads_than_query_heads(LessonContext& ctx, Rng& rng) {
    ctx.section("Fewer key/value heads than query heads");
    ctx.para("Multi-head attention gives every head its own W_q, W_k and W_v (C29). A decoder that generates "
             "text keeps every past token's K and V, for every layer and head, so K and V are what fills memory "
             "when sequences get long. Grouped-query attention (GQA) keeps all H query heads but only H_kv key/value "
             "heads: g = H / H_kv query heads share one K and one V. Multi-query attention (MQA) is the extreme "
             "H_kv = 1. Below: one layer with D = 64 and H = 8 heads of Dk = 8, run with H_kv = 8 (ordinary "
             "multi-head), 2 and 1 on the same input.");
    const int64_t B = 2, T = 32, D = 64, H = 8;
    const Tensor x = randn({B, T, D}, rng);
    ctx.shape("x", x, "[B=2, T=32, D=64]");
    Table t;
    t.columns = {"H_kv", "g", "K_heads", "V_heads", "out", "K+V floats", "of multi-head", "W_k+W_v params"};
    t.formats = {"{}", "{}", "{}", "{}", "{}", "{}", "{:.3f}", "{}"};
    std::vector<Shape> out_shapes;
    std::vector<double> kv_floats, fractions;
    for (int64_t Hkv : {8, 2, 1}) {
        MhaConfig cfg{D, H};
        cfg.kv_heads = Hkv;
        MultiHeadAttention mha(cfg);
        Rng w = ctx.rng(180);  // the same seed for every H_kv
        mha.init(InitSpec{}, w);
        ForwardRecord rec;
        mha.forward(x, Mask::make_causal(), AttentionOptions{}, &rec);
        const double kv = double(rec.K.numel() + rec.V.numel());
        kv_floats.push_back(kv);
        fractions.push_back(kv / kv_floats.front());
        out_shapes.push_back(rec.out.shape);
        t.add({Hkv, H / Hkv, shape_str(rec.K.shape), shape_str(rec.V.shape), shape_str(rec.out.shape), kv,
               kv / kv_floats.front(), mha.k_proj.W.numel() + mha.v_proj.W.numel()});
    }
    ctx.table("gqa_shapes", t);
    ctx.figure("kv_fraction", fractions);
    ctx.identity(out_shapes[0] == out_shapes[1] && out_shapes[1] == out_shapes[2], "C29",
              ctx.f("the output has the same shape {} whatever H_kv: the layer is a drop-in replacement",
                    shape_str(out_shapes[0])));
    ctx.identity(fractions[1] == 2.0 / 8.0 && fractions[2] == 1.0 / 8.0, "C40",
              ctx.f("K and V shrink to H_kv/H of multi-head: {} with 2 kv heads, {} with 1 (counted from the "
                    "tensors)",
                    g3(fractions[1]), g3(fractions[2])));
}

void sharing_is_repeating_kv_heads(LessonContext& ctx, Rng& rng) {
    ctx.section("What sharing means: each kv head repeated g times");
    ctx.para("Query head h reads kv head h / g. That is exactly multi-head attention on K and V whose heads were "
             "copied g times in a row (PyTorch's scaled_dot_product_attention(..., enable_gqa=True) is defined that "
             "way). GQA never materialises the copies: the kernel just indexes the shared head.");
    const Tensor q = randn({1, 8, 16, 8}, rng), k = randn({1, 2, 16, 8}, rng), v = randn({1, 2, 16, 8}, rng);
    ctx.shape("q", q, "[B, H=8, T, Dk]");
    ctx.shape("k, v", k, "[B, H_kv=2, T, Dk]");
    const Tensor gqa = attention_reference(q, k, v, Mask::make_causal(), AttentionOptions{});
    const Tensor rep =
        attention_reference(q, repeat_heads(k, 4), repeat_heads(v, 4), Mask::make_causal(), AttentionOptions{});
    const Tensor fl = attention_flash(q, k, v, Mask::make_causal(), AttentionOptions{}, 1);
    ctx.shape("out", gqa, "[B, H=8, T, Dv]: one output per query head, as multi-head");
    const double d_rep = max_abs_diff(gqa, rep), d_fl = max_abs_diff(fl, gqa);
    ctx.figure("gqa_vs_repeated", d_rep);
    ctx.identity(d_rep == 0.0, "C29",
                 "GQA equals multi-head attention on K, V repeated 4× (max |diff| = 0: the same arithmetic)");
    ctx.identity(d_fl < 1e-5, "", ctx.f("the tiled kernel, which indexes the shared head, agrees ({})", e2(d_fl)));
}

void what_it_saves_in_the_cache(LessonContext& ctx) {
    ctx.section("What it saves in a decoder's cache");
    ctx.para("Per token and layer the cache holds K and V: 2 · H_kv · Dk floats. For a decoder of 32 layers with "
             "32 query heads of Dk = 128 (the shape of several 7-billion-parameter models), in float16:");
    Table c;
    c.columns = {"H_kv", "bytes per token", "cache at T = 4096", "cache at T = 32768"};
    std::vector<double> per_token;
    // a size ("64.0 KiB") reads the same in every language: made through ctx.f, the cell is not looked up
    const auto bytes_cell = [&ctx](double bytes) { return ctx.f("{}", format_bytes(bytes)); };
    for (int64_t Hkv : {32, 8, 1}) {
        const double bytes = 2.0 * 32 * double(Hkv) * 128 * 2;  // K and V, layers, heads, Dk, 2 bytes
        per_token.push_back(bytes);
        c.add({Hkv, bytes_cell(bytes), bytes_cell(bytes * 4096), bytes_cell(bytes * 32768)});
    }
    ctx.predict("kv_cache_gib_4096", "32 layers, 32 key/value heads of Dk = 128, float16: how many GiB does the KV "
                "cache of one sequence take at T = 4096?", per_token[0] * 4096 / (1024.0 * 1024.0 * 1024.0));
    ctx.table("kv_cache", c);
    ctx.figure("kv_cache_bytes_per_token", per_token);
    ctx.identity(per_token[0] / per_token[1] == 4.0 && per_token[0] / per_token[2] == 32.0, "C40",
              ctx.f("8 kv heads need a quarter of the cache of 32 ({} vs {} per token); one needs 1/32",
                    format_bytes(per_token[1]), format_bytes(per_token[0])));
    ctx.para("The queries, the scores and the output are unchanged in size: the (T, T) score matrix per query head "
             "(C40) stays. What GQA buys is cache memory and the bandwidth of reading it at every generated token. "
             "What it costs is capacity: fewer distinct keys and values per layer. How much quality that loses is a "
             "property of trained models, which this lesson does not measure. Try it: "
             "attn forward --heads 8 --kv-heads 2 --trace shows K and V with 2 heads.");
}

void run(LessonContext& ctx) {
    Rng rng = ctx.rng(18);  // x of the first section, then q, k, v of the second
    fewer_kv_heads_than_query_heads(ctx, rng);
    sharing_is_repeating_kv_heads(ctx, rng);
    what_it_saves_in_the_cache(ctx);
    ctx.exercise("gqa");
}

const RegisterLesson reg{{"gqa", "GQA and MQA: fewer key/value heads",
                          "grouped-query and multi-query attention: same output shapes, a fraction of the K/V bytes",
                          {"C29", "C40"}, false, run, Part::advanced, /*minutes*/ 4}};

}  // namespace
}  // namespace attn::lessons::lesson18
