// Lesson 21: the KV cache. Why causal attention can be computed one token at a
// time (row t of a causal layer reads only tokens <= t, and key j depends on
// token j alone), what the cache holds as T grows, what it saves in work and
// what it costs in memory, and how sharing K/V heads (GQA, MQA) shrinks it.
// Beyond the source material, which stops at the causal mask (C24).
#include "common.hpp"

namespace attn::lessons::lesson21 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

constexpr int64_t B = 1, T = 10, D = 16, H = 4, L = 2;

Tensor token(const Tensor& x, int64_t t) {
    Tensor out(Shape{x.dim(0), 1, x.dim(2)});
    for (int64_t b = 0; b < x.dim(0); ++b)
        for (int64_t d = 0; d < x.dim(2); ++d) out.at({b, 0, d}) = x.at({b, t, d});
    return out;
}

// A size ("64.0 KiB") reads the same in every language: made through ctx.f, the cell is not looked up.
std::string bytes_cell(LessonContext& ctx, double bytes) { return ctx.f("{}", format_bytes(bytes)); }

// Decodes x token by token against a cache, each step held to row t of the full causal pass, which
// it leaves in `full` (one output per layer); returns the cache after the T tokens.
KvCache row_t_reads_only_its_past(LessonContext& ctx, const CausalDecoder& dec, const Tensor& x,
                                  const AttentionOptions& opt, std::vector<Tensor>& full) {
    ctx.section("Row t of a causal layer reads tokens 0..t only");
    ctx.para("A decoder writes text one token at a time: to choose token t+1 it runs on tokens 0..t. Run the "
             "whole prefix again at every step and the work grows with the square of the length, most of it "
             "repeated. The causal mask (lesson 8) says why it need not be: query t sees keys j ≤ t only, and "
             "in the first layer key j = x_j·W_kᵀ + b_k depends on token j alone; in a later layer it depends on "
             "tokens 0..j, through the causal attention below it, and on nothing after j (values likewise). "
             "So when token t arrives, the keys "
             "and values of tokens 0..t-1 are exactly what they were at the previous step. Keep them — the KV "
             "cache — and each step computes one query, one key and one value per layer and head, appends the "
             "key and value, and attends over the cache. No mask is needed: the cache holds exactly the keys "
             "query t may see.");
    (void)dec.forward(x, opt, &full);
    KvCache cache = dec.make_cache(B);
    Table growth{{"step t", "K cache per layer", "V cache per layer", "cache bytes", "max |step − full|"},
                 {"{}", "{}", "{}", "{}", "{:.1e}"},
                 {}};
    double worst = 0, scale = 0;
    for (int64_t t = 0; t < T; ++t) {
        std::vector<Tensor> step;
        (void)dec.step(token(x, t), cache, opt, &step);
        double d = 0;
        for (int64_t l = 0; l < L; ++l)
            for (int64_t k = 0; k < D; ++k) {
                const double want = full[static_cast<size_t>(l)].at({0, t, k});
                d = std::max(d, std::fabs(double(step[static_cast<size_t>(l)].at({0, 0, k})) - want));
                scale = std::max(scale, std::fabs(want));
            }
        worst = std::max(worst, d);
        growth.add({t, shape_str(cache.keys(0).shape), shape_str(cache.values(0).shape),
                    bytes_cell(ctx, cache.bytes()), d});
    }
    ctx.shape("x", x, "[B, T, D]: T token vectors");
    ctx.shape("x_t", Shape{B, 1, D}, "one token per step");
    ctx.table("cache_growth", growth);
    ctx.figure("max_abs_diff", worst);
    // Same sums grouped differently (one token's products instead of the sequence's GEMM): float32
    // rounding, a few ulps of values of size `scale`.
    ctx.identity(worst <= 1e-5 * std::max(1.0, scale), "C24",
              ctx.f("every step, in both layers, equals row t of the full causal pass (max |diff| {} for values "
                    "up to {})",
                    e2(worst), g3(scale)));
    return cache;
}

void the_check_can_fail(LessonContext& ctx, const CausalDecoder& dec, const Tensor& x, const AttentionOptions& opt,
                        const std::vector<Tensor>& full) {
    ctx.section("The check can fail");
    ctx.para("Equality is not automatic. Skip one token — decode token 0, then token 2, as a cache that lost "
             "a row would — and token 2's output is that of another sequence.");
    KvCache lossy = dec.make_cache(B);
    (void)dec.step(token(x, 0), lossy, opt);
    const Tensor y2 = dec.step(token(x, 2), lossy, opt);
    double off = 0;
    for (int64_t k = 0; k < D; ++k)
        off = std::max(off, std::fabs(double(y2.at({0, 0, k})) - full.back().at({0, 2, k})));
    ctx.check(off > 1e-3, "C24", ctx.f("with token 1's key and value missing, token 2 moves by {}", g3(off)));
}

