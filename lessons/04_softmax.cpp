// Lesson 4: softmax, and how it saturates: near one-hot rows pass almost no
// gradient (C12, C13).
#include "common.hpp"

namespace attn::lessons::lesson04 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

// norms: the two-score rows; all_norms / rest: every row of the table, rest = 1 − max weight,
// summed from the other weights (in float, a max weight of 1 − 1e-13 rounds to 1).
struct JacobianRows {
    std::vector<double> norms, all_norms, rest;
};

void softmax_of_two_scores(LessonContext& ctx) {
    ctx.section("Softmax of two scores");
    ctx.para("Softmax turns a row of scores into weights: exponentiate each, divide by the total. Every "
             "weight is positive and the row sums to 1. Only differences between scores matter, and they "
             "matter exponentially: a gap of 3 is already lopsided, a gap of 30 is a landslide.");
    Table t;
    t.columns = {"scores", "softmax", "closed form 1/(1+e^gap)"};
    t.formats = {"", "", "{:.3e}"};
    std::vector<std::vector<float>> results;
    ctx.predict("softmax_0_3", "softmax turns the scores [0, 3] into two weights. What weight does the score 3 get?",
                softmax_vec({0.0f, 3.0f})[1], Closeness::absolute(0.02));
    for (float gap : {3.0f, 30.0f}) {
        Tensor z = Tensor::from({1, 2}, {0.0f, gap});  // [rows=1, n=2]
        ctx.shape("scores", z, ctx.f("one row: [0, {:g}]", gap));
        softmax_rows(z.ptr(), 1, 2);                    // in place: now the weights
        ctx.shape("weights", z, "softmax over the last dimension");
        const std::vector<float> p = z.data;
        results.push_back(p);
        t.add({ctx.f("[0, {:g}]", gap), ctx.f("[{:.3g}, {:.4f}]", p[0], p[1]), 1.0 / (1.0 + std::exp(double(gap)))});
        const double closed = 1.0 / (1.0 + std::exp(double(gap)));
        ctx.identity(std::fabs(p[0] - closed) < 1e-6 * std::max(closed, 1e-7) + 1e-12, "C12",
                  ctx.f("softmax([0, {:g}]) = [{:.3g}, {:.4f}] matches 1/(1+e^{:g}) = {:.3g}", gap, p[0], p[1], gap,
                              closed));
    }
    ctx.table("two_scores", t);
    ctx.figure("softmax_0_3", results[0]);
    ctx.figure("softmax_0_30", results[1]);
    ctx.identity(results[1][0] < 1e-12, "C12",
              ctx.f("with a gap of 30 the smaller weight is {}: the row is one-hot for every practical purpose",
                          e2(results[1][0])));
}

// The Jacobian's norm along rows that grow sharper: two scores [0, c], then 8 random ones × s.
JacobianRows jacobian_along_sharper_rows(LessonContext& ctx) {
    ctx.section("The gradient dies as the row saturates");
    ctx.para("Training moves weights by nudging scores. How much a weight moves per unit of score is the "
             "softmax Jacobian J = diag(p) − p pᵀ. For two scores its entries are ±p₀p₁, largest at a tie "
             "(½·½) and vanishing as either weight nears 1. We measure its size (Frobenius norm) along a row that "
             "grows sharper: scores [0, c] for growing c, then 8 random scores multiplied by s.");
    Table j;
    j.columns = {"scores", "max weight", "‖J‖_F", "dp₀/dz₀ = p₀(1−p₀)"};
    j.formats = {"", "{:.6f}", "{:.3e}", "{:.3e}"};
    JacobianRows rows;
    auto &norms = rows.norms, &all_norms = rows.all_norms, &rest = rows.rest;
    auto others = [](const std::vector<float>& p) {
        const size_t m = static_cast<size_t>(std::max_element(p.begin(), p.end()) - p.begin());
        double r = 0;
        for (size_t i = 0; i < p.size(); ++i) r += i == m ? 0.0 : double(p[i]);
        return r;
    };
    for (float c : {0.0f, 1.0f, 3.0f, 10.0f, 30.0f}) {
        const auto p = softmax_vec({0.0f, c});
        const double n = softmax_jacobian_norm(p.data(), 2);
        const auto J = softmax_jacobian(p.data(), 2);
        norms.push_back(n);
        all_norms.push_back(n);
        rest.push_back(others(p));
        j.add({ctx.f("[0, {:g}]", c), std::max(p[0], p[1]), n, J[0]});
    }
    Rng rng = ctx.rng(4);
    const Tensor base_t = randn({1, 8}, rng);  // [1, 8] random scores
    ctx.shape("8 random scores", base_t);
    const std::vector<float> base = base_t.data;
    std::vector<double> norms8;
    for (float s : {1.0f, 4.0f, 16.0f, 64.0f}) {
        std::vector<float> z(base);
        for (auto& v : z) v *= s;
        const auto p = softmax_vec(z);
        norms8.push_back(softmax_jacobian_norm(p.data(), 8));
        all_norms.push_back(norms8.back());
        rest.push_back(others(p));
        j.add({ctx.f("8 random × {:g}", s), *std::max_element(p.begin(), p.end()), norms8.back(), nlohmann::json()});
    }
    ctx.table("jacobian", j);
    ctx.figure("jacobian_norm_two_scores", norms);
    ctx.figure("jacobian_norm_8_scores", norms8);
    return rows;
}

