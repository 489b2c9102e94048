// Lesson 16: the backward pass of attention. dV = Pᵀ·dO, dP = dO·Vᵀ,
// dS = P∘(dP − rowsum(P∘dP)), dQ = f·dS·K, dK = f·dSᵀ·Q, computed live with their
// shapes, checked against the library's reference backward (attn/nn/ops.hpp)
// and against finite differences; then why a saturated row passes almost no
// gradient to its scores (lesson 4's Jacobian, C13).
#include <functional>

#include "attn/nn/ops.hpp"
#include "common.hpp"

namespace attn::lessons::lesson16 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

using Mat = std::vector<double>;  // row-major

// out (n, m) = a (n, k) · b (k, m), or with b read transposed (b is (m, k)).
Mat mm(const Mat& a, const Mat& b, int64_t n, int64_t k, int64_t m, bool bt = false) {
    Mat o(static_cast<size_t>(n * m), 0.0);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
            double s = 0;
            for (int64_t t = 0; t < k; ++t)
                s += a[static_cast<size_t>(i * k + t)] *
                     (bt ? b[static_cast<size_t>(j * k + t)] : b[static_cast<size_t>(t * m + j)]);
            o[static_cast<size_t>(i * m + j)] = s;
        }
    return o;
}

Mat tr(const Mat& a, int64_t n, int64_t m) {
    Mat o(a.size());
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) o[static_cast<size_t>(j * n + i)] = a[static_cast<size_t>(i * m + j)];
    return o;
}

double max_abs_diff(const Mat& a, const Mat& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}

double norm(const double* p, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += p[i] * p[i];
    return std::sqrt(s);
}

Table matrix_table(const Mat& m, int64_t rows, int64_t cols, const std::string& row_prefix,
                   const std::string& fmtspec) {
    Table t;
    t.columns = {""};
    for (int64_t j = 0; j < cols; ++j) t.columns.push_back(fmt::format("{}", j));
    t.formats = {""};
    for (int64_t j = 0; j < cols; ++j) t.formats.push_back(fmtspec);
    for (int64_t i = 0; i < rows; ++i) {
        std::vector<nlohmann::json> r = {fmt::format("{}{}", row_prefix, i)};
        for (int64_t j = 0; j < cols; ++j) r.push_back(m[static_cast<size_t>(i * cols + j)]);
        t.add(r);
    }
    return t;
}

constexpr int64_t T = 4, Dk = 3, Dv = 2;

// The loss the lesson differentiates: L = sum(O ∘ G), so dL/dO = G, a fixed upstream gradient.
double loss_of(const Mat& q, const Mat& k, const Mat& v, const Mat& G, double f) {
    Mat out(static_cast<size_t>(T * Dv)), att(static_cast<size_t>(T * T));
    nn::self_attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), 1, T, 1, Dk, Dv, f, false, 0.0f,
                               0);
    double L = 0;
    for (size_t i = 0; i < out.size(); ++i) L += out[i] * G[i];
    return L;
}

Mat from_tensor(const Tensor& t) { return Mat(t.data.begin(), t.data.end()); }

struct Forward {
    Mat q, k, v, dO;
    double f = 0;  // 1/√d_k
    Mat O, P;
};

// The gradients, step by step back through the forward pass.
struct Grads {
    Mat dV, dP, dS, dQ, dK;
};

// One head's random Q, K, V and upstream dO, and the forward pass's O and P.
Forward what_the_backward_produces(LessonContext& ctx) {
    ctx.section("What the backward pass must produce");
    ctx.para("Training needs, for every input of attention, how the loss changes when that input moves. The forward "
             "pass is S = f·Q·Kᵀ (f = 1/√d_k), P = softmax(S) row by row, O = P·V. The layer above hands back "
             "dO = ∂L/∂O, one row per query, and the backward pass turns it into dQ, dK and dV, running the forward "
             "steps in reverse. We take one head, T = 4 tokens, d_k = 3, d_v = 2, random Q, K, V, and a random dO.");
    Rng rng = ctx.rng(16);
    const Mat q = from_tensor(randn({T, Dk}, rng)), k = from_tensor(randn({T, Dk}, rng));
    const Mat v = from_tensor(randn({T, Dv}, rng)), dO = from_tensor(randn({T, Dv}, rng));
    const double f = 1.0 / std::sqrt(static_cast<double>(Dk));
    ctx.shape("Q", Shape{T, Dk}, "T × d_k");
    ctx.shape("K", Shape{T, Dk}, "T × d_k");
    ctx.shape("V", Shape{T, Dv}, "T × d_v");
    Mat O(static_cast<size_t>(T * Dv)), P(static_cast<size_t>(T * T));
    nn::self_attention_forward(O.data(), P.data(), q.data(), k.data(), v.data(), 1, T, 1, Dk, Dv, f, false, 0.0f, 0);
    ctx.shape("P", Shape{T, T}, "softmax(f·Q·Kᵀ), saved by the forward pass for the backward");
    ctx.shape("O", Shape{T, Dv}, "P·V");
    ctx.shape("dO", Shape{T, Dv}, "from the layer above, same shape as O");
    ctx.table("P", matrix_table(P, T, T, "q", "{:.3f}"));
    return {q, k, v, dO, f, O, P};
}

