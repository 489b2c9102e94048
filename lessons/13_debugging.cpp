// Lesson 13: debugging attention: shape assertions, bmm vs broadcasting
// matmul, and the initial weight scale (C35-C37, C9, C36).
#include "common.hpp"
#include "attn/experiments/experiment.hpp"

namespace attn::lessons::lesson13 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

// The assertion the source recommends after every transform.
void expect_shape(const Tensor& t, const Shape& want, const std::string& what) {
    if (t.shape != want)
        throw ShapeError(fmt::format("{} has shape {}, expected {}", what, shape_str(t.shape), shape_str(want)));
}

constexpr int64_t B = 2, T = 10, D = 64, H = 4, Dk = D / H;

// One multi-head attention layer (D = 64, 4 heads), its input x [B, T, D] and Q = x·W_qᵀ + b_q.
struct Layer {
    MhaConfig cfg;
    MultiHeadAttention mha;
    Tensor x, Q;
};

// Per initialisation of the table: score std, mean max weight and largest head JS divergence;
// and how far the all-zero init's rows are from uniform.
struct InitScan {
    std::vector<double> stds, maxw, js_max;
    double zero_dev = 1;
};

// Returns the layer, its input and its unsplit Q, which the next sections reuse.
Layer assert_shapes(LessonContext& ctx, Rng& rng) {
    ctx.section("Assert shapes after every transform");
    ctx.para("Most attention bugs are shape bugs that do not crash: a missing transpose, a forgotten head "
             "split, a mask with the wrong broadcast dimension. One line per transform that states the "
             "expected shape turns them into immediate, named errors. Here a head split was forgotten: the "
             "code passes Q as [B, T, D] where [B, H, T, Dk] was meant.");
    MhaConfig cfg;
    cfg.d_model = D;
    cfg.heads = H;
    MultiHeadAttention mha(cfg.resolved());
    mha.init(InitSpec{}, rng);
    const Tensor x = randn({B, T, D}, rng);            // [B, T, D]
    const Tensor Q = mha.q_proj.forward(x);             // [B, T, D]
    const Tensor Qh = split_heads(Q, H);                // [B, H, T, Dk]
    ctx.shape("x", x);
    ctx.shape("Q", Q, "x·W_qᵀ + b_q");
    ctx.shape("Q split", Qh, "split_heads(Q, H)");
    std::string err;
    bool ok_passes = true;
    try {
        expect_shape(Qh, {B, H, T, Dk}, "Q after the split");  // passes
    } catch (const ShapeError&) {
        ok_passes = false;
    }
    try {
        expect_shape(Q, {B, H, T, Dk}, "Q after the split");  // the bug: Q was never split
    } catch (const ShapeError& e) {
        err = e.what();
    }
    ctx.code("expect_shape(Q, {B, H, T, Dk}, \"Q after the split\")\n-> ShapeError: " + err);
    ctx.identity(ok_passes && !err.empty(), "C35",
                 "the assertion passes on the split tensor and names the unsplit one");
    return {cfg, std::move(mha), x, Q};
}

void bmm_refuses_what_matmul_broadcasts(LessonContext& ctx, const Layer& layer) {
    const Tensor &x = layer.x, &Q = layer.Q;
    const MultiHeadAttention& mha = layer.mha;
    ctx.section("bmm refuses what matmul broadcasts");
    ctx.para("torch.bmm takes exactly two 3-D tensors [N, n, k] and [N, k, m]. torch.matmul accepts any "
             "ranks and broadcasts the leading ones. Broadcasting is convenient and dangerous: drop a batch "
             "dimension by accident, say K[0] instead of K, and matmul quietly gives every sequence the keys "
             "of sequence 0.");
    const Tensor K = mha.k_proj.forward(x);  // [B, T, D]
    Tensor K0({T, D});                       // the bug: K[0], batch dimension lost
    std::copy(K.data.begin(), K.data.begin() + T * D, K0.data.begin());
    ctx.shape("K", K);
    ctx.shape("K[0] (the bug)", K0);
    const Tensor good = matmul(Q, transpose_last2(K));   // [B, T, T]
    const Tensor bad = matmul(Q, transpose_last2(K0));   // [T, D]ᵀ broadcast: [B, T, T], no error
    ctx.shape("Q·Kᵀ", good);
    ctx.shape("Q·K[0]ᵀ", bad, "broadcast over the batch: runs");
    double d0 = 0, d1 = 0;
    for (int64_t i = 0; i < T * T; ++i) {
        d0 = std::max(d0, double(std::fabs(good.data[static_cast<size_t>(i)] - bad.data[static_cast<size_t>(i)])));
        d1 = std::max(d1, double(std::fabs(good.data[static_cast<size_t>(T * T + i)] -
                                           bad.data[static_cast<size_t>(T * T + i)])));
    }
    ctx.figure("broadcast_bug_batch1_max_diff", d1);
    ctx.check(bad.shape == good.shape && d0 == 0.0 && d1 > 1e-3, "C35",
              ctx.f("matmul returns the right shape {}; batch 0 is right (diff {}), batch 1 wrong by up to {}",
                    shape_str(bad.shape), d0, g3(d1)));
    std::string berr;
    try {
        bmm(Q, transpose_last2(K0));
    } catch (const ShapeError& e) {
        berr = e.what();
    }
    ctx.code("bmm(Q, K[0]ᵀ)\n-> ShapeError: " + berr);
    ctx.identity(!berr.empty(), "C35", "bmm refuses the 2-D operand: the rank bug surfaces at once");
}

