// Lesson 17: positional information. Attention alone is blind to order (permute the
// tokens and the outputs permute with them); sinusoidal and learned positions; an
// encoder trained on an order-dependent task with and without them (C4).
#include "common.hpp"

#include "attn/experiments/positions.hpp"
#include "attn/nn/ops.hpp"

namespace attn::lessons::lesson17 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

// x (T, D) row-major -> q, k, v (1, 1, T, D) through three random projections.
struct Qkv {
    Tensor q, k, v;
};
Qkv project(const std::vector<float>& x, const Tensor& wq, const Tensor& wk, const Tensor& wv, int64_t T, int64_t D) {
    const Tensor xt = Tensor::from({1, 1, T, D}, x);
    return {matmul(xt, wq), matmul(xt, wk), matmul(xt, wv)};
}

constexpr int64_t T = 6, D = 8;  // the tokens the first two sections shuffle
const std::vector<int64_t> kPerm = {3, 0, 5, 1, 4, 2};

// x [T, D], the shuffled copy (row i is x[perm[i]]) and the three projections.
struct Shuffled {
    Tensor x;
    std::vector<float> xp;
    Tensor wq, wk, wv;
};

// The largest difference between row i of op and row perm[i] of o.
double perm_err(const Tensor& o, const Tensor& op) {
    const std::vector<int64_t>& perm = kPerm;
    double e = 0;
    for (int64_t i = 0; i < T; ++i)
        for (int64_t c = 0; c < D; ++c)
            e = std::max(e, double(std::fabs(op.data[static_cast<size_t>(i * D + c)] -
                                             o.data[static_cast<size_t>(perm[static_cast<size_t>(i)] * D + c)])));
    return e;
}

// Returns the tokens, their shuffled copy and the projections, which the positions reuse.
Shuffled order_is_invisible(LessonContext& ctx) {
    ctx.section("Attention does not see order");
    ctx.para("Self-attention mixes the value rows with weights that depend only on query-key dot products. "
             "Nothing in it says which token came first: shuffle the tokens and every token meets the same "
             "partners with the same scores, so each output row is the same as before, only at its new place. "
             "Attention is permutation-equivariant; any two tokens interact directly whatever their distance "
             "(C4), and that cuts both ways: distance is simply not visible.");
    Rng rng = ctx.rng(17);
    const Tensor x = randn({T, D}, rng);
    const Tensor wq = randn({1, 1, D, D}, rng, 0.35f), wk = randn({1, 1, D, D}, rng, 0.35f),
                 wv = randn({1, 1, D, D}, rng, 0.35f);
    const std::vector<int64_t>& perm = kPerm;
    std::vector<float> xp(static_cast<size_t>(T * D));
    for (int64_t i = 0; i < T; ++i)
        for (int64_t e = 0; e < D; ++e)
            xp[static_cast<size_t>(i * D + e)] = x.data[static_cast<size_t>(perm[static_cast<size_t>(i)] * D + e)];
    const Qkv a = project(x.data, wq, wk, wv, T, D), b = project(xp, wq, wk, wv, T, D);
    ctx.shape("x", Shape{T, D}, "6 tokens, d_model 8");
    ctx.shape("x shuffled", Shape{T, D}, "row i is x[perm[i]], perm = 3 0 5 1 4 2");
    const Tensor out = attention_reference(a.q, a.k, a.v, Mask::none(), {});
    const Tensor outp = attention_reference(b.q, b.k, b.v, Mask::none(), {});
    ctx.shape("out", out, "softmax(q kᵀ/√8) v, no mask");
    const double e_plain = perm_err(out, outp);
    Table t;
    t.columns = {"row i of out(shuffled x)", "equals row perm[i] of out(x)", "largest |difference|"};
    for (int64_t i = 0; i < 3; ++i) {
        double e = 0;
        for (int64_t c = 0; c < D; ++c)
            e = std::max(e, double(std::fabs(outp.data[static_cast<size_t>(i * D + c)] -
                                             out.data[static_cast<size_t>(perm[static_cast<size_t>(i)] * D + c)])));
        t.add({i, perm[static_cast<size_t>(i)], e});
    }
    ctx.table("permuted_rows", t);
    // float sums in another order: a few ulps of values of size ~1
    ctx.identity(e_plain < 1e-5, "C4",
              ctx.f("shuffling the tokens shuffles the output rows the same way (largest difference {}, float "
                    "rounding)",
                    e2(e_plain)));
    ctx.figure("equivariance_error", e_plain);
    const Tensor outc = attention_reference(a.q, a.k, a.v, Mask::make_causal(), {});
    const Tensor outcp = attention_reference(b.q, b.k, b.v, Mask::make_causal(), {});
    const double e_causal = perm_err(outc, outcp);
    ctx.para(ctx.f("A causal mask is the one exception: it is itself a statement about order (token i sees "
                   "keys 0..i), and with it the shuffled outputs differ by up to {:.3f}. A decoder can infer "
                   "some position from the mask alone; an encoder cannot.",
                   e_causal));
    return {x, xp, wq, wk, wv};
}