void through_the_product(LessonContext& ctx, const Forward& fw, Grads& g) {
    const Mat &v = fw.v, &dO = fw.dO, &P = fw.P;
    ctx.section("Through the product O = P·V");
    ctx.para(
        "O = P·V is a matrix product, so its gradient is two more: dV = Pᵀ·dO (each value collects dO from every "
        "query, weighted by how much that query used it) and dP = dO·Vᵀ (how much the loss would change if query i "
        "gave key j a little more weight: the match between what i should output and v_j).");
    g.dV = mm(tr(P, T, T), dO, T, T, Dv);
    g.dP = mm(dO, v, T, Dv, T, true);
    const Mat& dP = g.dP;
    ctx.code(ctx.tr("dV = Pᵀ·dO    (4×4)ᵀ·(4×2) → 4×2, the shape of V\n"
                    "dP = dO·Vᵀ    (4×2)·(2×4)   → 4×4, the shape of P"));
    ctx.shape("dV", Shape{T, Dv}, "Pᵀ·dO");
    ctx.shape("dP", Shape{T, T}, "dO·Vᵀ");
    ctx.table("dP", matrix_table(dP, T, T, "q", "{:+.3f}"));
}

void through_the_softmax(LessonContext& ctx, const Forward& fw, Grads& g) {
    const Mat &P = fw.P, &dP = g.dP;
    Mat& dS = g.dS;
    ctx.section("Through the softmax");
    ctx.para("Each row of P is a softmax of its row of S, and the softmax Jacobian is J = diag(p) − p·pᵀ (lesson 4). "
             "Multiplying a row of dP by it gives dS = P∘(dP − rowsum(P∘dP)): each score's gradient is its weight "
             "times how much better than the row's weighted average its key would be. A row of dS sums to zero, "
             "because adding a constant to every score of a row changes nothing.");
    dS.assign(static_cast<size_t>(T * T), 0.0);
    std::vector<double> dS_row_sums;
    for (int64_t i = 0; i < T; ++i) {
        double rs = 0;
        for (int64_t j = 0; j < T; ++j) rs += P[static_cast<size_t>(i * T + j)] * dP[static_cast<size_t>(i * T + j)];
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) {
            const size_t ij = static_cast<size_t>(i * T + j);
            dS[ij] = P[ij] * (dP[ij] - rs);
            sum += dS[ij];
        }
        dS_row_sums.push_back(sum);
    }
    ctx.shape("dS", Shape{T, T}, "P∘(dP − rowsum(P∘dP)), the shape of S");
    ctx.table("dS", matrix_table(dS, T, T, "q", "{:+.4f}"));
    double worst_sum = 0;
    for (double s : dS_row_sums) worst_sum = std::max(worst_sum, std::fabs(s));
    ctx.figure("dS_row_sums", dS_row_sums);
    ctx.identity(worst_sum < 1e-12, "C12", ctx.f("every row of dS sums to 0 (largest |row sum| {})", e2(worst_sum)));
    // dS row = J·dP row, with lesson 4's explicit Jacobian
    double worst_j = 0;
    for (int64_t i = 0; i < T; ++i) {
        std::vector<float> pf(P.begin() + i * T, P.begin() + (i + 1) * T);
        const std::vector<double> J = softmax_jacobian(pf.data(), T);
        for (int64_t a = 0; a < T; ++a) {
            double s = 0;
            for (int64_t b = 0; b < T; ++b) s += J[static_cast<size_t>(a * T + b)] * dP[static_cast<size_t>(i * T + b)];
            // J is built from the weights rounded to float: agree to float precision
            worst_j = std::max(worst_j, std::fabs(s - dS[static_cast<size_t>(i * T + a)]));
        }
    }
    ctx.identity(worst_j < 1e-6, "C12",
              ctx.f("each row of dS is lesson 4's Jacobian J = diag(p) − p·pᵀ times that row of dP (largest "
                    "difference {}, J built from the weights in float)",
                    e2(worst_j)));
}