InitScan initial_weight_scale(LessonContext& ctx, const Layer& layer) {
    const Tensor& x = layer.x;
    const MhaConfig& cfg = layer.cfg;
    ctx.section("The initial weight scale");
    ctx.para("When the loss does not move, the source's first suspects are a missing 1/√Dk and weights "
             "initialised too large: big W_q, W_k give big scores, softmax saturates, and lesson 4 showed "
             "what that does to the gradient. The other extreme, all-zero weights, is worse: the weights get no "
             "gradient at all, and every head computes the same thing (both measured below). Here one layer "
             "(D = 64, 4 heads of 16, B = 2, T = 10, the same x) under five initialisations:");
    struct Row {
        std::string name;
        InitSpec spec;
    };
    const float by_dk = 1.0f / std::sqrt(static_cast<float>(Dk)), by_d = 1.0f / std::sqrt(static_cast<float>(D));
    const std::vector<Row> inits{{"xavier_uniform", InitSpec{InitKind::XavierUniform}},
                                 {ctx.f("normal, std 1/√D = {:.3f}", by_d), InitSpec{InitKind::Normal, by_d}},
                                 {ctx.f("normal, std 1/√Dk = {:.3f}", by_dk), InitSpec{InitKind::Normal, by_dk}},
                                 {"normal, std 1 (too large)", InitSpec{InitKind::Normal, 1.0f}},
                                 {"zeros", InitSpec{InitKind::Zeros}}};
    Table t;
    t.columns = {"init", "score std", "max weight", "entropy", "heads JS"};
    t.formats = {"", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3g}"};
    InitScan scan;
    auto &stds = scan.stds, &maxw = scan.maxw, &js_max = scan.js_max;
    double& zero_dev = scan.zero_dev;
    for (size_t r = 0; r < inits.size(); ++r) {
        MultiHeadAttention m(cfg.resolved());
        Rng ri = ctx.rng(130 + r);
        m.init(inits[r].spec, ri);
        ForwardRecord rec;
        m.forward(x, Mask::none(), AttentionOptions{}, &rec);
        double mean = 0, m2 = 0;
        for (float s : rec.attn.scores_scaled.data) mean += s, m2 += double(s) * s;
        const double n = double(rec.attn.scores_scaled.numel());
        const double sd = std::sqrt(std::max(0.0, (m2 - mean * mean / n) / (n - 1)));
        const auto hs = head_stats(rec.attn.weights, Mask::none());
        double mw = 0, ne = 0;
        for (const auto& h : hs)
            mw += h.mean_max_weight / double(hs.size()), ne += h.mean_normalized_entropy / double(hs.size());
        const Tensor sim = head_similarity(rec.attn.weights, Mask::none());
        double js = 0;
        for (int64_t i = 0; i < H; ++i)
            for (int64_t j = 0; j < H; ++j)
                if (i != j) js = std::max(js, double(sim.at({i, j})));
        if (inits[r].spec.kind == InitKind::Zeros) {
            zero_dev = 0;
            for (float w : rec.attn.weights.data) zero_dev = std::max(zero_dev, std::fabs(double(w) - 1.0 / double(T)));
        }
        stds.push_back(sd);
        maxw.push_back(mw);
        js_max.push_back(js);
        t.add({inits[r].name, sd, mw, ne, js});
    }
    ctx.table("init", t);
    ctx.para("max weight: each row's largest weight, averaged over rows. entropy: the rows' mean entropy "
             "divided by log T, so 1 = uniform and 0 = one-hot. heads JS: the largest Jensen-Shannon "
             "divergence between two heads (0 = identical heads).");
    ctx.figure("score_std_by_init", stds);
    ctx.figure("mean_max_weight_by_init", maxw);
    ctx.check(
        stds[3] > 4 * stds[0] && maxw[3] > 0.8, "C36",
        ctx.f("std-1 weights give scores {:.1f}× as spread as Xavier's and near one-hot rows (mean max weight {:.3f})",
              stds[3] / stds[0], maxw[3]));
    ctx.check(stds[0] > 0.6 && stds[0] < 1.5 && stds[1] > 0.6 && stds[1] < 1.5, "C36",
              ctx.f("Xavier and std 1/√D keep the scaled scores near 1 (std {:.3f}, {:.3f}) and the rows soft", stds[0],
                    stds[1]));
    return scan;
}

