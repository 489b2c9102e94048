// Lesson 19: where positions enter attention: absolute embeddings added to x, RoPE
// (relative position inside q·k) and ALiBi (a distance penalty on the scores).
// Beyond the source; it builds on the direct interaction of C4 and the dot product of C11.
#include "common.hpp"

namespace attn::lessons::lesson19 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// The sinusoidal position vector of position t (d even): sin and cos pairs.
std::vector<double> sinusoid(int64_t t, int64_t d) {
    std::vector<double> p(static_cast<size_t>(d));
    for (int64_t c = 0; c < d / 2; ++c) {
        const double a = double(t) / std::pow(10000.0, 2.0 * double(c) / double(d));
        p[static_cast<size_t>(2 * c)] = std::sin(a);
        p[static_cast<size_t>(2 * c + 1)] = std::cos(a);
    }
    return p;
}

constexpr int64_t T = 24, D = 16;  // the first three sections' positions and width

struct RopeSpread {
    double spread = 0, size = 0;
};

// Draws q, k, v [1, 1, T, D] (q and k are kept for the next section).
void order_is_unknown(LessonContext& ctx, Rng& rng, Tensor& q_out, Tensor& k_out) {
    ctx.section("Attention alone does not know the order");
    ctx.para("Every query scores every key directly, whatever their distance (C4). The flip side: nothing in "
             "softmax(Q·Kᵀ/√Dk)·V says where a key is. Shuffle the keys together with their values and each "
             "query's output is the same weighted mean, summed in another order.");
    const Tensor q = randn({1, 1, T, D}, rng), k = randn({1, 1, T, D}, rng), v = randn({1, 1, T, D}, rng);
    ctx.shape("q, k, v", q, "[B=1, H=1, T=24, Dk=16]");
    std::vector<int64_t> perm(static_cast<size_t>(T));
    for (int64_t i = 0; i < T; ++i) perm[static_cast<size_t>(i)] = (7 * i + 3) % T;  // 7 is coprime to 24
    Tensor kp = k, vp = v;
    for (int64_t j = 0; j < T; ++j) {
        std::copy_n(k.ptr() + perm[static_cast<size_t>(j)] * D, D, kp.ptr() + j * D);
        std::copy_n(v.ptr() + perm[static_cast<size_t>(j)] * D, D, vp.ptr() + j * D);
    }
    const double d_perm = max_abs_diff(attention_reference(q, kp, vp, Mask::none(), AttentionOptions{}),
                                       attention_reference(q, k, v, Mask::none(), AttentionOptions{}));
    ctx.figure("shuffle_diff", d_perm);
    ctx.identity(d_perm < 1e-5, "C4",
              ctx.f("keys and values shuffled: the output moves by {} (float32 summation order only)", e2(d_perm)));
    ctx.para("So order has to be put in. The original Transformer adds a position vector p_t to each token's x "
             "before the projections. RoPE and ALiBi put it into the score itself.");
    q_out = q, k_out = k;
}