void through_the_scores(LessonContext& ctx, const Forward& fw, Grads& g) {
    const Mat &q = fw.q, &k = fw.k, &v = fw.v, &dO = fw.dO, &dS = g.dS, &dV = g.dV;
    const double f = fw.f;
    Mat &dQ = g.dQ, &dK = g.dK;
    ctx.section("Through the scores S = f·Q·Kᵀ");
    ctx.para("The last product gives dQ = f·dS·K and dK = f·dSᵀ·Q: a query moves toward the keys whose scores should "
             "rise, a key toward the queries that want it more.");
    dQ = mm(dS, k, T, T, Dk), dK = mm(tr(dS, T, T), q, T, T, Dk);
    for (auto& x : dQ) x *= f;
    for (auto& x : dK) x *= f;
    ctx.code("dQ = f·dS·K    (4×4)·(4×3) → 4×3\ndK = f·dSᵀ·Q   (4×4)ᵀ·(4×3) → 4×3");
    ctx.shape("dQ", Shape{T, Dk}, "f·dS·K");
    ctx.shape("dK", Shape{T, Dk}, "f·dSᵀ·Q");
    // the library's reference backward (core's, on the tiny Transformer's layout; in double here)
    Mat lq(q.size(), 0.0), lk(k.size(), 0.0), lv(v.size(), 0.0);
    nn::self_attention_backward(lq.data(), lk.data(), lv.data(), dO.data(), q.data(), k.data(), v.data(), 1, T, 1, Dk,
                                Dv, f, false, 0.0f, 0);
    const double lib_err = std::max({max_abs_diff(dQ, lq), max_abs_diff(dK, lk), max_abs_diff(dV, lv)});
    ctx.identity(lib_err < 1e-12, "C12",
              ctx.f("the steps above equal core's reference backward (attention_backward.hpp) to {} in double",
                    e2(lib_err)));
}

void finite_differences(LessonContext& ctx, const Forward& fw, const Grads& grads) {
    const Mat &q = fw.q, &k = fw.k, &v = fw.v, &dO = fw.dO, &dQ = grads.dQ, &dK = grads.dK, &dV = grads.dV;
    const double f = fw.f;
    // central finite differences of L = sum(O ∘ dO)
    const double h = 1e-6;
    double fd_err = 0, gmax = 0;
    auto fd = [&](const Mat& base, const Mat& grad, int which) {
        for (size_t i = 0; i < base.size(); ++i) {
            Mat p = base, m = base;
            p[i] += h;
            m[i] -= h;
            const double lp = which == 0   ? loss_of(p, k, v, dO, f)
                              : which == 1 ? loss_of(q, p, v, dO, f)
                                           : loss_of(q, k, p, dO, f);
            const double lm = which == 0   ? loss_of(m, k, v, dO, f)
                              : which == 1 ? loss_of(q, m, v, dO, f)
                                           : loss_of(q, k, m, dO, f);
            fd_err = std::max(fd_err, std::fabs((lp - lm) / (2 * h) - grad[i]));
            gmax = std::max(gmax, std::fabs(grad[i]));
        }
    };
    fd(q, dQ, 0);
    fd(k, dK, 1);
    fd(v, dV, 2);
    Table g;
    g.columns = {"gradient", "shape", "norm", "largest |entry|"};
    g.formats = {"", "", "{:.4f}", "{:.4f}"};
    g.add({"dQ", "4×3", norm(dQ.data(), T * Dk),
           std::fabs(*std::max_element(dQ.begin(), dQ.end(),
                                       [](double a, double b) { return std::fabs(a) < std::fabs(b); }))});
    g.add({"dK", "4×3", norm(dK.data(), T * Dk),
           std::fabs(*std::max_element(dK.begin(), dK.end(),
                                       [](double a, double b) { return std::fabs(a) < std::fabs(b); }))});
    g.add({"dV", "4×2", norm(dV.data(), T * Dv),
           std::fabs(*std::max_element(dV.begin(), dV.end(),
                                       [](double a, double b) { return std::fabs(a) < std::fabs(b); }))});
    ctx.table("gradients", g);
    ctx.figure("finite_difference_error", fd_err);
    // h = 1e-6 in double: truncation ~h² times the third derivative (~1e-12 here) and rounding
    // ~1e-16·|L|/h ~ 1e-10, so 1e-8 leaves room and still catches any wrong term (gradients ~0.1-1).
    ctx.check(fd_err < 1e-8, "C12",
              ctx.f("every entry of dQ, dK, dV matches central finite differences (h = 1e-6) of L = Σ O∘dO to {} "
                    "(entries up to {})",
                    e2(fd_err), g3(gmax)));
}