void the_gradient_dies(LessonContext& ctx, const JacobianRows& rows) {
    const auto &norms = rows.norms, &all_norms = rows.all_norms, &rest = rows.rest;
    // the closed-form norm against the explicit Jacobian
    const auto p3 = softmax_vec({0.0f, 3.0f});
    const auto J3 = softmax_jacobian(p3.data(), 2);
    double fro = 0;
    for (double v : J3) fro += v * v;
    fro = std::sqrt(fro);
    ctx.identity(std::fabs(fro - softmax_jacobian_norm(p3.data(), 2)) < 1e-6 * fro, "C13",
              ctx.f("‖J‖_F from the formula equals the norm of the explicit Jacobian at [0, 3] ({} vs {})", g4(fro),
                          g4(softmax_jacobian_norm(p3.data(), 2))));
    bool falling = true;
    for (size_t i = 1; i < norms.size(); ++i) falling = falling && norms[i] < norms[i - 1];
    ctx.identity(falling, "C13",
                 ctx.f("two scores: the Jacobian shrinks at every step as the gap grows ({} at a tie, {} at [0, 30])",
                       g3(norms.front()), e2(norms.back())));
    // ‖J‖_F ≤ Σ|J_ij| = 2(1 − Σp²) ≤ 2(1 − p_max²) ≤ 4(1 − p_max): a row whose
    // largest weight is 1 − ε passes at most 4ε of gradient, however many keys
    bool bounded = true;
    double worst_ratio = 0;
    for (size_t r = 0; r < rest.size(); ++r) {
        const double bound = 4 * rest[r];
        bounded = bounded && all_norms[r] <= bound + 1e-12;
        if (bound > 0) worst_ratio = std::max(worst_ratio, all_norms[r] / bound);
    }
    ctx.identity(bounded, "C13",
              ctx.f("on every row above ‖J‖_F ≤ 4·(1 − max weight) (closest: {:.2f} of the bound): a nearly "
                          "one-hot row passes almost nothing, for two keys or eight",
                          worst_ratio));
    ctx.identity(norms.back() < 1e-9 * norms.front(), "C13",
              ctx.f("at [0, 30] a score change moves the weights {} times less than at a tie",
                          e2(norms.front() / norms.back())));
    ctx.para("That is the mechanism behind the \"locking\" the source warns about: through the softmax, a "
             "nearly one-hot row passes almost no gradient to its scores, so the signal that would move weight to "
             "a better key is tiny. Tiny is not zero, though, and the row is not frozen for good: the value path "
             "(weights·V) still carries gradient to V and the layers below, and optimisers such as Adam divide "
             "each update by the gradient's recent size, which rescales small gradients back up. How much "
             "saturation actually slows training is an empirical question (`attn experiment scale` "
             "measures it); what this lesson shows is only that the softmax's own gradient collapses. "
             "Lesson 5 shows how large scores get without the 1/√Dk scaling.");
}

// "Cannot recover", in numbers: the first step of SGD and of Adam on a saturated row's scores.
void can_a_saturated_row_recover(LessonContext& ctx, const std::vector<double>& norms) {
    // "cannot recover", in numbers: the first step of each optimiser on a score whose gradient is
    // ‖J‖ (the upstream gradient taken as 1), relative to the same step at a tie. Plain SGD moves
    // lr·g; Adam's first step, bias-corrected, is lr·g/(|g| + eps): full size until g nears eps.
    const double eps = 1e-8;
    const auto adam = [eps](double g) { return g / (g + eps); };
    const double sgd10 = norms[3] / norms[0], adam10 = adam(norms[3]) / adam(norms[0]);
    const double sgd30 = norms[4] / norms[0], adam30 = adam(norms[4]) / adam(norms[0]);
    ctx.figure("first_step_vs_tie_sgd_adam_at_10", std::vector<double>{sgd10, adam10});
    ctx.figure("first_step_vs_tie_sgd_adam_at_30", std::vector<double>{sgd30, adam30});
    ctx.qualified("C13", ctx.f("the gradient through a saturated row does collapse (above), but whether the row "
                               "\"cannot recover\" depends on the optimiser and on how far it is saturated. The first "
                               "step on the scores of [0, 10], against the same step at a tie: plain SGD {}, Adam "
                               "(eps = 1e-8) {}, full size. At [0, 30] both shrink (SGD {}, Adam {}): the gradient is "
                               "below Adam's eps. `attn experiment lock-in` measures recovery in training.",
                               e2(sgd10), g3(adam10), e2(sgd30), e2(adam30)));
}

void run(LessonContext& ctx) {
    softmax_of_two_scores(ctx);
    const JacobianRows rows = jacobian_along_sharper_rows(ctx);
    the_gradient_dies(ctx, rows);
    can_a_saturated_row_recover(ctx, rows.norms);
    ctx.exercise("softmax");
}

const RegisterLesson reg{{"softmax", "Softmax and saturation",
                          "softmax([0, 3]) and ([0, 30]); the Jacobian's norm collapses as a row nears one-hot",
                          {"C12", "C13"}, false, run, Part::core, /*minutes*/ 4}};

}  // namespace
}  // namespace attn::lessons::lesson04
