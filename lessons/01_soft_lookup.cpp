// Lesson 1: attention as a soft dictionary lookup, and why a fixed-size
// running summary loses far tokens (C1-C4).
#include <limits>

#include "common.hpp"
#include "attn/experiments/experiment.hpp"

namespace attn::lessons::lesson01 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

constexpr int64_t T = 64, D = 16;  // the forgetting and all-positions sections' tokens

struct Toy {
    Tensor K, V, q;
};

// How the tour asks you to act.
void introduction(LessonContext& ctx) {
    ctx.pipeline_map();
    ctx.para("The tour asks you to act: a line starting with ? asks for your guess before a number is computed "
             "(Enter skips; `--no-ask` or a pipe never waits), and a lesson that teaches a step ends with its "
             "exercise, which attn grades: `attn exercise --list`.");
}

// The toy dictionary's keys [1,1,5,3], values [1,1,5,2] and query [1,1,1,3].
Toy dictionary_lookup(LessonContext& ctx) {
    ctx.section("A dictionary you can ask vaguely");
    ctx.para("A Python dict answers only exact questions: d[\"cat\"] returns one value, and a key that is "
             "almost right returns nothing. Attention is a dictionary that accepts vague questions. Each entry "
             "has a key (what the entry is about) and a value (what it holds). A query is compared with every "
             "key; the better the match, the larger that entry's share of the answer. The answer is a blend of "
             "all the values.");
    ctx.para("Our toy dictionary has five entries. Keys have three features (is-animal, is-vehicle, flies); "
             "values have two (legs, wheels). These numbers are the lesson's input; everything after is "
             "computed.");
    const std::vector<std::string> names{"cat", "dog", "bird", "car", "bicycle"};
    const Tensor K = rows4({{2, -1, -1}, {2, -1, -1.5f}, {1.5f, -1, 2}, {-1, 2, -1}, {-1, 1.5f, -1}});  // [1,1,5,3]
    const Tensor V = rows4({{4, 0}, {4, 0}, {2, 0}, {0, 4}, {0, 2}});                                     // [1,1,5,2]
    const Tensor q = rows4({{2, 0, -1}});  // "an animal that does not fly?" [1,1,1,3]
    ctx.shape("keys K", K, "[B=1, H=1, 5 entries, Dk=3]");
    ctx.shape("values V", V, "[1, 1, 5 entries, Dv=2]");
    ctx.shape("query q", q, "\"an animal that does not fly?\" = (2, 0, -1)");

    AttentionRecord rec;
    const Tensor out = attention_reference(q, K, V, Mask::none(), AttentionOptions{}, &rec);
    ctx.shape("scores", rec.scores_scaled, "q·Kᵀ / √3, one per entry");
    ctx.shape("weights", rec.weights, "softmax(scores)");
    ctx.shape("answer", out, "weights · V");

    Table t;
    t.columns = {"entry", "key", "score", "weight", "value"};
    t.formats = {"", "", "{:.3f}", "{:.3f}"};
    double min_w = 1, sum_w = 0;
    int best = 0;
    for (int64_t j = 0; j < 5; ++j) {
        const float w = rec.weights.at({0, 0, 0, j});
        t.add({names[static_cast<size_t>(j)],
               ctx.f("({:g}, {:g}, {:g})", K.at({0, 0, j, 0}), K.at({0, 0, j, 1}), K.at({0, 0, j, 2})),
               rec.scores_scaled.at({0, 0, 0, j}), w, ctx.f("({:g}, {:g})", V.at({0, 0, j, 0}), V.at({0, 0, j, 1}))});
        min_w = std::min(min_w, double(w));
        sum_w += w;
        if (w > rec.weights.at({0, 0, 0, best})) best = static_cast<int>(j);
    }
    ctx.predict("answer_legs", "the query asks for an animal that does not fly; the values' first feature is legs "
                "(cat 4, dog 4, bird 2, car 0, bicycle 0). How many legs does the blended answer have?",
                out.at({0, 0, 0, 0}), Closeness::absolute(0.25));
    ctx.table("lookup", t);
    const float legs = out.at({0, 0, 0, 0}), wheels = out.at({0, 0, 0, 1});
    ctx.para(
        ctx.f("The answer is ({:.3f} legs, {:.3f} wheels): mostly the walking animals' values, a "
              "little of the bird's and the vehicles'. A hard lookup would have returned one entry ({}) whole.",
              legs, wheels, ctx.tr(names[static_cast<size_t>(best)])));
    // the blend by hand: sum_j w_j v_j
    double hand0 = 0, hand1 = 0;
    for (int64_t j = 0; j < 5; ++j) {
        hand0 += double(rec.weights.at({0, 0, 0, j})) * V.at({0, 0, j, 0});
        hand1 += double(rec.weights.at({0, 0, 0, j})) * V.at({0, 0, j, 1});
    }
    const double blend_err = std::max(std::fabs(hand0 - legs), std::fabs(hand1 - wheels));
    ctx.figure("weights", rec.weights.data);
    ctx.figure("answer", out.data);
    ctx.figure("min_weight", min_w);
    ctx.identity(min_w > 0, "C3", ctx.f("every value contributes: smallest weight = {} > 0", e2(min_w)));
    ctx.identity(std::fabs(sum_w - 1) < 1e-5, "C3", ctx.f("weights sum to 1 (|sum-1| = {})", e2(std::fabs(sum_w - 1))));
    ctx.identity(blend_err < 1e-5, "C3",
                 ctx.f("answer = Σ weight·value computed by hand (max diff {})", e2(blend_err)));

    ctx.para(ctx.f("Two kinds of check close each claim. ✓ marks a measurement, a result that could have "
                         "come out otherwise. ≡ marks an identity, true by construction or by a theorem: it is shown "
                         "so you can see it hold, and would fail only through a bug. Identities hold up to float32 "
                         "rounding (machine epsilon {}): differences of 1e-8 to 1e-7 below are rounding, not error.",
                         e2(double(std::numeric_limits<float>::epsilon()))));
    return {K, V, q};
}