// Returns the sinusoidal table PE [16, D].
std::vector<double> sinusoids_rotate(LessonContext& ctx) {
    ctx.section("Sinusoidal positions");
    ctx.para("The fix is to add a position vector to each token's embedding before the first layer. Vaswani et al. "
             "use fixed sinusoids: PE[t, 2i] = sin(t/10000^(2i/D)), PE[t, 2i+1] = cos(t/10000^(2i/D)). Each pair "
             "of columns is a point on a circle turning at its own speed, so moving k positions on is the same "
             "rotation for every t: the model can read a relative offset with a linear map.");
    const int64_t Tp = 16;
    std::vector<double> pe(static_cast<size_t>(Tp * D));
    nn::sinusoidal_positions(pe.data(), Tp, D);
    Table pt;
    pt.columns = {"t", "PE[t,0]", "PE[t,1]", "PE[t,2]", "PE[t,3]", "PE[t,6]", "PE[t,7]"};
    for (int64_t tt = 0; tt < 5; ++tt) {
        const double* r = pe.data() + tt * D;
        pt.add({tt, r[0], r[1], r[2], r[3], r[6], r[7]});
    }
    ctx.table("sinusoidal", pt);
    // rotation property and "dot product depends on the offset only"
    const int64_t k = 3;
    double rot_err = 0, dot_spread = 0;
    std::vector<double> dots;
    for (int64_t tt = 0; tt + k < Tp; ++tt) {
        double d = 0;
        for (int64_t i = 0; i < D / 2; ++i) {
            const double w = 1.0 / std::pow(10000.0, 2.0 * double(i) / double(D));
            const double s = pe[static_cast<size_t>(tt * D + 2 * i)], c = pe[static_cast<size_t>(tt * D + 2 * i + 1)];
            const double s2 = std::sin(w * double(k)) * c + std::cos(w * double(k)) * s;
            const double c2 = std::cos(w * double(k)) * c - std::sin(w * double(k)) * s;
            rot_err = std::max({rot_err, std::fabs(s2 - pe[static_cast<size_t>((tt + k) * D + 2 * i)]),
                                std::fabs(c2 - pe[static_cast<size_t>((tt + k) * D + 2 * i + 1)])});
        }
        for (int64_t e = 0; e < D; ++e)
            d += pe[static_cast<size_t>(tt * D + e)] * pe[static_cast<size_t>((tt + k) * D + e)];
        dots.push_back(d);
    }
    dot_spread = *std::max_element(dots.begin(), dots.end()) - *std::min_element(dots.begin(), dots.end());
    ctx.identity(rot_err < 1e-12 && dot_spread < 1e-12, "C4",
              ctx.f("PE[t+3] is PE[t] rotated by a fixed angle per column pair (largest error {}); "
                    "PE[t]·PE[t+3] = {:.4f} for every t (spread {})",
                    e2(rot_err), dots[0], e2(dot_spread)));
    return pe;
}