// Returns how far RoPE's scores at one distance spread over all pairs, and their size.
RopeSpread absolute_positions(LessonContext& ctx, const Tensor& q, const Tensor& k) {
    ctx.section("Absolute positions: the score depends on i and j");
    ctx.para("One query vector q and one key vector k, with the sinusoidal p_i added to q at position i and p_j "
             "to k at position j (no projections, to see the effect alone): (q + p_i)·(k + p_j) = q·k + q·p_j + "
             "p_i·k + p_i·p_j. The cross terms depend on i and j separately, so the same distance i − j scores "
             "differently at different places.");
    std::vector<double> q1(q.data.begin(), q.data.begin() + D), k1(k.data.begin(), k.data.begin() + D);
    // RoPE: the library's scores for q1 at every position i and k1 at every position j
    Tensor qs(Shape{1, 1, T, D}), ks(Shape{1, 1, T, D});
    for (int64_t t = 0; t < T; ++t) {
        std::copy_n(q.ptr(), D, qs.ptr() + t * D);
        std::copy_n(k.ptr(), D, ks.ptr() + t * D);
    }
    AttentionOptions rope;
    rope.rope = true;
    AttentionRecord rec;
    attention_reference(qs, ks, ks, Mask::none(), rope, &rec);
    ctx.shape("scores", rec.scores_raw, "RoPE(q)·RoPE(k)ᵀ, q and k the same vector at every position");
    auto absolute = [&](int64_t i, int64_t j) {
        std::vector<double> a = q1, b = k1;
        const std::vector<double> pi = sinusoid(i, D), pj = sinusoid(j, D);
        for (int64_t c = 0; c < D; ++c) a[c] += pi[c], b[c] += pj[c];
        return dot(a, b);
    };
    Table t;
    t.columns = {"i − j", "(i, j)", "absolute: (q+p_i)·(k+p_j)", "RoPE: R_i q · R_j k"};
    t.formats = {"{}", "{}", "{:.4f}", "{:.4f}"};
    double spread_abs = 0, spread_rope = 0, size_rope = 0;
    for (int64_t delta : {0, 1, 3}) {
        double lo_a = INFINITY, hi_a = -INFINITY, lo_r = INFINITY, hi_r = -INFINITY;
        for (int64_t j : {0, 5, 20}) {
            const int64_t i = j + delta;
            const double a = absolute(i, j), r = rec.scores_raw.at({0, 0, i, j});
            lo_a = std::min(lo_a, a), hi_a = std::max(hi_a, a);
            lo_r = std::min(lo_r, r), hi_r = std::max(hi_r, r);
            size_rope = std::max(size_rope, std::fabs(r));
            t.add({delta, ctx.f("({}, {})", i, j), a, r});
        }
        spread_abs = std::max(spread_abs, hi_a - lo_a);
        spread_rope = std::max(spread_rope, hi_r - lo_r);
    }
    // over every pair of the 24 positions, not just the table's
    for (int64_t delta = -(T - 1); delta < T; ++delta) {
        double lo = INFINITY, hi = -INFINITY;
        for (int64_t i = std::max<int64_t>(0, delta); i < std::min(T, T + delta); ++i) {
            const double r = rec.scores_raw.at({0, 0, i, i - delta});
            lo = std::min(lo, r), hi = std::max(hi, r);
            size_rope = std::max(size_rope, std::fabs(r));
        }
        spread_rope = std::max(spread_rope, hi - lo);
    }
    ctx.table("positions", t);
    ctx.figure("absolute_spread", spread_abs);
    ctx.figure("rope_spread", spread_rope);
    ctx.check(spread_abs > 0.1, "",
              ctx.f("absolute: pairs at the same distance score up to {} apart", g3(spread_abs)));
    return {spread_rope, size_rope};
}

void rope_relative_position(LessonContext& ctx, const RopeSpread& rs) {
    const double spread_rope = rs.spread, size_rope = rs.size;
    ctx.section("RoPE: relative position inside q·k");
    ctx.para(
        "Rotary position embedding (RoPE, used by Llama and many other current decoders) adds nothing. It rotates q "
        "and k: the dims pair up as (d, d + Dk/2), and each pair turns by the angle pos·θ_d, θ_d = 10000^(−2d/Dk), "
        "fast for the first pairs and slow for the last. For vectors of fixed lengths a dot product only sees the "
        "angle between two "
        "vectors (C11), and rotating q by iθ and k by jθ leaves the angle between them turned by (i − j)θ:");
    ctx.code(ctx.tr("R(iθ)q · R(jθ)k = q · R((j − i)θ)k      depends on i − j only"));
    ctx.identity(spread_rope <= 1e-5 * size_rope, "C11",
              ctx.f("RoPE: over all {} × {} pairs, scores at the same distance agree within {} (scores up to {})",
                    T, T, e2(spread_rope), g3(size_rope)));
    ctx.para("Rotations keep lengths, so |q| and |k| still scale the score as before; only direction now carries "
             "the distance. attn applies RoPE to q and k before the product (attn forward --rope [BASE]), in the "
             "reference and in the tiled kernel.");
}