void sharper_questions(LessonContext& ctx, const Toy& toy) {
    const Tensor &K = toy.K, &V = toy.V, &q = toy.q;
    ctx.section("Sharper questions, harder lookups");
    ctx.para("Multiply the query by a factor and the scores grow with it; the softmax then concentrates on the "
             "best match. A very confident query behaves almost like an exact lookup; a timid one averages "
             "everything.");
    Table s;
    s.columns = {"query × c", "w(cat)", "w(dog)", "w(bird)", "w(car)", "w(bicycle)", "max weight"};
    s.formats = {"", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}"};
    std::vector<double> maxes;
    for (float c : {0.25f, 1.0f, 4.0f}) {
        Tensor qc = q;
        for (auto& x : qc.data) x *= c;
        AttentionRecord r;
        attention_reference(qc, K, V, Mask::none(), AttentionOptions{}, &r);
        ctx.shape(ctx.f("q × {:g}", c), qc);
        std::vector<nlohmann::json> row{ctx.f("× {:g}", c)};
        double mx = 0;
        for (int64_t j = 0; j < 5; ++j)
            row.push_back(r.weights.at({0, 0, 0, j})), mx = std::max(mx, double(r.weights.at({0, 0, 0, j})));
        row.push_back(mx);
        s.add(row);
        maxes.push_back(mx);
    }
    ctx.table("sharpness", s);
    ctx.figure("max_weight_by_query_scale", maxes);
    ctx.identity(maxes[0] < maxes[1] && maxes[1] < maxes[2], "C3",
              ctx.f("a larger query gives a sharper lookup: max weight {} < {} < {}", g3(maxes[0]), g3(maxes[1]),
                          g3(maxes[2])));
}

