// attn/experiments/variants.hpp: what `attn variants` measures (C42, C43): attention
// past T², for speed, memory and closeness to softmax attention.
//
// The variants:
//   flash          full softmax attention, the tiled CPU kernel (attention_flash): O(T²)
//   window         the same kernel with Mask::sliding_window(w): O(T w)
//   strided        Mask::strided(s), s = ceil(sqrt(T)) unless given: O(T sqrt(T))
//   global-local   Mask::global_local(g, w): O(T (w + g))
//   elu+1, favor+, cosformer   linear attention (attn/cpu/linear_attention.hpp): O(T m Dv)
// All non-causal unless cfg.causal (then the masks are their causal forms and the
// linear ones run their chunked prefix sums).
//
// Speed: B = 1, H heads, Dk = Dv, random N(0,1) inputs; each (variant, T) runs in a
// forked child, which reports the median wall time of its runs and its peak memory
// over its baseline (VmHWM - VmRSS once q, k, v exist): the working set the variant
// adds beside its inputs and output, measured. Full flash at large T would take
// minutes, so above cfg.flash_full_limit pairs it is timed on the first
// cfg.flash_sample_queries queries against all T keys and the time is scaled by
// T / sample (each query costs the same without a mask; causal: by the ratio of
// allowed pairs): such rows say extrapolated = true. Strided is timed the same way:
// its stride keys fall into nearly every key block, so it skips few and costs
// about what flash costs. GFLOP/s is attention_flops (allowed pairs × 4 Dk) / time for
// the softmax kinds; linear attention does other work, so its GFLOP/s is not given.
// The crossover of a variant is the smallest T of the list from which it is faster
// than flash at every larger T of the list.
//
// Error against softmax attention (attention_reference, same mask causal or not) on
// given q, k, v (random, or a model's heads: the app passes MiniLM's):
//   rel_error   ||out - out_softmax||_F / ||out_softmax||_F over all heads
//   kl          mean over query rows of KL(p_variant || p_softmax), nats, where p are the
//               attention rows (for a sparse mask: -ln of the softmax mass inside the
//               pattern; for linear attention the rows of the explicit form A/rowsum(A)).
// Performer's error is measured for each m of cfg.favor_m (mean over cfg.favor_draws
// draws) and log(error) is fitted against log(m): the slope should be about -1/2 once m
// exceeds the estimator's variance, which grows as exp(|q + k|² / sqrt(Dk)): for N(0, 1)
// entries at Dk = 64 that is ~e^16 per feature and no m <= 1024 reaches it (the curve is
// flat); the curve is also run with q, k scaled by cfg.favor_small_scale to show the regime.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/experiments/experiment.hpp"
#include "attn/io/dump.hpp"

