// Lesson 7: one attention head end to end, with the source's sizes, and the
// Kᵀ pitfall (C21, C22).
#include "common.hpp"

namespace attn::lessons::lesson07 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

// The first example's own projections: W_q, W_k, W_v drawn as torch.randn(d_model, d_k), entries of
// std 1, with x of std 1: each entry of Q and K then has variance d_model, and the scaled scores a
// spread of about √(d_model·d_model·d_k)/√d_k = d_model = 16.
void source_weights(LessonContext& ctx, const Tensor& x, int64_t B, int64_t T, int64_t D) {
    Rng r = ctx.rng(70);
    const Tensor Wq = randn({D, D}, r), Wk = randn({D, D}, r);  // [d_model, d_k], as the example draws them
    const Tensor Q = matmul(x, Wq), K = matmul(x, Wk);           // [B, T, 16]
    Tensor s = matmul(Q, transpose_last2(K));
    for (auto& v : s.data) v /= std::sqrt(static_cast<float>(D));
    double m = 0, m2 = 0;
    for (float v : s.data) m += v, m2 += double(v) * v;
    const double n = double(s.numel()), sd = std::sqrt((m2 - m * m / n) / (n - 1));
    softmax_rows(s.ptr(), B * T, T);
    int64_t hot = 0;
    for (int64_t i = 0; i < B * T; ++i) hot += *std::max_element(s.ptr() + i * T, s.ptr() + (i + 1) * T) > 0.99f;
    ctx.figure("source_init_scaled_score_std", sd);
    ctx.figure("source_init_onehot_rows", static_cast<double>(hot) / double(B * T));
    ctx.source_error("C21", "the first example draws W_q, W_k, W_v with torch.randn(d_model, d_k)",
                     ctx.f("gives the right shapes but a head already saturated: with entries of std 1 the scaled "
                           "scores have a spread of {:.1f} (about d_model = {}, where the 1/√Dk scaling aims at 1), "
                           "and {} of the {} rows are one-hot (largest weight above 0.99). The same source warns "
                           "against exactly this, too large a W_q, W_k init (its debugging section, C36). nn.Linear's "
                           "init, used above, keeps the spread near 1.",
                           sd, D, hot, B * T),
                     LessonContext::SourceFlag::slip);
}

constexpr int64_t B = 2, T = 6, D = 16;

// The head both sections read: x and its projections (drawn from one generator, which the second
// section keeps drawing from), and each step of the head computed by hand.
struct OneHead {
    Rng rng;
    Tensor x;  // [B, T, D]
    Linear wq{D, D}, wk{D, D}, wv{D, D};
    Tensor Q, K, V, scores, weights, out;  // [B, T, 16], scores and weights [B, T, T]
    float inv = 1.0f / std::sqrt(static_cast<float>(D));
    explicit OneHead(Rng r) : rng(r) { x = randn({B, T, D}, rng); }
};

void the_recipe_step_by_step(LessonContext& ctx, OneHead& h) {
    ctx.section("The recipe, step by step");
    ctx.para("The sizes of the source's first example: a batch of 2 sequences, 6 tokens each, 16 features per "
             "token, and one head with Dk = Dv = 16. We write the head out by hand with plain matrix products, "
             "print every shape, and then ask the library's reference attention for the same thing. The "
             "projections here are nn.Linear's, initialised as PyTorch does (uniform, about 1/√16 in size); the "
             "example's own weights come after, and why we do not use them.");
    const Tensor& x = h.x;  // [B, T, D]
    h.wq.init(InitSpec{}, h.rng);
    h.wk.init(InitSpec{}, h.rng);
    h.wv.init(InitSpec{}, h.rng);
    ctx.shape("x", x, "[B=2, T=6, D=16]");
    h.Q = h.wq.forward(x), h.K = h.wk.forward(x), h.V = h.wv.forward(x);  // [B, T, 16] each
    const Tensor &Q = h.Q, &K = h.K, &V = h.V;
    ctx.shape("Q", Q, "x·W_qᵀ + b_q");
    ctx.shape("K", K, "x·W_kᵀ + b_k");
    ctx.shape("V", V, "x·W_vᵀ + b_v");
    const Tensor Kt = transpose_last2(K);  // [B, 16, T]
    ctx.shape("Kᵀ", Kt, "K.transpose(-2, -1)");
    h.scores = matmul(Q, Kt);  // [B, T, T]
    const Tensor& scores = h.scores;
    ctx.shape("scores", scores, "Q·Kᵀ");
    const float inv = h.inv;
    h.weights = scores;
    Tensor& weights = h.weights;
    for (auto& s : weights.data) s *= inv;
    softmax_rows(weights.ptr(), B * T, T);  // [B, T, T]
    ctx.shape("weights", weights, "softmax(scores / √16, dim=-1)");
    h.out = matmul(weights, V);  // [B, T, 16]
    const Tensor& out = h.out;
    ctx.shape("out", out, "weights·V");
    ctx.identity(Q.shape == Shape({B, T, D}) && scores.shape == Shape({B, T, T}) && weights.shape == Shape({B, T, T}) &&
                  out.shape == Shape({B, T, D}),
              "C21", ctx.f("Q, K, V {} → scores {} → weights {} → out {}, as the source lists", shape_str(Q.shape),
                                 shape_str(scores.shape), shape_str(weights.shape), shape_str(out.shape)));
    ctx.identity(max_sum_error(weights) < 1e-5, "C21",
              ctx.f("every row of weights sums to 1 (max |sum−1| = {})", e2(max_sum_error(weights))));

    auto heads = [&](const Tensor& t) { return t.reshaped({B, 1, T, t.dim(-1)}); };  // [B, 1, T, d]
    AttentionRecord rec;
    const Tensor ref = attention_reference(heads(Q), heads(K), heads(V), Mask::none(), AttentionOptions{}, &rec);
    const double d = max_abs_diff(ref.reshaped({B, T, D}), out);
    ctx.figure("by_hand_vs_reference_max_diff", d);
    // float32 products of 16 terms, summed in a different order: 1e-5 is generous
    ctx.identity(d < 1e-5, "C21", ctx.f("the hand-written head equals attention_reference (max diff {})", e2(d)));
    const std::vector<std::string> tok{"the", "cat", "sat", "on", "the", "mat"};
    ctx.heatmap("weights_batch0",
                make_panel("weights of batch 0 (rows: queries, columns: keys)", weights.ptr(), T, T, tok, tok));
    ctx.para("The tokens are only labels here: x is random, so the pattern means nothing yet. Each row is "
             "one query's weights over the six keys and sums to 1.");
    source_weights(ctx, x, B, T, D);
}

