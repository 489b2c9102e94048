// attn/experiments/variance.hpp: the experiment behind "q.k has std sqrt(Dk)" (C14-C17), run for real.
//
// For each Dk it draws `samples` independent pairs (q, k) of Dk-vectors, takes
// the dot products q.k, and reports their mean, std, range and percentiles
// next to what theory says. Consecutive groups of `keys` (T) scores form the
// rows of an attention matrix: each row goes through softmax, unscaled and
// scaled by 1/sqrt(Dk), and we report how saturated the row is (max weight,
// normalised entropy, one-hot fraction) and how much gradient flows back
// through softmax (Frobenius norm of its Jacobian, attn::softmax_jacobian_norm).
//
// Each row's T scores are independent draws of q.k (each with its own query);
// in a real layer a row's keys share one query, which correlates the scores
// through |q| but does not change their distribution.
//
// Sources of q and k:
//   normal     q_i, k_i ~ N(0, 1)                         theory std = sqrt(Dk)
//   uniform    q_i, k_i ~ U(-sqrt 3, sqrt 3) (variance 1)  theory std = sqrt(Dk)
//   projected  q = W_q x + b_q, k = W_k x' + b_k, nn.Linear(Dk, Dk) with the
//              torch init (W, b ~ U(-1/sqrt D, 1/sqrt D), so Var = 1/(3D)), and
//              x, x' ~ N(0, I_D), D = d_model = Dk. Then Var(q_i) = (1 + 1/D)/3
//              and, q and k being independent with zero mean over inits,
//              Var(q.k) = Dk Var(q_i)^2: theory std = sqrt(Dk) (1 + 1/Dk) / 3.
//              A fresh pair of layers is drawn for every work chunk, so the
//              numbers average over initialisations, as the theory does.
//
// Reproducible: the samples are split into fixed chunks of whole rows; chunk c
// of dimension Dk draws from attn::Rng(seed, stream = (Dk << 32) | c), which
// keys a counter-based generator (normal_block / uniform_block below). So a
// seed gives the same numbers at any thread count, and a Dk's rows do not
// depend on which other Dk are in the list.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/experiments/experiment.hpp"
#include "attn/io/dump.hpp"

namespace attn {

enum class VarianceSource { Normal, Uniform, Projected };

// "normal" | "uniform" | "projected".
const char* variance_source_name(VarianceSource s);

struct VarianceConfig {
    std::vector<int64_t> d_k{1, 16, 64, 512};
    int64_t samples = 100000;  // dot products per Dk
    int64_t keys = 64;         // T, the row length for the softmax statistics
    VarianceSource source = VarianceSource::Normal;
    uint64_t seed = 0;
    int threads = 0;           // 0: every hardware thread
};

// Throws InputError on a bad value: empty Dk list, Dk <= 0, samples <= 0,
// keys < 2, samples < keys (no row would form), threads < 0, or sizes over
// the limits below.
void validate(const VarianceConfig& cfg);
inline constexpr int64_t kVarianceMaxDk = 65536;            // 4096 for projected (Dk^2 weights)
inline constexpr int64_t kVarianceMaxDkProjected = 4096;
inline constexpr int64_t kVarianceMaxSamples = 100000000;   // 1e8
inline constexpr int64_t kVarianceMaxKeys = 1 << 20;
inline constexpr int64_t kVarianceMaxThreads = 4096;
// The largest Dk `validate` takes for this source.
inline constexpr int64_t variance_max_dk(VarianceSource s) {
    return s == VarianceSource::Projected ? kVarianceMaxDkProjected : kVarianceMaxDk;
}

struct VarianceRow {
    int64_t d_k = 0;
    bool scaled = false;          // scores divided by sqrt(Dk)
    int64_t samples = 0;          // dot products behind mean/std/percentiles
    int64_t rows = 0;             // softmax rows of `keys` scores (samples / keys)
    double mean = 0, std = 0;     // of the (scaled) scores; std with n-1
    double theory_std = 0;        // what theory predicts for this source (1 or its scaled form when scaled)
    double ratio = 0;             // std / theory_std
    double kurtosis = 0;          // E[(s-mean)^4] / std^4 of the scores (3 for a normal)
    double range_lo = 0, range_hi = 0;  // mean -/+ 3 std: the "typical range" of C15
    double p001 = 0, p999 = 0;    // observed 0.1 and 99.9 percentiles
    double mean_max_weight = 0;   // mean over rows of max_j softmax weight
    double mean_norm_entropy = 0; // mean over rows of H(p) / ln T (1 uniform, 0 one-hot)
    double onehot_fraction = 0;   // fraction of rows with max weight > 0.99
    double mean_jacobian_norm = 0;  // mean over rows of ||d softmax / d z||_F
};

// Theory std of q.k for `source` at this Dk, unscaled (divide by sqrt(Dk) for scaled).
double variance_theory_std(VarianceSource source, int64_t d_k);

// Runs the experiment: two rows per Dk (unscaled, then scaled), in the order
// of cfg.d_k. progress(fraction in [0, 1]) is called as work completes, from
// worker threads but never two at once. Throws InputError via validate().
std::vector<VarianceRow> run_variance(const VarianceConfig& cfg,
                                      const std::function<void(double)>& progress = {});

// The registry's form of runs (`attn experiment variance`, src/exp_variance.cpp): run i drawn
// with seed cfg.seed + i, each with every Dk of cfg. One table of every run's rows, the curves
// (std and mean max weight against Dk), and the verdicts on C14-C17, each computed from the
// rows (none for the projected source, whose entries do not have variance 1).
ExperimentResult variance_result(const VarianceConfig& cfg, const std::vector<std::vector<VarianceRow>>& runs);

// {"format": "attn-variance", "version": 1, "config": {...}, "rows": [...]}
std::string variance_json(const VarianceConfig& cfg, const std::vector<VarianceRow>& rows,
                          JsonNonFinite nonfinite = JsonNonFinite::literal);
// Header line + one line per row, same field names as the JSON rows.
std::string variance_csv(const std::vector<VarianceRow>& rows);
// An aligned text table with a header that states the config and the theory.
std::string variance_table(const VarianceConfig& cfg, const std::vector<VarianceRow>& rows);
// A self-contained SVG: std vs Dk (log-log, with the theory line) and mean max
// weight vs Dk, scaled and unscaled.
std::string variance_svg(const VarianceConfig& cfg, const std::vector<VarianceRow>& rows);

// The fast generators behind the experiment, exposed for tests and lessons.
// Counter-based: every output is a pure function of (key, index), so any
// blocking of the work gives the same bits.
// normal_block writes 2*pairs standard normals by Box-Muller on pairs
// first_pair .. first_pair+pairs-1: out[j] = r cos(theta), out[pairs + j] = r sin(theta).
void normal_block(float* out, int64_t pairs, uint64_t key, uint64_t first_pair);
// uniform_block writes n values U(lo, hi) for indices first .. first+n-1.
void uniform_block(float* out, int64_t n, float lo, float hi, uint64_t key, uint64_t first);

}  // namespace attn
