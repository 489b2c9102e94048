// attn/core/stats.hpp: what attention weights say, in numbers.
//
// Entropy H(p) = -sum p log p (0 log 0 = 0), in nats; bits = nats / ln 2.
// Normalised entropy = H / log(n_allowed): 1 is uniform over the keys the row
// may see, 0 is one-hot. Effective keys = exp(H). Head similarity is the
// Jensen-Shannon divergence (nats, in [0, ln 2]) between two heads' rows.
//
// And the summaries of a sample, the one place for them (the seeds of the experiments,
// benchmark repeats, the variance experiment's scores, the lessons): mean, median,
// sample std, percentile.
#pragma once

#include <cstdint>
#include <vector>

#include "attn/core/mask.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

// The mean, summed in order (0 for none).
double mean(const std::vector<double>& v);
// The median (the mean of the middle two for an even count; 0 for none).
double median(std::vector<double> v);
// The sample standard deviation, with n - 1 (0 for fewer than two values).
double sample_std(const std::vector<double>& v);
// The q-quantile, q in [0, 1], interpolated linearly between order statistics (numpy's
// default); reorders v, which must not be empty.
double percentile(std::vector<float>& v, double q);

double entropy_nats(const float* p, int64_t n);
double js_divergence(const float* p, const float* q, int64_t n);

struct RowStats {
    double entropy_nats = 0, entropy_bits = 0, normalized_entropy = 0;
    double max_weight = 0, effective_keys = 0, row_sum = 0;
    int64_t allowed = 0;  // keys the row may attend to
};
// Stats of one row p[n] that may attend to `allowed` keys.
RowStats row_stats(const float* p, int64_t n, int64_t allowed);

struct HeadStats {
    double mean_entropy_nats = 0, mean_entropy_bits = 0, mean_normalized_entropy = 0;
    double mean_max_weight = 0, mean_effective_keys = 0;
    int64_t rows = 0;  // rows averaged: every (b, i) with at least 2 allowed keys
};
// weights (B, H, Tq, Tk) -> one HeadStats per head. Rows with fewer than 2
// allowed keys carry no choice and are skipped (their entropy is 0 by force).
std::vector<HeadStats> head_stats(const Tensor& weights, const Mask& mask);

// (H, H) matrix of the mean JS divergence between heads over the rows above.
Tensor head_similarity(const Tensor& weights, const Mask& mask);

// max over rows that have an allowed key of |sum_j w_ij - 1|; NaN when a row
// holds a NaN, so that `err < tol` fails on it. A row whose every allowed key
// has an additive -inf is fully masked (its weights are all 0) and not counted.
double max_row_sum_error(const Tensor& weights, const Mask& mask);

// J = diag(p) - p p^T for p = softmax(z): dp/dz, n x n row-major.
std::vector<double> softmax_jacobian(const float* p, int64_t n);
// Frobenius norm of J, computed without forming it:
//   ||J||_F^2 = sum_i p_i^2 (1 - 2 p_i) + (sum_i p_i^2)^2
double softmax_jacobian_norm(const float* p, int64_t n);

}  // namespace attn
