// Lesson 2: Q, K, V are three linear projections of the same x (C5-C8).
#include "common.hpp"

namespace attn::lessons::lesson02 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

// [B, T, d] -> [B, 1, T, d]: one head, as attention_reference wants it.
Tensor one_head(const Tensor& t) { return t.reshaped({t.dim(0), 1, t.dim(1), t.dim(2)}); }

// The layer every section reads: x, the three projections drawn from one generator (which the
// later sections keep drawing from), and what they make of x.
constexpr int64_t B = 2, T = 4, D = 8, Dk = 4, Dv = 6;
struct Projections {
    Rng rng;
    Tensor x;  // [B, T, D]
    Linear q_proj{D, Dk}, k_proj{D, Dk}, v_proj{D, Dv};
    Tensor Q, K, V;  // [B, T, Dk], [B, T, Dk], [B, T, Dv]
    explicit Projections(Rng r) : rng(r) { x = randn({B, T, D}, rng); }
};

void three_projections(LessonContext& ctx, Projections& p) {
    ctx.section("Three projections of one x");
    ctx.para("In self-attention the questions, the labels and the contents all come from the same tokens. "
             "Each token's vector x is multiplied by three learned matrices: Q = x·W_qᵀ + b_q asks, "
             "K = x·W_kᵀ + b_k is asked, V = x·W_vᵀ + b_v is what gets passed along. x has shape "
             "[B, T, D]: B sequences of T tokens with D features each.");
    const Tensor& x = p.x;  // [B, T, D]
    ctx.shape("x", x, "[B=2, T=4, D=8]");
    Linear &q_proj = p.q_proj, &k_proj = p.k_proj, &v_proj = p.v_proj;
    q_proj.init(InitSpec{}, p.rng);
    k_proj.init(InitSpec{}, p.rng);
    v_proj.init(InitSpec{}, p.rng);
    ctx.shape("W_q", q_proj.W, "[out=Dk, in=D]");
    ctx.shape("b_q", q_proj.b, "[Dk]");
    ctx.shape("W_k", k_proj.W, "[Dk, D]");
    ctx.shape("W_v", v_proj.W, "[out=Dv, in=D]");
    p.Q = q_proj.forward(x), p.K = k_proj.forward(x), p.V = v_proj.forward(x);  // [B,T,Dk] [B,T,Dk] [B,T,Dv]
    const Tensor &Q = p.Q, &K = p.K, &V = p.V;
    ctx.shape("Q", Q, "x·W_qᵀ + b_q");
    ctx.shape("K", K, "x·W_kᵀ + b_k");
    ctx.shape("V", V, "x·W_vᵀ + b_v");
    ctx.identity(Q.shape == Shape({B, T, Dk}) && K.shape == Shape({B, T, Dk}) && V.shape == Shape({B, T, Dv}), "C5",
              ctx.f("Q {} and K {} end in Dk = {}, V {} in Dv = {}", shape_str(Q.shape), shape_str(K.shape), Dk,
                          shape_str(V.shape), Dv));
}

void linear_stores_out_in(LessonContext& ctx, const Projections& p) {
    const Tensor &x = p.x, &Q = p.Q;
    const Linear& q_proj = p.q_proj;
    ctx.section("nn.Linear stores W as [out, in]");
    ctx.para("PyTorch's nn.Linear(in_features, out_features) keeps its weight as [out, in] and computes "
             "x·Wᵀ + b. So W_q above is [4, 8], not [8, 4], and a hand-written x·W would fail on the shapes "
             "(or, for a square W, silently use the transpose). attn's Linear follows the same convention; "
             "here is Q recomputed by hand, as x·Wᵀ + b, with a plain matrix product.");
    Tensor manual = matmul(x, transpose_last2(q_proj.W));  // [B,T,D] @ [D,Dk] -> [B,T,Dk]
    for (int64_t i = 0; i < manual.numel() / Dk; ++i)
        for (int64_t j = 0; j < Dk; ++j)
            manual.data[static_cast<size_t>(i * Dk + j)] += q_proj.b.data[static_cast<size_t>(j)];
    ctx.shape("W_qᵀ", transpose_last2(q_proj.W), "[in, out]");
    ctx.shape("x·W_qᵀ + b_q", manual, "by hand");
    const double d_manual = max_abs_diff(manual, Q);
    ctx.figure("linear_manual_max_diff", d_manual);
    ctx.identity(q_proj.W.shape == Shape({Dk, D}) && d_manual < 1e-5, "C7",
              ctx.f("W_q is [out, in] = {} and x·Wᵀ + b matches Linear.forward (max diff {})",
                          shape_str(q_proj.W.shape), e2(d_manual)));
    std::string err;
    try {
        matmul(x, q_proj.W);  // [B,T,8] @ [4,8]: the wrong orientation
    } catch (const ShapeError& e) {
        err = e.what();
    }
    ctx.code(ctx.tr("x · W_q   (forgetting the transpose)") + "\n-> ShapeError: " + err);
    ctx.identity(!err.empty(), "C7", "x·W without the transpose is refused with a shape error");
}