// x + PE: the shuffled sentence now gives different outputs.
void positions_break_the_symmetry(LessonContext& ctx, const Shuffled& sh, const std::vector<double>& pe) {
    const Tensor &wq = sh.wq, &wk = sh.wk, &wv = sh.wv;
    std::vector<float> xpos(sh.x.data), xpos_p(sh.xp);
    for (int64_t i = 0; i < T; ++i)
        for (int64_t e = 0; e < D; ++e) {
            xpos[static_cast<size_t>(i * D + e)] += static_cast<float>(pe[static_cast<size_t>(i * D + e)]);
            xpos_p[static_cast<size_t>(i * D + e)] += static_cast<float>(pe[static_cast<size_t>(i * D + e)]);
        }
    const Qkv c1 = project(xpos, wq, wk, wv, T, D), c2 = project(xpos_p, wq, wk, wv, T, D);
    const double e_pos = perm_err(attention_reference(c1.q, c1.k, c1.v, Mask::none(), {}),
                                  attention_reference(c2.q, c2.k, c2.v, Mask::none(), {}));
    ctx.check(e_pos > 1e-2, "C4",
              ctx.f("with x + PE, the shuffled sentence gives different outputs (largest difference {:.3f}): "
                    "order is now visible",
                    e_pos));
    ctx.para("Learned positions are the other common choice (BERT, GPT-2): a trainable table (T_max, D), one row "
             "per position, added the same way. They can fit whatever the task needs, but there is no row for a "
             "position past T_max, and each row is learned only from the examples that reach it.");
}

void trained_with_and_without(LessonContext& ctx) {
    ctx.section("Trained with and without positions");
    ctx.para("An encoder (no causal mask) learns to reverse 6 symbols: x1..x6 SEP [MASK]x6 -> x6..x1 at the "
             "[MASK] positions. Without positions, every [MASK] position holds the same token and sees the same "
             "set of keys, so all six get the same output: at most one answer per row can be right. Trained live "
             "below (2 layers, 2 seeds, the quick size of `attn experiment distance`).");
    ctx.busy("training: encoders with and without positions, 2 seeds");
    const PositionsResult pr = run_positions(ExperimentSize::Quick, 2, ctx.seed(), 2);
    ctx.idle();
    Table rt;
    rt.columns = {"positions", "held-out accuracy (mean of 2 seeds)", "steps"};
    rt.formats = {"", "{:.3f}", "{}"};
    double none = 0, best = 0;
    for (const PositionsRun& r : pr.runs) {
        double m = 0;
        for (double a : r.final_acc) m += a / double(r.final_acc.size());
        rt.add({pos_kind_name(r.pos), m, pr.steps});
        if (r.pos == PosKind::None) none = m;
        else best = std::max(best, m);
        ctx.figure(std::string("acc_") + pos_kind_name(r.pos), m);
    }
    ctx.table("trained", rt);
    ctx.identity(pr.equivariance_max_diff < 1e-5, "C4",
              ctx.f("the untrained encoder without positions is equivariant (weights of a shuffled row "
                    "differ by {})",
                    e2(pr.equivariance_max_diff)));
    ctx.check(none <= pr.equivariant_ceiling + 1e-9 && best > 0.8, "C4",
              ctx.f("without positions the reverse task stays at or below what one answer per row allows "
                    "({:.3f} <= {:.3f}; chance {:.3f}); with positions it reaches {:.3f}",
                    none, pr.equivariant_ceiling, pr.chance, best));
    ctx.para("The full comparison, with more seeds and steps, and an RNN against one attention layer on "
             "\"output the token d steps back\": attn experiment distance.");
}

void run(LessonContext& ctx) {
    const Shuffled sh = order_is_invisible(ctx);
    const std::vector<double> pe = sinusoids_rotate(ctx);
    positions_break_the_symmetry(ctx, sh, pe);
    trained_with_and_without(ctx);
}

const RegisterLesson reg{{"positional", "Positional information",
                          "attention is blind to order; sinusoidal and learned positions; trained with and without",
                          {"C4"}, false, run, Part::core, /*minutes*/ 4}};

}  // namespace
}  // namespace attn::lessons::lesson17