// The source's recipe at the usual sizes, against the table's D = 64 figures.
void init_at_usual_sizes(LessonContext& ctx, const InitScan& scan) {
    const std::vector<double>&stds = scan.stds, &maxw = scan.maxw;
    // the source's recipe at the usual sizes: d_model 512, 8 heads of 64
    MhaConfig big;
    big.d_model = 512;
    big.heads = 8;
    big = big.resolved();
    Rng rb = ctx.rng(139);
    const Tensor xb = randn({1, 32, big.d_model}, rb);  // [1, T=32, 512]
    auto scaled_std = [&](float std) {
        MultiHeadAttention m(big);
        m.init(InitSpec{InitKind::Normal, std}, rb);
        ForwardRecord rec;
        m.forward(xb, Mask::none(), AttentionOptions{}, &rec);
        double mean = 0, m2 = 0;
        for (float s2 : rec.attn.scores_scaled.data) mean += s2, m2 += double(s2) * s2;
        const double n = double(rec.attn.scores_scaled.numel());
        return std::sqrt(std::max(0.0, (m2 - mean * mean / n) / (n - 1)));
    };
    const float big_dk = 1.0f / std::sqrt(float(big.d_k)), big_d = 1.0f / std::sqrt(float(big.d_model));
    const double sd_dk = scaled_std(big_dk), sd_d = scaled_std(big_d);
    ctx.shape("x (D = 512)", xb, "[B=1, T=32, D=512], entries N(0, 1)");
    ctx.figure("d512_h8_score_std_init_inv_sqrt_dk", sd_dk);
    ctx.figure("d512_h8_score_std_init_inv_sqrt_d", sd_d);
    ctx.check(sd_dk > 0.7 * double(big.heads) && sd_dk < 1.3 * double(big.heads) && sd_d > 0.7 && sd_d < 1.3, "C36",
              ctx.f("at d_model {}, {} heads: W std 1/√d_k = {:.3f} gives scaled scores with std {:.2f} "
                    "(≈ h = {}); std 1/√d_model = {:.3f} gives {:.2f}",
                    big.d_model, big.heads, big_dk, sd_dk, big.heads, big_d, sd_d));
    ctx.qualified("C36", ctx.f("corrected. \"Use a smaller std\" for too-large W_q, W_k is right, but "
                               "\"~1/√d_k\" is the right size only when d_k is the projection's fan-in. W_q maps "
                               "all d_model features, so each q entry sums d_model terms: its variance is "
                               "d_model/d_k = h times too large, and so is k's, and the scaled scores' std comes "
                               "out ≈ h instead of 1 ({:.2f} at d_model {}, h = {}; {:.2f} at D = {}, h = {} in "
                               "the table, with mean max weight {:.3f}). The std that keeps scores near 1 is "
                               "1/√d_model ({:.2f} and {:.2f}), which is what Xavier gives a square layer.",
                               sd_dk, big.d_model, big.heads, stds[2], D, H, maxw[2], sd_d, stds[1]));
    // the claim is about training ("the loss does not move"): the init experiment trains it
    ctx.experiment_claim(experiment_init(), "C36", "the init experiment's quick size reached no verdict on C36");
}