void kt_not_kqt_not_qk(LessonContext& ctx, OneHead& h) {
    const Tensor &Q = h.Q, &K = h.K, &V = h.V, &scores = h.scores, &out = h.out;
    const float inv = h.inv;
    const Linear &wq = h.wq, &wk = h.wk;
    Rng& rng = h.rng;
    ctx.section("Kᵀ, not K Qᵀ, not Q K");
    ctx.para("The scores need Q·Kᵀ: row i holds query i against every key, so softmax over the last "
             "dimension spreads query i's attention over the keys. Swapping the operands, K·Qᵀ, runs without "
             "complaint and returns the transpose: softmax then normalises over queries, which is a different "
             "(wrong) model.");
    const Tensor kq = matmul(K, transpose_last2(Q));  // [B, T, T] = (Q Kᵀ)ᵀ
    ctx.shape("K·Qᵀ", kq);
    const double dt = max_abs_diff(kq, transpose_last2(scores));
    const double dn = max_abs_diff(kq, scores);
    ctx.identity(dt < 1e-5 && dn > 1e-3, "C22",
              ctx.f("K·Qᵀ is the transpose of Q·Kᵀ (max diff {}), not Q·Kᵀ itself (max diff {})", e2(dt), g3(dn)));
    Tensor wrong_w = kq;
    for (auto& s : wrong_w.data) s *= inv;
    softmax_rows(wrong_w.ptr(), B * T, T);
    const double dout = max_abs_diff(matmul(wrong_w, V), out);
    ctx.figure("kqt_output_max_diff", dout);
    ctx.check(dout > 1e-3, "C22", ctx.f("…and the output with K·Qᵀ differs from the right one by up to {}", g3(dout)));
    ctx.source_error("C22", claim_text("C22"),
                     ctx.f("stands, but the first article's debugging section says the swapped product, "
                           "torch.bmm(K, Q.transpose(-2, -1)), gives a completely wrong shape. Its shape is the "
                           "right one, {} ([B, T, T]); what is wrong is its values, the transpose of the scores "
                           "(above). That is what makes the slip dangerous: no shape check sees it.",
                           shape_str(kq.shape)),
                     LessonContext::SourceFlag::slip);
    ctx.para("Forgetting the transpose altogether, Q·K, multiplies [6, 16] by [6, 16]: the inner sizes "
             "differ and the product is refused.");
    std::string err;
    try {
        matmul(Q, K);
    } catch (const ShapeError& e) {
        err = e.what();
    }
    ctx.code("Q · K\n-> ShapeError: " + err);
    ctx.identity(!err.empty(), "C22", "Q·K without the transpose raises a shape error");
    ctx.para("That error is luck: it only happens because T ≠ Dk. With T = Dk = 16 the same bug runs and "
             "returns numbers:");
    const Tensor x16 = randn({1, D, D}, rng);  // [1, 16, 16]: T = 16 tokens
    const Tensor Q16 = wq.forward(x16), K16 = wk.forward(x16);
    ctx.shape("Q, K (T = 16)", Q16);
    const Tensor silent = matmul(Q16, K16);  // no error: [1, 16, 16]
    const double ds = max_abs_diff(silent, matmul(Q16, transpose_last2(K16)));
    ctx.figure("silent_qk_max_diff", ds);
    ctx.check(
        silent.shape == Shape({1, D, D}) && ds > 1e-3, "C22,C35",
        ctx.f("with T = Dk, Q·K runs and returns a [1, 16, 16] tensor that differs from Q·Kᵀ by up to {}", g3(ds)));
    ctx.para("A shape assertion cannot catch this one: with T = Dk the wrong product has the right shape. "
             "What catches it is a test whose sizes all differ (T ≠ Dk, where Q·K is refused, as above) and a "
             "comparison of the values with a reference.");
}

void run(LessonContext& ctx) {
    OneHead h(ctx.rng(7));
    the_recipe_step_by_step(ctx, h);
    kt_not_kqt_not_qk(ctx, h);
    ctx.exercise("one-head");
}

const RegisterLesson reg{{"one-head", "One head, end to end",
                          "the source's B=2, T=6, D=16 example with every shape; the Kᵀ pitfall",
                          {"C21", "C22", "C35"}, true, run, Part::core, /*minutes*/ 5}};

}  // namespace
}  // namespace attn::lessons::lesson07