void saturated_row(LessonContext& ctx, const Forward& fw) {
    const Mat &q = fw.q, &k = fw.k, &v = fw.v, &dO = fw.dO, &O = fw.O, &P = fw.P;
    const double f = fw.f;
    ctx.section("A saturated row passes almost no gradient");
    ctx.para("Scale the queries by c: the scores grow, every row of P sharpens toward one-hot, and dP = dO·Vᵀ does not "
             "change at all (it has no Q in it). Yet dS = P∘(dP − rowsum(P∘dP)) shrinks: where p ≈ 1 the bracket "
             "is ≈ 0, and everywhere else p ≈ 0. It is lesson 4's Jacobian again, whose norm vanishes as the row "
             "saturates, and it is why a row locked onto one key early is barely moved by the gradient (C13; "
             "attn experiment lock-in measures it in training).");
    // the row whose top two scores are farthest apart: scaling Q by c scales that gap by c, and the
    // gap is what sets how fast a row saturates (the sharpest row at c = 1 may have a near tie)
    const auto top_gap = [&](int64_t i) {  // log(p1 / p2) = s1 - s2
        std::vector<double> row(P.begin() + i * T, P.begin() + (i + 1) * T);
        std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<>());
        return std::log(row[0] / row[1]);
    };
    int64_t r0 = 0;
    for (int64_t i = 1; i < T; ++i)
        if (top_gap(i) > top_gap(r0)) r0 = i;
    ctx.figure("followed_row_top_gap", top_gap(r0));
    ctx.para(ctx.f("We follow row {}, the one whose two largest scores are farthest apart at c = 1 ({:.2f}): scaling "
                   "Q by c scales that gap by c, so it is the row that saturates first.",
                   r0, top_gap(r0)));
    Table s;
    s.columns = {"c (Q × c)", "max weight of the row", "‖dP row‖", "‖dS row‖", "‖J‖_F of the row", "‖dQ row‖"};
    s.formats = {"{:g}", "{:.6f}", "{:.4f}", "{:.3e}", "{:.3e}", "{:.3e}"};
    std::vector<double> dS_norms;
    double dP0 = -1;
    bool dP_fixed = true;
    for (double c : {1.0, 3.0, 10.0, 30.0}) {
        Mat qc = q;
        for (auto& x : qc) x *= c;
        Mat Oc(O.size()), Pc(P.size());
        nn::self_attention_forward(Oc.data(), Pc.data(), qc.data(), k.data(), v.data(), 1, T, 1, Dk, Dv, f, false,
                                   0.0f, 0);
        Mat gq(q.size(), 0.0), gk(k.size(), 0.0), gv(v.size(), 0.0);
        nn::self_attention_backward(gq.data(), gk.data(), gv.data(), dO.data(), qc.data(), k.data(), v.data(), 1, T, 1,
                                    Dk, Dv, f, false, 0.0f, 0);
        const Mat dPc = mm(dO, v, T, Dv, T, true);
        const double* pr = Pc.data() + r0 * T;
        const double* dpr = dPc.data() + r0 * T;
        double rs = 0;
        for (int64_t j = 0; j < T; ++j) rs += pr[j] * dpr[j];
        Mat dS0(static_cast<size_t>(T));
        for (int64_t j = 0; j < T; ++j) dS0[static_cast<size_t>(j)] = pr[j] * (dpr[j] - rs);
        std::vector<float> pf(pr, pr + T);
        const double nP = norm(dpr, T);
        if (dP0 < 0) dP0 = nP;
        dP_fixed = dP_fixed && std::fabs(nP - dP0) < 1e-12;
        dS_norms.push_back(norm(dS0.data(), T));
        s.add({c, *std::max_element(pr, pr + T), nP, dS_norms.back(), softmax_jacobian_norm(pf.data(), T),
               norm(gq.data() + r0 * Dk, Dk)});
    }
    ctx.table("saturation", s);
    ctx.figure("dS_row0_norms", dS_norms);
    ctx.identity(dP_fixed, "C13", "dP = dO·Vᵀ is the same at every c: the upstream signal did not weaken");
    ctx.check(dS_norms.back() < 1e-3 * dS_norms.front(), "C13",
              ctx.f("at c = 30 the gradient reaching the row's scores is {} of its size at c = 1 ({} vs {})",
                    e2(dS_norms.back() / dS_norms.front()), e2(dS_norms.back()), e2(dS_norms.front())));
}

void run(LessonContext& ctx) {
    const Forward fw = what_the_backward_produces(ctx);
    Grads g;
    through_the_product(ctx, fw, g);
    through_the_softmax(ctx, fw, g);
    through_the_scores(ctx, fw, g);
    finite_differences(ctx, fw, g);
    saturated_row(ctx, fw);
    ctx.exercise("softmax-grad");
}

const RegisterLesson reg{
    {"backward",
     "The backward pass of attention",
     "dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P∘(dP − rowsum(P∘dP)), checked; saturated rows pass no gradient",
     {"C12", "C13"},
     false,
     run,
     Part::advanced,
     /*minutes*/ 5}};

}  // namespace
}  // namespace attn::lessons::lesson16