// The one-head attention of Q, K and V, whose weights the biases section compares against.
AttentionRecord only_q_and_k_agree(LessonContext& ctx, Projections& p) {
    const Tensor &x = p.x, &Q = p.Q, &K = p.K, &V = p.V;
    Rng& rng = p.rng;
    ctx.section("Only Q and K must agree");
    ctx.para("A score is a dot product of one query with one key, so Q and K need the same last dimension Dk. "
             "V is never dotted with anything: the weights only say how much of each value row to take, so "
             "Dv is free. Here Dk = 4 and Dv = 6; the output of attention has Dv columns.");
    AttentionRecord rec;
    const Tensor out =
        attention_reference(one_head(Q), one_head(K), one_head(V), Mask::none(), AttentionOptions{}, &rec);
    ctx.shape("Q (one head)", one_head(Q), "[B, H=1, T, Dk]");
    ctx.shape("scores", rec.scores_raw, "Q·Kᵀ: [B, H, T, T]");
    ctx.shape("weights", rec.weights, "softmax(scores / √Dk)");
    ctx.shape("out", out, "weights·V: [B, H, T, Dv]");
    ctx.identity(out.dim(-1) == Dv && Dv != Dk, "C6",
              ctx.f("with Dk = {} and Dv = {} the output is {}: its width is Dv", Dk, Dv, shape_str(out.shape)));
    Linear k_bad(D, Dk + 1);
    k_bad.init(InitSpec{}, rng);
    const Tensor K5 = k_bad.forward(x);  // [B, T, Dk+1]
    ctx.shape("K' (Dk = 5)", K5, "a key projection that disagrees with Q");
    std::string err2;
    try {
        attention_reference(one_head(Q), one_head(K5), one_head(V), Mask::none(), AttentionOptions{});
    } catch (const ShapeError& e) {
        err2 = e.what();
    }
    ctx.code("attention(Q [.., 4], K' [.., 5], V)\n-> ShapeError: " + err2);
    ctx.identity(!err2.empty(), "C6", "a Dk mismatch between Q and K is refused with a shape error");
    return rec;
}

void the_biases(LessonContext& ctx, const Projections& p, const AttentionRecord& rec) {
    const Tensor &x = p.x, &Q = p.Q, &K = p.K, &V = p.V;
    const Linear &q_proj = p.q_proj, &k_proj = p.k_proj;
    ctx.section("The biases: habit, and a bit of math");
    ctx.para("nn.Linear has a bias by default and most implementations keep it on the Q, K, V projections. "
             "One of the three is provably useless, though. K's bias adds q·b_k to every score of a query's "
             "row, the same amount for every key, and softmax ignores a constant added to a whole row. Q's "
             "bias adds b_q·k_j, which differs per key, so it does change the weights. We check both.");
    Linear k_nob = k_proj, q_nob = q_proj;
    for (auto& b : k_nob.b.data) b = 0.0f;
    for (auto& b : q_nob.b.data) b = 0.0f;
    AttentionRecord r_k, r_q;
    attention_reference(one_head(Q), one_head(k_nob.forward(x)), one_head(V), Mask::none(), AttentionOptions{}, &r_k);
    attention_reference(one_head(q_nob.forward(x)), one_head(K), one_head(V), Mask::none(), AttentionOptions{}, &r_q);
    const double dk = max_abs_diff(r_k.weights, rec.weights), dq = max_abs_diff(r_q.weights, rec.weights);
    ctx.figure("weights_change_without_b_k", dk);
    ctx.figure("weights_change_without_b_q", dq);
    ctx.identity(dk < 1e-5, "C8", ctx.f("dropping b_k leaves every weight unchanged (max diff {})", e2(dk)));
    ctx.check(dq > 1e-3, "C8", ctx.f("dropping b_q changes the weights (max diff {})", g3(dq)));
    ctx.qualified("C8", ctx.f("right for Q and V, whose biases are parameters a model may use or not (dropping b_q "
                              "changed the weights by up to {}). For K the maths decides: b_k adds the same q·b_k to "
                              "every score of a row, which softmax ignores, so its {} parameters are dead weight "
                              "(dropping it changed the weights by {}).",
                              g3(dq), k_proj.b.numel(), e2(dk)));
    ctx.para("How the weights start matters too (C9: Xavier or Kaiming, never all zeros, each head drawn "
             "independently); lesson 13 measures it.");
}

void run(LessonContext& ctx) {
    Projections p(ctx.rng(2));
    three_projections(ctx, p);
    linear_stores_out_in(ctx, p);
    const AttentionRecord rec = only_q_and_k_agree(ctx, p);
    the_biases(ctx, p, rec);
}

const RegisterLesson reg{{"qkv", "Q, K and V",
                          "three projections of x with their shapes; nn.Linear's [out, in]; Dv may differ from Dk",
                          {"C5", "C6", "C7", "C8"}, false, run, Part::core, /*minutes*/ 4}};

}  // namespace
}  // namespace attn::lessons::lesson02