void what_the_cache_saves(LessonContext& ctx, const CausalDecoder& dec) {
    ctx.section("What the cache saves");
    ctx.para("Count the attention work (score and weighted-sum multiply-adds, attention_flops) of producing T "
             "tokens. Without a cache, step t reruns the causal pass over t+1 tokens; with it, step t is one "
             "query over t+1 keys. (The projections save the same way: one token instead of t+1.)");
    Table work{{"T", "no cache (FLOPs)", "with cache (FLOPs)", "ratio"}, {"{}", "{:.3g}", "{:.3g}", "{:.1f}"}, {}};
    const int64_t Dk = dec.config().d_k, Dv = dec.config().d_v;
    double last_ratio = 0, first_ratio = 0;
    for (int64_t n : {16, 128, 1024}) {
        double redo = 0, cached = 0;
        for (int64_t t = 0; t < n; ++t) {
            redo += attention_flops(B, H, t + 1, t + 1, Dk, Dv, Mask::make_causal());
            cached += attention_flops(B, H, 1, t + 1, Dk, Dv, Mask::none());
        }
        const double ratio = redo / cached;
        if (first_ratio == 0) first_ratio = ratio;
        last_ratio = ratio;
        work.add({n, L * redo, L * cached, ratio});
    }
    ctx.predict("cache_saving_1024", "producing T = 1024 tokens one at a time: how many times less attention work "
                "(score and weighted-sum FLOPs) does the cache need than rerunning the causal pass at every step?",
                last_ratio);
    ctx.table("work", work);
    ctx.identity(last_ratio > 10 * first_ratio, "",
              ctx.f("the saving grows with T: {}x at T = 16, {}x at T = 1024", g3(first_ratio), g3(last_ratio)));
}

void what_it_costs_in_memory(LessonContext& ctx, const CausalDecoder& dec, const KvCache& cache) {
    const int64_t Dk = dec.config().d_k, Dv = dec.config().d_v;
    ctx.section("What it costs: memory");
    ctx.para("The cache keeps, per layer, K [B, H_kv, T, Dk] and V [B, H_kv, T, Dv]: bytes = layers × B × "
             "H_kv × T × (Dk + Dv) × bytes per value, growing linearly with every token of every sequence. "
             "Multi-head attention has H_kv = H. Grouped-query attention lets g query heads share one key/value "
             "head (H_kv = H / g), multi-query attention keeps a single one (H_kv = 1): the same output shapes "
             "for a fraction of the cache.");
    double held = 0;  // what the cache really holds: every float of every layer's K and V
    for (int64_t l = 0; l < L; ++l) held += 4.0 * static_cast<double>(cache.keys(l).numel() + cache.values(l).numel());
    ctx.identity(held == kv_cache_bytes(L, B, H, T, Dk, Dv), "",
              ctx.f("this lesson's cache after {} tokens: {} = {} × {} × {} × {} × ({} + {}) × 4", T,
                    format_bytes(held), L, B, H, T, Dk, Dv));
    ctx.para("For a decoder of 32 layers, 32 heads of 128 dims, float16, one sequence:");
    Table mem{{"T", "H_kv = 32 (MHA)", "H_kv = 8 (GQA, g = 4)", "H_kv = 1 (MQA)"}, {"{}", "{}", "{}", "{}"}, {}};
    for (int64_t n : {1024, 4096, 32768})
        mem.add({n, bytes_cell(ctx, kv_cache_bytes(32, 1, 32, n, 128, 128, 2)),
                 bytes_cell(ctx, kv_cache_bytes(32, 1, 8, n, 128, 128, 2)),
                 bytes_cell(ctx, kv_cache_bytes(32, 1, 1, n, 128, 128, 2))});
    ctx.table("memory", mem);
    const double mha = kv_cache_bytes(32, 1, 32, 4096, 128, 128, 2), gqa = kv_cache_bytes(32, 1, 8, 4096, 128, 128, 2);
    ctx.figure("bytes_mha_4096", mha);
    ctx.figure("bytes_gqa8_4096", gqa);
    ctx.identity(mha == 4 * gqa, "",
              ctx.f("at T = 4096: {} with 32 K/V heads, {} with 8 (a quarter)", format_bytes(mha), format_bytes(gqa)));
}

void run(LessonContext& ctx) {
    DecoderConfig cfg;
    cfg.d_model = D;
    cfg.heads = H;
    cfg.layers = L;
    const CausalDecoder dec(cfg, InitSpec{}, ctx.seed() + 21);
    Rng rng = ctx.rng(21);
    const Tensor x = randn({B, T, D}, rng);
    const AttentionOptions opt;
    std::vector<Tensor> full;
    const KvCache cache = row_t_reads_only_its_past(ctx, dec, x, opt, full);
    the_check_can_fail(ctx, dec, x, opt, full);
    what_the_cache_saves(ctx, dec);
    what_it_costs_in_memory(ctx, dec, cache);
    ctx.exercise("kv-step");
}

const RegisterLesson reg{
    {"kv-cache",
     "The KV cache",
     "why causal attention runs one token at a time, what the cache holds, saves and costs (GQA, MQA)",
     {"C24"},
     false,
     run,
     Part::advanced,
     /*minutes*/ 4}};

}  // namespace
}  // namespace attn::lessons::lesson21