// Returns the T random tokens, which the next section reuses.
Tensor running_summary_forgets(LessonContext& ctx, Rng& rng) {
    ctx.section("A running summary forgets; attention does not (C1, C4)");
    ctx.para("An RNN reads a sentence one token at a time and keeps a single state vector of fixed size. The "
             "simplest such summary is a running average h ← a·h + (1−a)·x. Every step shrinks what is already "
             "in h by a, so a token's share of the final state decays with its distance from the end.");
    Tensor X = randn({1, 1, T, D}, rng);  // [1,1,T,D] token vectors, used as keys and values
    ctx.shape("tokens X", X, "[1, 1, T=64, D=16], random");
    const float a = 0.9f;
    // influence of token t on the final state: run the recurrence on a unit impulse at t
    auto ema_share = [&](int64_t t) {
        double h = 0;
        for (int64_t s2 = 0; s2 < T; ++s2) h = a * h + (1 - a) * (s2 == t ? 1.0 : 0.0);
        return h;
    };
    // attention: a query that looks for token t (a scaled copy of its key)
    auto attn_share = [&](int64_t t) {
        Tensor qt({1, 1, 1, D});
        for (int64_t d = 0; d < D; ++d) qt.at({0, 0, 0, d}) = 2.0f * X.at({0, 0, t, d});
        AttentionRecord r;
        attention_reference(qt, X, X, Mask::none(), AttentionOptions{}, &r);
        return double(r.weights.at({0, 0, 0, t}));
    };
    Table f;
    f.columns = {"token position", "distance to end", "share in running average (a = 0.9)", "attention weight on it"};
    f.formats = {"", "", "{:.2e}", "{:.3f}"};
    std::vector<double> ema_v, att_v;
    for (int64_t t : {T - 1, T - 10, T - 41, int64_t{0}}) {
        ema_v.push_back(ema_share(t));
        att_v.push_back(attn_share(t));
        f.add({t, T - 1 - t, ema_v.back(), att_v.back()});
    }
    ctx.table("forgetting", f);
    ctx.figure("ema_share_first_token", ema_v.back());
    ctx.figure("attention_weight_first_token", att_v.back());
    const auto [att_lo, att_hi] = std::minmax_element(att_v.begin(), att_v.end());
    ctx.para(ctx.f("The running average keeps a vanishing trace of the first token. The attention query that looks "
                   "for it (a scaled copy of that token's own key, 2·x_t, built to match it) gives it a weight that "
                   "has nothing to do with distance: here {} to {} at the four positions, set by how far that "
                   "token's key stands out from the other {} random keys. The first token is compared with the "
                   "query directly, like every other token.",
                   g3(*att_lo), g3(*att_hi), T - 1));
    ctx.identity(ema_v.back() < 1e-2 * ema_v.front(), "C1",
                 ctx.f("the summary forgets: the first token's share is {} of the last token's",
                       e2(ema_v.back() / ema_v.front())));
    ctx.check(att_v.back() > 100 * ema_v.back(), "C4",
              ctx.f("attention reaches the first token directly: weight {} vs running-average share {}",
                    g3(att_v.back()), e2(ema_v.back())));
    // C4: moving the token does not change its weight (no notion of distance without position encodings)
    Tensor Xr = X;  // swap token 0 and token T-1
    for (int64_t d = 0; d < D; ++d) std::swap(Xr.at({0, 0, 0, d}), Xr.at({0, 0, T - 1, d}));
    Tensor q0({1, 1, 1, D});
    for (int64_t d = 0; d < D; ++d) q0.at({0, 0, 0, d}) = 2.0f * X.at({0, 0, 0, d});
    AttentionRecord r1, r2;
    attention_reference(q0, X, X, Mask::none(), AttentionOptions{}, &r1);
    attention_reference(q0, Xr, Xr, Mask::none(), AttentionOptions{}, &r2);
    const double moved = std::fabs(double(r1.weights.at({0, 0, 0, 0})) - double(r2.weights.at({0, 0, 0, T - 1})));
    ctx.identity(moved < 1e-6, "C4",
              ctx.f("move the token from position 0 to {}: its weight changes by {} (distance plays no part)", T - 1,
                          e2(moved)));
    ctx.experiment_claim(
        experiment_distance(), "C1",
        "the source's \"errors concentrate on sentences longer than ~40 tokens\" is about a trained "
        "text classifier; this lesson shows the mechanism (the decay above), not that figure. "
        "attn experiment distance trains an RNN and one attention layer on \"the token d steps back\".");
    return X;
}

