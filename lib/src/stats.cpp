// Attention statistics: entropy, max weight, effective keys, head similarity,
// row sums and the softmax Jacobian (see attn/stats.hpp).
#include "attn/stats.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/errors.hpp"

namespace attn {

double entropy_nats(const float* p, int64_t n) {
    double h = 0;
    for (int64_t j = 0; j < n; ++j)
        if (p[j] > 0) h -= static_cast<double>(p[j]) * std::log(static_cast<double>(p[j]));
    return h;
}

double js_divergence(const float* p, const float* q, int64_t n) {
    // JS(p, q) = (KL(p || m) + KL(q || m)) / 2 with m = (p + q) / 2
    double js = 0;
    for (int64_t j = 0; j < n; ++j) {
        const double a = p[j], b = q[j], m = 0.5 * (a + b);
        if (a > 0) js += 0.5 * a * std::log(a / m);
        if (b > 0) js += 0.5 * b * std::log(b / m);
    }
    return std::max(js, 0.0);
}

RowStats row_stats(const float* p, int64_t n, int64_t allowed) {
    RowStats r;
    r.allowed = allowed;
    r.entropy_nats = entropy_nats(p, n);
    r.entropy_bits = r.entropy_nats / std::log(2.0);
    r.normalized_entropy = allowed > 1 ? r.entropy_nats / std::log(static_cast<double>(allowed)) : 0.0;
    for (int64_t j = 0; j < n; ++j) {
        r.max_weight = std::max(r.max_weight, static_cast<double>(p[j]));
        r.row_sum += p[j];
    }
    r.effective_keys = std::exp(r.entropy_nats);
    return r;
}

static void check_weights(const Tensor& w, const Mask& mask) {
    if (w.rank() != 4) throw ShapeError(fmt::format("attention weights must be (B, H, Tq, Tk), got {}", shape_str(w.shape)));
    mask.check(w.dim(0), w.dim(2), w.dim(3));
}

std::vector<HeadStats> head_stats(const Tensor& w, const Mask& mask) {
    // w (B, H, Tq, Tk)
    check_weights(w, mask);
    const int64_t B = w.dim(0), H = w.dim(1), Tq = w.dim(2), Tk = w.dim(3);
    std::vector<HeadStats> out(static_cast<size_t>(H));
    for (int64_t h = 0; h < H; ++h) {
        HeadStats& s = out[static_cast<size_t>(h)];
        for (int64_t b = 0; b < B; ++b)
            for (int64_t i = 0; i < Tq; ++i) {
                const int64_t n_ok = mask.allowed_count(b, i, Tk);
                if (n_ok < 2) continue;
                const RowStats r = row_stats(w.ptr() + ((b * H + h) * Tq + i) * Tk, Tk, n_ok);
                s.mean_entropy_nats += r.entropy_nats;
                s.mean_entropy_bits += r.entropy_bits;
                s.mean_normalized_entropy += r.normalized_entropy;
                s.mean_max_weight += r.max_weight;
                s.mean_effective_keys += r.effective_keys;
                ++s.rows;
            }
        if (s.rows > 0) {
            const double n = static_cast<double>(s.rows);
            s.mean_entropy_nats /= n;
            s.mean_entropy_bits /= n;
            s.mean_normalized_entropy /= n;
            s.mean_max_weight /= n;
            s.mean_effective_keys /= n;
        }
    }
    return out;
}

Tensor head_similarity(const Tensor& w, const Mask& mask) {
    // w (B, H, Tq, Tk) -> (H, H) mean JS divergence over rows with >= 2 allowed keys
    check_weights(w, mask);
    const int64_t B = w.dim(0), H = w.dim(1), Tq = w.dim(2), Tk = w.dim(3);
    Tensor sim(Shape{H, H});
    int64_t rows = 0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < Tq; ++i) {
            if (mask.allowed_count(b, i, Tk) < 2) continue;
            ++rows;
            for (int64_t h1 = 0; h1 < H; ++h1)
                for (int64_t h2 = h1 + 1; h2 < H; ++h2) {
                    const double js = js_divergence(w.ptr() + ((b * H + h1) * Tq + i) * Tk,
                                                    w.ptr() + ((b * H + h2) * Tq + i) * Tk, Tk);
                    sim.data[static_cast<size_t>(h1 * H + h2)] += static_cast<float>(js);
                }
        }
    for (int64_t h1 = 0; h1 < H; ++h1)
        for (int64_t h2 = h1 + 1; h2 < H; ++h2) {
            float& v = sim.data[static_cast<size_t>(h1 * H + h2)];
            if (rows > 0) v /= static_cast<float>(rows);
            sim.data[static_cast<size_t>(h2 * H + h1)] = v;
        }
    return sim;
}

double max_row_sum_error(const Tensor& w, const Mask& mask) {
    check_weights(w, mask);
    const int64_t B = w.dim(0), H = w.dim(1), Tq = w.dim(2), Tk = w.dim(3);
    double worst = 0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < Tq; ++i) {
                if (mask.allowed_count(b, i, Tk) == 0) continue;
                double sum = 0;
                const float* row = w.ptr() + ((b * H + h) * Tq + i) * Tk;
                for (int64_t j = 0; j < Tk; ++j) sum += row[j];
                worst = std::max(worst, std::fabs(sum - 1.0));
            }
    return worst;
}

std::vector<double> softmax_jacobian(const float* p, int64_t n) {
    std::vector<double> J(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
            J[static_cast<size_t>(i * n + j)] = (i == j ? p[i] : 0.0) - static_cast<double>(p[i]) * p[j];
    return J;
}

double softmax_jacobian_norm(const float* p, int64_t n) {
    // ||diag(p) - p pᵀ||_F² = Σ p_i² - 2 Σ p_i³ + (Σ p_i²)²
    double s2 = 0, s3 = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double x = p[i];
        s2 += x * x;
        s3 += x * x * x;
    }
    return std::sqrt(std::max(s2 - 2.0 * s3 + s2 * s2, 0.0));
}

}  // namespace attn
