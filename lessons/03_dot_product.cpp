// Lesson 3: what a dot-product score measures: direction and length (C11).
#include "common.hpp"

namespace attn::lessons::lesson03 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

double norm(const std::vector<float>& v) {
    double s = 0;
    for (float x : v) s += double(x) * x;
    return std::sqrt(s);
}
double dot(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
    return s;
}

constexpr int64_t Dk = 8;

// The query and the key the sections share, the generator they were drawn from (the last section
// draws from it again), and |q|.
struct QueryKey {
    Rng rng;
    Tensor q, k;  // [1, 1, 1, Dk] each
    double nq = 0;
    explicit QueryKey(Rng r) : rng(r) {}
};

void score_is_lengths_times_cosine(LessonContext& ctx, QueryKey& qk) {
    ctx.section("score = |q| |k| cos θ");
    ctx.para("The score of a query against a key is their dot product. Geometry splits it into three "
             "factors: the two lengths and the cosine of the angle between them. The cosine is the part that "
             "means \"pointing the same way\"; the lengths multiply it.");
    Rng& rng = qk.rng;
    qk.q = randn({1, 1, 1, Dk}, rng);  // [1,1,1,Dk]
    qk.k = randn({1, 1, 1, Dk}, rng);  // [1,1,1,Dk]
    const Tensor& q = qk.q;
    Tensor& k = qk.k;
    if (dot(q.data, k.data) < 0)
        for (auto& v : k.data) v = -v;  // a key on q's side, so the score is positive
    ctx.shape("q", q);
    ctx.shape("k", k);
    AttentionRecord rec;
    attention_reference(q, k, k, Mask::none(), opts_scale(Scale{ScaleKind::None, 1.0f}), &rec);
    ctx.shape("score", rec.scores_raw, "q·kᵀ (no scaling here)");
    qk.nq = norm(q.data);
    const double s = rec.scores_raw.data[0], nq = qk.nq, nk = norm(k.data), cos = dot(q.data, k.data) / (nq * nk);
    ctx.code(fmt::format("q·k = {:.4f}\n|q| = {:.4f}, |k| = {:.4f}, cos θ = {:.4f}\n|q| |k| cos θ = {:.4f}", s, nq, nk,
                         cos, nq * nk * cos));
    ctx.identity(std::fabs(s - nq * nk * cos) < 1e-4 * std::max(1.0, std::fabs(s)), "C11",
              ctx.f("the library's score equals |q||k|cos θ (diff {})", e2(std::fabs(s - nq * nk * cos))));
}

void longer_vectors_bigger_scores(LessonContext& ctx, const QueryKey& qk) {
    const Tensor &q = qk.q, &k = qk.k;
    const double nq = qk.nq;
    ctx.section("Longer vectors, bigger scores");
    ctx.para("Stretch the key by a factor c: the angle does not move, yet the score grows by c. A token whose "
             "key happens to be long wins attention from every query that points roughly its way.");
    Table t;
    t.columns = {"key", "|k|", "cos θ", "score q·k"};
    t.formats = {"", "{:.3f}", "{:.3f}", "{:.3f}"};
    std::vector<double> scores;
    for (float c : {1.0f, 2.0f, 4.0f}) {
        Tensor kc = k;
        for (auto& v : kc.data) v *= c;
        AttentionRecord r;
        attention_reference(q, kc, kc, Mask::none(), opts_scale(Scale{ScaleKind::None, 1.0f}), &r);
        ctx.shape(ctx.f("{:g} × k", c), kc);
        scores.push_back(r.scores_raw.data[0]);
        t.add({ctx.f("{:g} × k", c), norm(kc.data), dot(q.data, kc.data) / (nq * norm(kc.data)), scores.back()});
    }
    ctx.table("stretch", t);
    ctx.figure("scores_by_key_length", scores);
    ctx.identity(std::fabs(scores[2] - 4 * scores[0]) < 1e-4 * std::max(1.0, std::fabs(scores[2])), "C11",
              ctx.f("4 × k gives 4 × the score ({} vs 4 × {}), same cos θ", g4(scores[2]), g4(scores[0])));
}

