// Attention statistics: entropy, max weight, effective keys, head similarity,
// row sums and the softmax Jacobian (see attn/core/stats.hpp).
#include "attn/core/stats.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

double mean(const std::vector<double>& v) {
    if (v.empty()) return 0;
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double sample_std(const std::vector<double>& v) {
    if (v.size() < 2) return 0;
    const double m = mean(v);
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / static_cast<double>(v.size() - 1));
}

double percentile(std::vector<float>& v, double q) {
    const double h = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(h));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
    const double a = v[lo];
    if (lo + 1 >= v.size()) return a;
    const double b = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
    return a + (h - static_cast<double>(lo)) * (b - a);
}

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
    if (w.rank() != 4)
        throw ShapeError(fmt::format("attention weights must be (B, H, Tq, Tk), got {}", shape_str(w.shape)));
    mask.check(w.dim(0), w.dim(1), w.dim(2), w.dim(3));
}

std::vector<HeadStats> head_stats(const Tensor& w, const Mask& mask) {
    // w (B, H, Tq, Tk)
    check_weights(w, mask);
    const int64_t B = w.dim(0), H = w.dim(1), Tq = w.dim(2), Tk = w.dim(3);
    std::vector<HeadStats> out(static_cast<size_t>(H));
    for (int64_t h = 0; h < H; ++h) {
        HeadStats& s = out[static_cast<size_t>(h)];
        for (int64_t b = 0; b < B; ++b) {
            const MaskRow mask_b = mask.row(b, h, Tk);
            for (int64_t i = 0; i < Tq; ++i) {
                const int64_t n_ok = mask_b.allowed_count(i);
                if (n_ok < 2) continue;
                const RowStats r = row_stats(w.ptr() + ((b * H + h) * Tq + i) * Tk, Tk, n_ok);
                s.mean_entropy_nats += r.entropy_nats;
                s.mean_entropy_bits += r.entropy_bits;
                s.mean_normalized_entropy += r.normalized_entropy;
                s.mean_max_weight += r.max_weight;
                s.mean_effective_keys += r.effective_keys;
                ++s.rows;
            }
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
    // w (B, H, Tq, Tk) -> (H, H) mean JS divergence over rows with >= 2 allowed keys. With a
    // per-head mask (mask.heads() > 1) a row counts for a pair of heads when it has >= 2
    // allowed keys in both, so each pair has its own count of rows.
    check_weights(w, mask);
    const int64_t B = w.dim(0), H = w.dim(1), Tq = w.dim(2), Tk = w.dim(3);
    Tensor sim(Shape{H, H});
    std::vector<double> sum(static_cast<size_t>(H * H), 0.0);
    std::vector<int64_t> rows(static_cast<size_t>(H * H), 0);
    std::vector<MaskRow> row_of;
    for (int64_t b = 0; b < B; ++b) {
        row_of.clear();
        for (int64_t h = 0; h < H; ++h) row_of.push_back(mask.row(b, h, Tk));
        for (int64_t i = 0; i < Tq; ++i)
            for (int64_t h1 = 0; h1 < H; ++h1) {
                if (row_of[static_cast<size_t>(h1)].allowed_count(i) < 2) continue;
                for (int64_t h2 = h1 + 1; h2 < H; ++h2) {
                    if (row_of[static_cast<size_t>(h2)].allowed_count(i) < 2) continue;
                    sum[static_cast<size_t>(h1 * H + h2)] += js_divergence(w.ptr() + ((b * H + h1) * Tq + i) * Tk,
                                                                           w.ptr() + ((b * H + h2) * Tq + i) * Tk, Tk);
                    ++rows[static_cast<size_t>(h1 * H + h2)];
                }
            }
    }
    for (int64_t h1 = 0; h1 < H; ++h1)
        for (int64_t h2 = h1 + 1; h2 < H; ++h2) {
            const size_t k = static_cast<size_t>(h1 * H + h2);
            const float v = rows[k] > 0 ? static_cast<float>(sum[k] / static_cast<double>(rows[k])) : 0.0f;
            sim.data[k] = v;
            sim.data[static_cast<size_t>(h2 * H + h1)] = v;
        }
    return sim;
}

double max_row_sum_error(const Tensor& w, const Mask& mask) {
    check_weights(w, mask);
    const int64_t B = w.dim(0), H = w.dim(1), Tq = w.dim(2), Tk = w.dim(3);
    const bool additive = !mask.additive_values().empty();
    double worst = 0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            const MaskRow mask_b = mask.row(b, h, Tk);
            for (int64_t i = 0; i < Tq; ++i) {
                if (mask_b.allowed_count(i) == 0) continue;
                // a row whose every allowed key got -inf from an additive mask is fully masked too
                bool open = !additive;
                for (int64_t j = 0; j < Tk && !open; ++j)
                    open = mask_b.allowed(i, j) && mask_b.additive_at(i, j) != -INFINITY;
                if (!open) continue;
                double sum = 0;
                const float* row = w.ptr() + ((b * H + h) * Tq + i) * Tk;
                for (int64_t j = 0; j < Tk; ++j) sum += row[j];
                if (std::isnan(sum)) return sum;  // a NaN error fails every `err < tol` check
                worst = std::max(worst, std::fabs(sum - 1.0));
            }
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
    // ||diag(p) - p pᵀ||_F² = Σ_i p_i² (1 - p_i)² + Σ_{i≠j} p_i² p_j².
    // Summed around the largest weight p_m, so a saturated row (p_m ≈ 1, where
    // Σp² - 2Σp³ + (Σp²)² cancels to 0 or to rounding noise ~1e-8) keeps its
    // true, tiny norm: 1 - p_m is taken as Σ_{j≠m} p_j, and the cross terms
    // as 2 p_m² R2 + (R2² - R4) with R2, R4 the sums of p_j², p_j⁴ over j ≠ m.
    if (n <= 0) return 0.0;
    int64_t m = 0;
    for (int64_t i = 1; i < n; ++i)
        if (p[i] > p[m]) m = i;
    const double pm = p[m];
    double rest = 0, diag = 0, r2 = 0, r4 = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (i == m) continue;
        const double x = p[i];
        rest += x;
        diag += x * x * (1.0 - x) * (1.0 - x);
        r2 += x * x;
        r4 += x * x * x * x;
    }
    diag += pm * pm * rest * rest;
    return std::sqrt(diag + 2.0 * pm * pm * r2 + std::max(r2 * r2 - r4, 0.0));
}

}  // namespace attn