// All-zero weights, forward and backward, against W_q alone zero.
void all_zero_weights(LessonContext& ctx, const Layer& layer, const InitScan& scan) {
    const Tensor& x = layer.x;
    const MhaConfig& cfg = layer.cfg;

    // C9: all-zero weights, forward and backward (the library's MHA backward)
    Rng rg = ctx.rng(138);
    const Tensor dout = randn({B, T, D}, rg);  // [B, T, D]: any upstream gradient dL/d out
    auto grads = [&](MultiHeadAttention& m) {
        ForwardRecord rec;
        m.forward(x, Mask::none(), AttentionOptions{}, &rec);
        return m.backward(rec, dout, Mask::none(), AttentionOptions{});
    };
    auto max_abs = [](const Tensor& t) {
        double mx = 0;
        for (float v : t.data) mx = std::max(mx, double(std::fabs(v)));
        return mx;
    };
    MultiHeadAttention mz(cfg.resolved());
    mz.init(InitSpec{InitKind::Zeros}, rg);
    const MhaGrads gz = grads(mz);
    ctx.shape("dout", dout, "an arbitrary upstream gradient dL/d out");
    ctx.shape("dW_q … dW_o", gz.dW_q, "each [D, D]: MultiHeadAttention::backward");
    const double gmax = std::max({max_abs(gz.dW_q), max_abs(gz.dW_k), max_abs(gz.dW_v), max_abs(gz.dW_o)});
    // W_q alone zero, the others Xavier: its gradient is alive and differs per head
    MultiHeadAttention mq(cfg.resolved());
    mq.init(InitSpec{InitKind::XavierUniform}, rg);
    for (auto& w : mq.q_proj.W.data) w = 0.0f;
    const MhaGrads gq = grads(mq);
    const double gq_max = max_abs(gq.dW_q);
    double head_gap = 0;  // largest difference between head 0's and head 1's rows of dW_q
    for (int64_t r = 0; r < Dk; ++r)
        for (int64_t c = 0; c < D; ++c)
            head_gap = std::max(head_gap, double(std::fabs(gq.dW_q.at({r, c}) - gq.dW_q.at({Dk + r, c}))));
    ctx.figure("zero_init_max_weight_grad", gmax);
    ctx.figure("zero_wq_only_max_grad", gq_max);
    ctx.identity(scan.zero_dev < 1e-7 && scan.js_max[4] == 0.0, "C9",
                 ctx.f("all-zero weights: every row uniform (max |w − 1/T| = {}) and every head identical "
                       "(JS divergence 0)",
                       e2(scan.zero_dev)));
    ctx.identity(gmax == 0.0, "C9",
                 ctx.f("all-zero W_q, W_k, W_v, W_o: every weight gradient is exactly 0 (largest |entry| {}); "
                       "only the output bias b_o gets one",
                       gmax));
    ctx.check(gq_max > 1e-4 && head_gap > 1e-6, "C9",
              ctx.f("zero W_q alone is harmless: its gradient reaches {} and differs between heads (by up "
                    "to {})",
                    g3(gq_max), g3(head_gap)));
    ctx.para("That is the source's reason for \"never all zeros\": with every projection zero the output is 0 "
             "whatever x is, dout·W_o = 0 cuts the gradient to W_q, W_k and W_v, and W_o's own gradient "
             "doutᵀ·merged is 0 because merged is. Gradient descent never moves a weight. Symmetry is a second "
             "problem: heads that start identical get identical gradients and stay alike, which is why each head "
             "is drawn independently. One zero matrix among random ones is no problem: zero W_q makes the first "
             "scores uniform, but its gradient is alive and differs per head, because W_k differs per head.");
    ctx.experiment_claim(experiment_init(), "C9", "the init experiment's quick size reached no verdict on C9");
}

void run(LessonContext& ctx) {
    Rng rng = ctx.rng(13);
    const Layer layer = assert_shapes(ctx, rng);
    bmm_refuses_what_matmul_broadcasts(ctx, layer);
    const InitScan scan = initial_weight_scale(ctx, layer);
    init_at_usual_sizes(ctx, scan);
    all_zero_weights(ctx, layer, scan);
    ctx.experiment_claim(experiment_overfit(), "C37",
                         "the overfit experiment's quick size reached no verdict on the overfit test; "
                         "attn experiment overfit runs it in full.");
    ctx.exercise("find-the-bug");
}

const RegisterLesson reg{{"debugging", "Debugging attention",
                          "shape assertions; bmm vs broadcasting matmul; init scale vs score spread; zero init",
                          {"C9", "C35", "C36", "C37"}, false, run, Part::advanced, /*minutes*/ 10}};

}  // namespace
}  // namespace attn::lessons::lesson13
