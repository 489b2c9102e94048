// Lesson 14: memory: the [B, H, T, T] matrix grows as T², tiled attention with
// an online softmax avoids it; cheaper variants named and measured (C40-C44).
#include "common.hpp"

#include "attn/experiments/experiment.hpp"

namespace attn::lessons {
namespace {

void run(LessonContext& ctx) {
    ctx.section("The score matrix grows as T²");
    ctx.para("Written the plain way, attention builds the scores for every (query, key) pair: a [B, H, T, T] "
             "tensor, and the weights after softmax are another one. Double the sequence and it grows "
             "fourfold, while the inputs and the output only double. For one sequence with 8 heads of 64:");
    Table t;
    t.columns = {"T", "one [1, 8, T, T] float32 tensor", "Q, K, V and output together"};
    std::vector<double> bytes;
    for (int64_t T : {512, 2048, 8192, 32768}) {
        const AttentionCost c = attention_cost(1, T, 512, 8, 64, 64);
        const double io = 4.0 * 8 * double(T) * (64 + 64 + 64 + 64);
        bytes.push_back(c.bytes_score_matrix);
        t.add({T, format_bytes(c.bytes_score_matrix), format_bytes(io)});
    }
    ctx.table("memory", t);
    ctx.figure("score_matrix_bytes", bytes);
    ctx.check(bytes[1] == 16 * bytes[0] && bytes[3] == 16 * bytes[2], "C40",
              fmt::format("4× the length, 16× the memory: {} → {}", format_bytes(bytes[0]), format_bytes(bytes[1])));

    ctx.section("An online softmax, tile by tile");
    ctx.para("The way out is to never hold a whole row of scores. Walk over the keys in tiles and keep, for "
             "each query, three running things: the largest score seen so far m, the sum of exp(score − m) "
             "so far l, and the weighted sum of values so far. When a tile brings a larger score, rescale "
             "what you have by exp(m_old − m_new) and go on. At the end, divide by l. Here is one query over "
             "12 keys in tiles of 4, written out in the lesson itself:");
    const int64_t T = 12, Dk = 8, Dv = 4, tile = 4;
    Rng rng = ctx.rng(14);
    const Tensor q = randn({1, 1, 1, Dk}, rng), k = randn({1, 1, T, Dk}, rng), v = randn({1, 1, T, Dv}, rng);
    ctx.shape("q", q);
    ctx.shape("k", k);
    ctx.shape("v", v);
    const double scale = 1.0 / std::sqrt(double(Dk));
    double m = -INFINITY, l = 0;
    std::vector<double> acc(static_cast<size_t>(Dv), 0.0);
    std::string steps = "tile   keys     m (running max)   l (running sum)";
    for (int64_t t0 = 0; t0 < T; t0 += tile) {
        // pass 1: this tile's scores and its max
        std::vector<double> s;
        double tmax = -INFINITY;
        for (int64_t j = t0; j < t0 + tile; ++j) {
            double d = 0;
            for (int64_t c = 0; c < Dk; ++c) d += double(q.at({0, 0, 0, c})) * k.at({0, 0, j, c});
            s.push_back(d * scale);
            tmax = std::max(tmax, s.back());
        }
        // pass 2: rescale what we have to the new max, then add the tile
        const double mn = std::max(m, tmax), corr = std::exp(m - mn);
        l *= corr;
        for (auto& a : acc) a *= corr;
        for (int64_t j = t0; j < t0 + tile; ++j) {
            const double e = std::exp(s[static_cast<size_t>(j - t0)] - mn);
            l += e;
            for (int64_t c = 0; c < Dv; ++c) acc[static_cast<size_t>(c)] += e * v.at({0, 0, j, c});
        }
        m = mn;
        steps += fmt::format("\n{:>4}   {:>2}..{:<2}  {:>15.4f}   {:>15.4f}", t0 / tile, t0, t0 + tile - 1, m, l);
    }
    ctx.code(steps);
    const Tensor ref = attention_reference(q, k, v, Mask::none(), AttentionOptions{});  // [1,1,1,Dv]
    double d = 0;
    for (int64_t c = 0; c < Dv; ++c) d = std::max(d, std::fabs(acc[static_cast<size_t>(c)] / l - ref.at({0, 0, 0, c})));
    ctx.figure("online_softmax_max_diff", d);
    ctx.check(d < 1e-5, "C40",
              fmt::format("the tiled result equals attention_reference's output (max diff {}), with no row of 12 scores ever held",
                          e2(d)));

    ctx.section("The library's tiled kernel");
    ctx.para("The library's flash backend does this for every query and head, with tiles of queries and keys, "
             "masks included: FlashAttention's forward pass on the CPU. Its working memory per thread is a "
             "few tiles, whatever T is. It must agree with the reference:");
    const int64_t Bf = 2, Hf = 4, Tf = 256, Df = 32;
    const Tensor qf = randn({Bf, Hf, Tf, Df}, rng), kf = randn({Bf, Hf, Tf, Df}, rng), vf = randn({Bf, Hf, Tf, Df}, rng);
    ctx.shape("q, k, v", qf, "[B=2, H=4, T=256, Dk=32]");
    const Mask mask = Mask::make_causal().combined(Mask::key_padding({256, 200}));
    const Tensor of = attention(Backend::Flash, qf, kf, vf, mask, AttentionOptions{}, nullptr, /*threads=*/1);
    const Tensor orf = attention(Backend::Reference, qf, kf, vf, mask, AttentionOptions{});
    ctx.shape("out (flash)", of);
    ctx.shape("out (reference)", orf);
    const double df = max_abs_diff(of, orf);
    ctx.figure("flash_vs_reference_max_diff", df);
    // outputs are convex combinations of N(0,1) values; a different summation
    // order in float32 moves them by a few ulps of numbers of size ~1: 1e-5 is ample
    ctx.check(df < 1e-5, "C40", fmt::format("flash equals the reference under causal + padding masks (max diff {})", e2(df)));
    const AttentionCost cf = attention_cost(Bf, Tf, Hf * Df, Hf, Df, Df);
    ctx.para(fmt::format("The reference materialised {} of scores for this call (and as much again for the "
                         "weights); the tiled kernel never allocates a [T, T] block.",
                         format_bytes(cf.bytes_score_matrix)));
    // Gradient checkpointing, measured live: the quick size of `attn experiment memory`.
    ExperimentConfig mc;
    mc.size = ExperimentSize::Quick, mc.seeds = 1, mc.seed = ctx.seed();
    const ExperimentResult mem = experiment_memory().run(mc, {});
    const auto& mrows = mem.tables[0].rows;  // T 64, 128, 256 x (store P, tiled, checkpoint)
    const double ck_ratio = mrows[8][3].get<double>(), ck_time = mrows[8][5].get<double>();
    const double ck_diff = mrows[8][6].get<double>();
    // checkpointing recomputes the same float operations in the same order: identical gradients
    ctx.check(ck_ratio < 0.5 && ck_diff == 0.0, "C40",
              fmt::format("a training step of 4 attention blocks at T = 256: checkpointing each block keeps {:.0f}% "
                          "of the activation memory of storing P, with the same gradients, for x{:.2f} the time "
                          "(one more forward); attn experiment memory goes to T = 2048",
                          100 * ck_ratio, ck_time));

    ctx.section("Cheaper attention: what can and cannot be measured");
    ctx.para("The source lists ways to go beyond the T² cost. attn can run two of them on random inputs and "
             "say how far their output is from full attention; it cannot say how much task quality they keep.");
    // sparse: a local window of 32 keys (j in [i-31, i]) on a causal layout
    const int64_t W = 32;
    std::vector<uint8_t> win(static_cast<size_t>(Tf * Tf));
    int64_t kept = 0;
    for (int64_t i = 0; i < Tf; ++i)
        for (int64_t j = 0; j < Tf; ++j) {
            const bool a = j <= i && j > i - W;
            win[static_cast<size_t>(i * Tf + j)] = a ? 1 : 0;
            kept += a ? 1 : 0;
        }
    const Mask local = Mask::custom(1, Tf, Tf, win);
    const Mask causal = Mask::make_causal();
    const Tensor full = attention_reference(qf, kf, vf, causal, AttentionOptions{});
    const Tensor sparse = attention_reference(qf, kf, vf, local, AttentionOptions{});
    double num = 0, den = 0;
    for (size_t i = 0; i < full.data.size(); ++i) {
        const double e = double(sparse.data[i]) - full.data[i];
        num += e * e;
        den += double(full.data[i]) * full.data[i];
    }
    ctx.shape("window mask", Shape{1, Tf, Tf}, local.describe());
    ctx.shape("out (full, causal)", full);
    ctx.shape("out (window)", sparse);
    const double rel_sparse = std::sqrt(num / den);
    int64_t causal_pairs = 0;
    for (int64_t i = 0; i < Tf; ++i) causal_pairs += causal.row(0, Tf).allowed_count(i);
    const double frac = double(kept) / double(causal_pairs);
    // linear attention: phi(x) = elu(x) + 1; out_i = phi(q_i)·S / phi(q_i)·z with S = Σ phi(k_j) v_jᵀ, z = Σ phi(k_j)
    auto phi = [](float x) { return x > 0 ? x + 1.0f : std::exp(x); };
    Tensor lin({Bf, Hf, Tf, Df}), lin_quad({Bf, Hf, Tf, Df});
    for (int64_t b = 0; b < Bf; ++b)
        for (int64_t h = 0; h < Hf; ++h) {
            // O(T d²): one [Dk, Dv] summary for the whole sequence
            std::vector<double> S(static_cast<size_t>(Df * Df), 0.0), z(static_cast<size_t>(Df), 0.0);
            for (int64_t j = 0; j < Tf; ++j)
                for (int64_t a = 0; a < Df; ++a) {
                    const double pk = phi(kf.at({b, h, j, a}));
                    z[static_cast<size_t>(a)] += pk;
                    for (int64_t c = 0; c < Df; ++c) S[static_cast<size_t>(a * Df + c)] += pk * vf.at({b, h, j, c});
                }
            for (int64_t i = 0; i < Tf; ++i) {
                double nz = 0;
                std::vector<double> o(static_cast<size_t>(Df), 0.0);
                for (int64_t a = 0; a < Df; ++a) {
                    const double pq = phi(qf.at({b, h, i, a}));
                    nz += pq * z[static_cast<size_t>(a)];
                    for (int64_t c = 0; c < Df; ++c) o[static_cast<size_t>(c)] += pq * S[static_cast<size_t>(a * Df + c)];
                }
                for (int64_t c = 0; c < Df; ++c) lin.at({b, h, i, c}) = static_cast<float>(o[static_cast<size_t>(c)] / nz);
            }
            // the same thing the quadratic way: weights w_ij = phi(q_i)·phi(k_j) / Σ_j, then w V
            for (int64_t i = 0; i < Tf; ++i) {
                std::vector<double> w(static_cast<size_t>(Tf));
                double sum = 0;
                for (int64_t j = 0; j < Tf; ++j) {
                    double s = 0;
                    for (int64_t a = 0; a < Df; ++a) s += double(phi(qf.at({b, h, i, a}))) * phi(kf.at({b, h, j, a}));
                    w[static_cast<size_t>(j)] = s;
                    sum += s;
                }
                for (int64_t c = 0; c < Df; ++c) {
                    double o = 0;
                    for (int64_t j = 0; j < Tf; ++j) o += w[static_cast<size_t>(j)] / sum * vf.at({b, h, j, c});
                    lin_quad.at({b, h, i, c}) = static_cast<float>(o);
                }
            }
        }
    const Tensor full_nc = attention_reference(qf, kf, vf, Mask::none(), AttentionOptions{});
    ctx.shape("S = Σ φ(k)vᵀ", Shape{Df, Df}, "per (batch, head): the linear form's summary");
    ctx.shape("out (linear)", lin, "φ(q)·S / φ(q)·z");
    ctx.shape("out (linear, T²)", lin_quad, "the same weights formed explicitly");
    num = den = 0;
    for (size_t i = 0; i < full_nc.data.size(); ++i) {
        const double e = double(lin.data[i]) - full_nc.data[i];
        num += e * e;
        den += double(full_nc.data[i]) * full_nc.data[i];
    }
    const double rel_linear = std::sqrt(num / den);
    const double dq = max_abs_diff(lin, lin_quad);
    Table c;
    c.columns = {"variant (T = 256)", "scores computed", "distance to full (rel. L2)"};
    c.formats = {"", "", "{:.3f}"};
    c.add({fmt::format("local window, {} keys (causal)", W), fmt::format("{:.1f}% of causal", 100 * frac), rel_sparse});
    c.add({"linear, φ = elu + 1 (non-causal)", "none", rel_linear});
    ctx.table("variants", c);
    ctx.figure("local_window_rel_l2", rel_sparse);
    ctx.figure("linear_attention_rel_l2", rel_linear);
    ctx.figure("local_window_fraction", frac);
    ctx.check(dq < 1e-4, "C43",
              fmt::format("linear attention's O(T) form equals its own O(T²) form (max diff {}): the reordering is exact", e2(dq)));
    ctx.check(frac < 0.25, "C42", fmt::format("the {}-key window computes {:.1f}% of the causal score entries", W, 100 * frac));
    ctx.para("Neither is the same function as softmax attention: the table's distances are large on random "
             "inputs. Whether a trained model loses much by switching is an empirical question about models "
             "and tasks.");
    ctx.not_supported("C44", fmt::format("\"about 90% of the quality at 10× the length\" is not something these numbers "
                                         "can support or refute: attn has no task to score. What they do show: on "
                                         "random inputs a {}-key window's output is {:.0f}% (relative L2) away from full "
                                         "attention and elu+1 linear attention's is {:.0f}% away. Quality retention has "
                                         "to be measured on trained models and real benchmarks.",
                                         W, 100 * rel_sparse, 100 * rel_linear));
    ctx.unmeasured("C41", "fusing scale + softmax, tensor cores and shared-memory tiles are GPU techniques; attn's "
                          "CPU kernels tile for caches the same way, and a CUDA build (if present) has its own bench.");
    ctx.unmeasured("C43", "Performer's orthogonal random features and cosFormer's re-weighting are not implemented.");
}

const RegisterLesson reg{{"memory", "Memory and long sequences",
                          "the [B, H, T, T] matrix's bytes; an online softmax; flash vs reference; sparse and linear",
                          {"C40", "C41", "C42", "C43", "C44"}, false, run}};

}  // namespace
}  // namespace attn::lessons