void alibi_distance_penalty(LessonContext& ctx, Rng& rng) {
    ctx.section("ALiBi: a penalty on distance");
    ctx.para("ALiBi leaves q and k alone and adds −m_h·(i − j) to head h's scaled scores, a slope per head from a "
             "geometric sequence. With all raw scores equal (q = 0 below), the weights of the last query decay by "
             "the factor e^(−m_h) per step back: steep heads look at the last few tokens, gentle ones far back.");
    const int64_t H = 8, L = 64;
    const std::vector<double> slopes = alibi_slopes(H);
    ctx.code(ctx.f("slopes for H = 8: {}", list(slopes, 4)));
    const Tensor q0(Shape{1, H, L, 8}), kk = randn({1, H, L, 8}, rng), vv = randn({1, H, L, 8}, rng);
    AttentionOptions alibi;
    alibi.alibi = true;
    AttentionRecord ra;
    attention_reference(q0, kk, vv, Mask::make_causal(), alibi, &ra);
    ctx.shape("weights", ra.weights, "[B=1, H=8, T=64, T]: causal, q = 0, ALiBi on");
    Table a;
    a.columns = {"head", "slope m_h", "weight on itself", "weight 8+ back", "w(i−1)/w(i)", "e^(−m_h)"};
    a.formats = {"{}", "{:.4g}", "{:.4f}", "{:.4f}", "{:.5f}", "{:.5f}"};
    std::vector<double> far;
    double ratio_err = 0;
    const int64_t i = L - 1;
    for (int64_t h = 0; h < H; ++h) {
        double back8 = 0;
        for (int64_t j = 0; j + 8 <= i; ++j) back8 += ra.weights.at({0, h, i, j});
        const double ratio = double(ra.weights.at({0, h, i, i - 1})) / ra.weights.at({0, h, i, i});
        ratio_err = std::max(ratio_err, std::fabs(ratio / std::exp(-slopes[h]) - 1.0));
        far.push_back(back8);
        a.add({h, slopes[h], ra.weights.at({0, h, i, i}), back8, ratio, std::exp(-slopes[h])});
    }
    ctx.table("alibi", a);
    ctx.figure("alibi_weight_8_back", far);
    ctx.identity(ratio_err < 1e-5, "",
              ctx.f("each step back multiplies the weight by e^(−m_h) (relative error {})", e2(ratio_err)));
    ctx.identity(std::is_sorted(far.begin(), far.end()) && far.front() < 0.05 && far.back() > 0.5, "",
              ctx.f("a steep head puts {} of its weight 8 or more tokens back, the gentlest {}", g3(far.front()),
                    g3(far.back())));
    ctx.para("Every key is still reachable directly (C4); ALiBi only makes far keys need a larger q·k to win. "
             "Without a causal mask attn uses the distance |i − j| on both sides. ALiBi's bias depends on i − j "
             "alone as well, but it sits outside q·k: RoPE lets the content decide how position matters, ALiBi "
             "fixes one preference per head. Both are in attn forward (--rope, --alibi) and both run in the "
             "tiled kernel:");
    AttentionOptions both;  // RoPE and ALiBi
    both.rope = true;
    both.alibi = true;
    const double d_fl = max_abs_diff(attention_flash(kk, kk, vv, Mask::make_causal(), both, 1),
                                     attention_reference(kk, kk, vv, Mask::make_causal(), both));
    ctx.identity(d_fl < 1e-5, "", ctx.f("flash with RoPE and ALiBi equals the reference within {}", e2(d_fl)));
}

void run(LessonContext& ctx) {
    Rng rng = ctx.rng(19);
    Tensor q, k;
    order_is_unknown(ctx, rng, q, k);
    const RopeSpread rs = absolute_positions(ctx, q, k);
    rope_relative_position(ctx, rs);
    alibi_distance_penalty(ctx, rng);
    ctx.exercise("rope");
}

const RegisterLesson reg{{"rope-alibi", "RoPE and ALiBi: positions inside the score",
                          "absolute positions vs RoPE (relative position in q·k) vs ALiBi (a distance penalty)",
                          {"C4", "C11"}, false, run, Part::advanced, /*minutes*/ 5}};

}  // namespace
}  // namespace attn::lessons::lesson19