void a_long_key_can_win(LessonContext& ctx, QueryKey& qk) {
    const Tensor& q = qk.q;
    const double nq = qk.nq;
    Rng& rng = qk.rng;
    ctx.section("A long key can beat a well-aligned one");
    ctx.para("Two keys compete for one query. k_near is 15° away from q's direction, with length 1; "
             "k_far is 60° away, with length 4. The one with the higher cosine is not the one that gets the "
             "weight.");
    // Built from q's unit direction u and a unit vector p perpendicular to it
    // (Gram-Schmidt on a random draw): k_near at 15 degrees with length 1,
    // k_far at 60 degrees with length 4.
    std::vector<float> u(q.data), p(static_cast<size_t>(Dk));
    for (auto& v : u) v = static_cast<float>(v / nq);
    for (auto& v : p) v = rng.normal();
    const double pu = dot(p, u);
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(p[i] - pu * u[i]);
    const double np = norm(p);
    for (auto& v : p) v = static_cast<float>(v / np);
    const double pi = std::acos(-1.0);
    auto at_angle = [&](double deg, double len) {
        std::vector<float> v(u.size());
        for (size_t i = 0; i < v.size(); ++i)
            v[i] = static_cast<float>(len * (std::cos(deg * pi / 180) * u[i] + std::sin(deg * pi / 180) * p[i]));
        return v;
    };
    const std::vector<float> near = at_angle(15, 1), far = at_angle(60, 4);
    Tensor K2 = rows4({near, far});  // [1,1,2,Dk]
    ctx.shape("keys", K2, "k_near, k_far");
    AttentionRecord r2;
    attention_reference(q, K2, K2, Mask::none(), AttentionOptions{}, &r2);
    const double cn = dot(q.data, near) / (nq * norm(near)), cf = dot(q.data, far) / (nq * norm(far));
    Table tw;
    tw.columns = {"key", "|k|", "cos θ", "score/√Dk", "weight"};
    tw.formats = {"", "{:.2f}", "{:.3f}", "{:.3f}", "{:.3f}"};
    tw.add({"k_near", norm(near), cn, r2.scores_scaled.data[0], r2.weights.data[0]});
    tw.add({"k_far", norm(far), cf, r2.scores_scaled.data[1], r2.weights.data[1]});
    ctx.table("near_far", tw);
    ctx.figure("cos_near", cn);
    ctx.figure("cos_far", cf);
    ctx.figure("weights_near_far", r2.weights.data);
    ctx.identity(cn > cf && r2.weights.data[1] > r2.weights.data[0], "C11",
                 ctx.f("k_near has the higher cosine ({:.3f} > {:.3f}) but k_far gets the weight ({:.3f} > {:.3f})", cn,
                       cf, r2.weights.data[1], r2.weights.data[0]));
    ctx.para("That outcome was built in: the two keys were constructed at those angles and lengths, so the "
             "check shows the arithmetic (4·cos 60° = 2 > cos 15° ≈ 0.97) rather than measuring anything. "
             "Whether that is a bug or a feature is lesson 6's question: length can carry meaning (a strong "
             "token), and cosine similarity throws it away.");
}

void run(LessonContext& ctx) {
    QueryKey qk(ctx.rng(3));
    score_is_lengths_times_cosine(ctx, qk);
    longer_vectors_bigger_scores(ctx, qk);
    a_long_key_can_win(ctx, qk);
}

const RegisterLesson reg{{"dot-product", "The dot product as a score",
                          "score = |q||k|cos θ; a longer vector gets a bigger score", {"C11"}, false, run, Part::core,
                          /*minutes*/ 2}};

}  // namespace
}  // namespace attn::lessons::lesson03