namespace attn {

enum class Variant { Flash, Window, Strided, GlobalLocal, EluPlusOne, Favor, CosFormer };
const char* variant_name(Variant v);
std::vector<Variant> all_variants();

struct VariantsConfig {
    std::vector<int64_t> lengths{256, 1024, 4096, 16384, 65536};
    std::vector<Variant> variants = all_variants();
    int64_t heads = 8, dk = 64;
    int64_t window = 256;        // window, global-local: width w
    int64_t stride = 0;          // strided: s; 0 = ceil(sqrt(T))
    int64_t global = 16;         // global-local: g
    int64_t features = 256;      // favor+: m for the timing and error rows
    bool causal = false;
    int threads = 0;             // 0: every core
    uint64_t seed = 1;
    double min_seconds = 0.2;    // each timing repeats until this much time (at least 1 run, at most 20)
    double flash_full_limit = 4096.0 * 4096.0;  // above T² this, full flash is sampled (see above)
    int64_t flash_sample_queries = 1024;
    // error on random inputs
    int64_t error_T = 1024, error_heads = 4;
    int64_t error_window = 64;   // the sparse kinds' widths for the error rows (at error_T, a window
    int64_t error_global = 4;    // of 256 would hide most of the difference)
    std::vector<int64_t> favor_m{16, 32, 64, 128, 256, 512, 1024};
    int favor_draws = 3;
    double favor_small_scale = 0.25;
};
// Throws InputError on an empty list, a size < 1, or a variant listed twice.
void validate(const VariantsConfig& cfg);

struct SpeedRow {
    Variant variant = Variant::Flash;
    int64_t T = 0;
    bool ok = false;
    std::string error;          // why not ok (the child died: out of memory?)
    double seconds = 0;         // median wall time of one forward
    double flops = 0;           // allowed pairs x 4 Dk (softmax kinds); 0 for linear
    double gflops = -1;         // -1: not meaningful
    double extra_bytes = 0;     // measured peak over baseline
    double model_bytes = 0;     // the analytic working set (linear_attention_workspace_bytes; flash: tiles)
    bool extrapolated = false;  // flash timed on a sample of queries, scaled
    int64_t sampled_queries = 0;
};
struct Crossover {
    Variant variant = Variant::Flash;
    int64_t T = -1;  // -1: not faster than flash at the largest T
    double speedup_at_max = 0;  // flash time / variant time at the largest T
};
struct ErrorRow {
    Variant variant = Variant::Flash;
    std::string source;         // "random" or "MiniLM layer 3"
    std::string pattern;        // "w=64", "m=256", ...
    double rel_error = 0, kl = 0;
};
struct FavorPoint {
    int64_t m = 0;
    double rel_error = 0;       // mean over draws
};
// Performer's error vs m on one set of inputs: q and k multiplied by input_scale.
struct FavorCurve {
    double input_scale = 1;
    std::vector<FavorPoint> points;
    double slope = 0;           // least-squares slope of log(error) vs log(m)
};
struct VariantsResult {
    std::vector<SpeedRow> speed;
    std::vector<Crossover> crossover;
    std::vector<ErrorRow> errors;
    std::vector<FavorCurve> favor;
};

// The timing part. progress(fraction done) is called between cases.
std::vector<SpeedRow> run_variant_speed(const VariantsConfig& cfg, const std::function<void(double)>& progress = {});
std::vector<Crossover> crossovers(const VariantsConfig& cfg, const std::vector<SpeedRow>& speed);
// The error rows of every variant but flash on q, k, v (B, H, T, Dk) against softmax
// attention with scale 1/sqrt(Dk); `source` labels the rows.
std::vector<ErrorRow> variant_errors(const VariantsConfig& cfg, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const std::string& source);
// Random N(0, 1) inputs (B = 1, error_heads, error_T, dk) from the seed.
void random_error_inputs(const VariantsConfig& cfg, Tensor& q, Tensor& k, Tensor& v);
// Performer's error vs m on q, k, v; returns the points and sets *slope.
std::vector<FavorPoint> favor_error_curve(const VariantsConfig& cfg, const Tensor& q, const Tensor& k, const Tensor& v,
                                          double* slope);

// The sizes of `attn experiment variants`: Quick (also `attn variants --quick`) T 256, 1024,
// 4096, error rows at T 256, Performer's m 16, 64, 256, 1024 over 2 draws, timings of at least
// 0.05 s; Default T up to 16384; Full the config's defaults (T up to 65536). Only the lengths,
// the error T, the Performer curve and the timing budget change.
void set_variants_size(VariantsConfig& cfg, ExperimentSize size);
// Everything on random inputs, in order: the timings and crossovers (when `timing`; progress as
// run_variant_speed), the error rows at error_T, and Performer's curves (when favor+ is listed)
// with q, k at scale 1 and at favor_small_scale.
VariantsResult run_variants(const VariantsConfig& cfg, bool timing, const std::function<void(double)>& progress = {});
// time ~ T^exponent between the two largest lengths the variant was timed at:
// log(t2 / t1) / log(T2 / T1); NaN with fewer than two.
double time_exponent(const std::vector<SpeedRow>& speed, Variant v);
// The registry's form of a result (`attn experiment variants`, src/exp_variants.cpp): its tables,
// the curves (time and extra memory against T, Performer's error against m), and the verdicts on
// C42 (sparse masks at least 1.25x faster than flash at the largest T) and C43 (linear attention's time grows
// as T^exponent with an exponent below 1.5), computed from the timings; none without timings.
ExperimentResult variants_result(const VariantsConfig& cfg, const VariantsResult& r);

// The text report, the "attn-variants" JSON (the format `attn variants --json` has always
// written, kept for the scripts that read it) and the SVG of `attn variants`.
std::string variants_table(const VariantsConfig& cfg, const VariantsResult& r);
std::string variants_json(const VariantsConfig& cfg, const VariantsResult& r, JsonNonFinite nonfinite);
// Two log-log panels: time vs T and extra memory vs T, one line per variant.
std::string variants_svg(const VariantsConfig& cfg, const VariantsResult& r);

}  // namespace attn