void all_positions_at_once(LessonContext& ctx, const Tensor& X, Rng& rng) {
    ctx.section("All positions at once (C2)");
    ctx.para("The running summary needs step t−1 finished before step t: T steps in a row. Attention computes "
             "every position's output from the same Q, K, V with two matrix products, and no position waits "
             "for another. The check: compute all 64 outputs in one call, then each one alone; they agree.");
    AttentionRecord rall;
    const Tensor Qall = X;  // every token asks its own question
    const Tensor all = attention_reference(Qall, X, X, Mask::none(), AttentionOptions{}, &rall);
    ctx.shape("out", all, "all 64 positions in one call");
    double worst = 0;
    for (int64_t t = 0; t < T; ++t) {
        Tensor qt({1, 1, 1, D});
        for (int64_t d = 0; d < D; ++d) qt.at({0, 0, 0, d}) = X.at({0, 0, t, d});
        const Tensor one = attention_reference(qt, X, X, Mask::none(), AttentionOptions{});
        for (int64_t d = 0; d < D; ++d)
            worst = std::max(worst, double(std::fabs(one.at({0, 0, 0, d}) - all.at({0, 0, t, d}))));
    }
    ctx.figure("independent_rows_max_diff", worst);
    ctx.identity(
        worst < 1e-5, "C2",
        ctx.f(
            "each position's output is independent of the others' work (64 single-row calls vs one call: max diff {})",
            e2(worst)));
    // the top-left C x C corner of the [64, 64] weights (C: what fits 80 columns with numbers)
    const int64_t C = 14;
    std::vector<float> corner;
    for (int64_t i = 0; i < C; ++i)
        for (int64_t j = 0; j < C; ++j) corner.push_back(rall.weights.at({0, 0, i, j}));
    ctx.heatmap("self_attention_corner",
                make_panel(ctx.f("self-attention weights, top-left {} × {} of [{}, {}] (row = query)", C, C, T, T),
                           corner.data(), C, C, index_labels(C, "t"), index_labels(C, "t")));
    ctx.para(ctx.f(
        "Each row is one query's weights over the first {} keys (the rest of the row holds the "
        "remaining mass). The bright diagonal is there only because this lesson uses the tokens themselves as queries "
        "and keys (Q = K = X): a random vector's dot product with itself, its squared length, beats its dot "
        "product with another random vector. A real layer projects the queries and keys with separate "
        "learned matrices, and then nothing favours the diagonal:",
        C));
    // the same tokens through two independent random projections W_q, W_k [D, D]
    Linear wq(D, D), wk(D, D);
    wq.init(InitSpec{InitKind::Normal, 1.0f / std::sqrt(float(D))}, rng);
    wk.init(InitSpec{InitKind::Normal, 1.0f / std::sqrt(float(D))}, rng);
    const Tensor Xp = X.reshaped({1, T, D});  // [1, T, D]
    const Tensor Qp = wq.forward(Xp).reshaped({1, 1, T, D}), Kp = wk.forward(Xp).reshaped({1, 1, T, D});
    ctx.shape("Q, K (projected)", Qp, "X·W_qᵀ + b_q, X·W_kᵀ + b_k");
    AttentionRecord rproj;
    attention_reference(Qp, Kp, X, Mask::none(), AttentionOptions{}, &rproj);
    auto diag_share = [&](const Tensor& w) {  // rows whose largest weight is on their own position
        int64_t n = 0;
        for (int64_t i = 0; i < T; ++i) {
            int64_t best_j = 0;
            for (int64_t j = 1; j < T; ++j)
                if (w.at({0, 0, i, j}) > w.at({0, 0, i, best_j})) best_j = j;
            n += best_j == i ? 1 : 0;
        }
        return double(n) / double(T);
    };
    const double same = diag_share(rall.weights), proj = diag_share(rproj.weights);
    ctx.figure("diagonal_argmax_share_q_eq_k", same);
    ctx.figure("diagonal_argmax_share_projected", proj);
    ctx.check(same > 0.75 && proj < 0.25, "C3",
              ctx.f("rows whose largest weight is their own position: {:.0f}% with Q = K = X, {:.0f}% with "
                          "separate random projections (chance: {:.1f}%)",
                          100 * same, 100 * proj, 100.0 / double(T)));
}

void run(LessonContext& ctx) {
    introduction(ctx);
    const Toy toy = dictionary_lookup(ctx);
    sharper_questions(ctx, toy);
    Rng rng = ctx.rng(1);
    const Tensor X = running_summary_forgets(ctx, rng);
    all_positions_at_once(ctx, X, rng);
}

const RegisterLesson reg{{"soft-lookup", "Attention is a soft lookup",
                          "a toy dictionary answered by a blend of values; a running summary that forgets far tokens",
                          {"C1", "C2", "C3", "C4"}, true, run, Part::core, /*minutes*/ 9}};

}  // namespace
}  // namespace attn::lessons::lesson01
