// The d_k variance experiment (C14-C17): draw q and k, take q.k, look at its
// spread and at what softmax does with rows of such scores. See attn/experiments/variance.hpp.
//
// Layout of the work: for each Dk the `samples` dot products are cut into
// chunks of whole rows (kChunkTarget samples or one row, whichever is more).
// Chunk c of Dk owns its slice of the score array and draws only from
// Rng(seed, (Dk << 32) | c), so every chunk does the same arithmetic whatever
// the thread count; sums over chunks are taken in chunk order.
#include "attn/experiments/variance.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/core/init.hpp"
#include "attn/core/linear.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "attn/core/stats.hpp"
#include "attn/io/dump.hpp"
#include "attn/viz/chart.hpp"
#include "attn/viz/svg.hpp"

namespace attn {

// ---------------------------------------------------------------------------
// Names and validation

const char* variance_source_name(VarianceSource s) {
    switch (s) {
        case VarianceSource::Normal: return "normal";
        case VarianceSource::Uniform: return "uniform";
        case VarianceSource::Projected: return "projected";
    }
    return "?";
}

void validate(const VarianceConfig& cfg) {
    if (cfg.d_k.empty()) throw InputError("the list of Dk is empty");
    const int64_t max_dk = variance_max_dk(cfg.source);
    for (int64_t d : cfg.d_k)
        if (d <= 0 || d > max_dk)
            throw InputError(fmt::format("Dk must be in [1, {}] for source {}, got {}", max_dk,
                                         variance_source_name(cfg.source), d));
    if (cfg.samples <= 0 || cfg.samples > kVarianceMaxSamples)
        throw InputError(fmt::format("samples must be in [1, {}], got {}", kVarianceMaxSamples, cfg.samples));
    if (cfg.keys < 2 || cfg.keys > kVarianceMaxKeys)
        throw InputError(fmt::format("keys (T) must be in [2, {}], got {}", kVarianceMaxKeys, cfg.keys));
    if (cfg.samples < cfg.keys)
        throw InputError(fmt::format("samples ({}) must be at least keys ({}) so one softmax row forms", cfg.samples,
                                     cfg.keys));
    if (cfg.threads < 0 || cfg.threads > kVarianceMaxThreads)
        throw InputError(fmt::format("threads must be in [0, {}] (0 = every core), got {}", kVarianceMaxThreads,
                                     cfg.threads));
}

double variance_theory_std(VarianceSource source, int64_t d_k) {
    const double d = static_cast<double>(d_k);
    if (source == VarianceSource::Projected) return std::sqrt(d) * (1.0 + 1.0 / d) / 3.0;
    return std::sqrt(d);
}

static const char* theory_formula(VarianceSource s) {
    return s == VarianceSource::Projected ? "sqrt(d_k) * (1 + 1/d_k) / 3" : "sqrt(d_k)";
}

// ---------------------------------------------------------------------------
// Counter-based generators. Each output is a pure function of (key, index):
// a 32-bit counter goes through two rounds of a 32-bit integer hash keyed by
// the 64-bit key (the high 32 bits of the index fold into the key), and the
// float math below is plain arithmetic (no library calls), so the compiler
// vectorises the loops and a vector lane computes the same bits as a scalar.

static inline uint32_t hash32(uint32_t x) {
    // "lowbias32" (C. Wellons): a well-mixed 32-bit permutation.
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

struct Keys32 {
    uint32_t a, b, c;
};
static Keys32 derive_keys(uint64_t key, uint32_t high) {
    const uint64_t h = mix64(key ^ mix64(0x5eedULL + high));
    return {static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32), static_cast<uint32_t>(mix64(h) >> 32)};
}

// ln(u) for u in (0, 1]: u = m 2^e with m in [sqrt(1/2), sqrt(2)), then
// ln m = 2 atanh(s), s = (m - 1)/(m + 1), |s| < 0.172, series to s^9 (error < 1e-9).
static inline float log_unit(float u) {
    const uint32_t bits = std::bit_cast<uint32_t>(u);
    int32_t e = static_cast<int32_t>(bits >> 23) - 127;
    float m = std::bit_cast<float>((bits & 0x7fffffU) | 0x3f800000U);  // [1, 2)
    const bool big = m > 1.41421356f;
    m = big ? m * 0.5f : m;
    e = big ? e + 1 : e;
    const float s = (m - 1.0f) / (m + 1.0f);
    const float s2 = s * s;
    const float series = 1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9))));
    return static_cast<float>(e) * 0.693147181f + 2.0f * s * series;
}

// sqrt(y) for y >= 0 by plain arithmetic: std::sqrt may set errno, which
// stops GCC from vectorising the loop without -fno-math-errno. sqrt(y) =
// y / sqrt(y) = y * rsqrt(y): a bit-level first guess of rsqrt (relative error
// < 0.18%) and two Newton steps x <- x (1.5 - 0.5 y x^2) (the error squares:
// 5e-6, then float rounding). No division, so it stays cheap in vector form.
// y = 0 gives 0. The sign bit is cleared first: -2 ln(1) is -0.0.
static inline float sqrt_pos(float y) {
    y = std::bit_cast<float>(std::bit_cast<uint32_t>(y) & 0x7fffffffU);
    float x = std::bit_cast<float>(0x5f375a86U - (std::bit_cast<uint32_t>(y) >> 1));
    const float h = 0.5f * y;
    x = x * (1.5f - h * x * x);
    x = x * (1.5f - h * x * x);
    return y * x;
}

static void normal_run(float* cos_out, float* sin_out, int64_t n, Keys32 k, uint32_t first) {
    // cos_out[n], sin_out[n]: pair j = first + j gives one Box-Muller pair.
    // pass 1: two hashed words per pair; u1 in (0, 1] from 24 bits, the angle
    // from 23 bits of the second word and the quadrant from its low 2 bits.
    for (int64_t j = 0; j < n; ++j) {
        const uint32_t c = first + static_cast<uint32_t>(j);
        const uint32_t h1 = hash32(hash32(c + k.a) ^ k.b);
        const uint32_t h2 = hash32(h1 ^ k.c);
        const float u1 = static_cast<float>((h1 >> 8) + 1U) * 0x1.0p-24f;
        const float r = sqrt_pos(-2.0f * log_unit(u1));
        // x uniform in [-pi/4, pi/4); phi = x + pi/4 uniform in [0, pi/2).
        const float x = (static_cast<float>(h2 >> 9) * 0x1.0p-23f - 0.5f) * 1.57079633f;
        const float x2 = x * x;
        const float sx = x * (1.0f + x2 * (-1.0f / 6 + x2 * (1.0f / 120 + x2 * (-1.0f / 5040 + x2 * (1.0f / 362880)))));
        const float cx =
            1.0f + x2 * (-0.5f + x2 * (1.0f / 24 + x2 * (-1.0f / 720 + x2 * (1.0f / 40320 + x2 * (-1.0f / 3628800)))));
        const float cphi = (cx - sx) * 0.707106781f;
        const float sphi = (cx + sx) * 0.707106781f;
        // Independent sign flips of the two coordinates reflect the quarter
        // circle onto the whole circle: theta is uniform on [0, 2 pi).
        const uint32_t sign_c = (h2 & 1U) << 31, sign_s = (h2 & 2U) << 30;
        cos_out[j] = std::bit_cast<float>(std::bit_cast<uint32_t>(r * cphi) ^ sign_c);
        sin_out[j] = std::bit_cast<float>(std::bit_cast<uint32_t>(r * sphi) ^ sign_s);
    }
}

static void uniform_run(float* out, int64_t n, float lo, float hi, Keys32 k, uint32_t first) {
    // out[n]: centred 24-bit uniforms (h + 0.5) / 2^24 mapped onto [lo, hi).
    const float w = hi - lo;
    for (int64_t j = 0; j < n; ++j) {
        const uint32_t c = first + static_cast<uint32_t>(j);
        const uint32_t h = hash32(hash32(c + k.a) ^ k.b);
        out[j] = lo + w * ((static_cast<float>(h >> 8) + 0.5f) * 0x1.0p-24f);
    }
}

// Splits [first, first + n) at multiples of 2^32 so each run has one key set.
template <class Fn>
static void by_counter_runs(int64_t n, uint64_t key, uint64_t first, Fn&& fn) {
    int64_t done = 0;
    while (done < n) {
        const uint64_t idx = first + static_cast<uint64_t>(done);
        const uint64_t room = (uint64_t{1} << 32) - (idx & 0xffffffffULL);
        const int64_t len = static_cast<int64_t>(std::min<uint64_t>(room, static_cast<uint64_t>(n - done)));
        fn(done, len, derive_keys(key, static_cast<uint32_t>(idx >> 32)), static_cast<uint32_t>(idx));
        done += len;
    }
}

void normal_block(float* out, int64_t pairs, uint64_t key, uint64_t first_pair) {
    by_counter_runs(pairs, key, first_pair, [&](int64_t off, int64_t len, Keys32 k, uint32_t c0) {
        normal_run(out + off, out + pairs + off, len, k, c0);
    });
}

void uniform_block(float* out, int64_t n, float lo, float hi, uint64_t key, uint64_t first) {
    by_counter_runs(n, key, first ^ 0x8000000000000000ULL, [&](int64_t off, int64_t len, Keys32 k, uint32_t c0) {
        uniform_run(out + off, len, lo, hi, k, c0);
    });
}

// ---------------------------------------------------------------------------
// The experiment

static float dot(const float* a, const float* b, int64_t n) {
    // a[n] . b[n] with 16 independent partial sums (vectorises; fixed order).
    float acc[16] = {};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; ++l) acc[l] += a[i + l] * b[i + l];
    for (int l = 0; i < n; ++i, ++l) acc[l] += a[i] * b[i];
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
    return acc[0];
}

namespace {

constexpr int64_t kChunkTarget = 4096;  // samples per work chunk (rounded to whole rows)
constexpr int64_t kBatchFloats = 8192;  // floats of q (and of k) generated at once

struct RowSums {
    double max_w = 0, norm_h = 0, jac = 0;
    int64_t onehot = 0;
};

struct ChunkResult {
    RowSums sums[2];  // [0] unscaled, [1] scaled
    int64_t rows = 0;
};

// Fills scores[n] with q.k for the n samples of one chunk.
void chunk_scores(float* scores, int64_t n, int64_t dk, VarianceSource source, uint64_t seed, uint64_t stream) {
    Rng rng(seed, stream);
    const uint64_t key = rng.next_u64();
    const int64_t per_batch = std::max<int64_t>(1, kBatchFloats / dk);
    std::vector<float> buf(static_cast<size_t>(2 * per_batch * dk));  // [q | k], each [per_batch, Dk]
    Linear wq, wk;
    std::vector<float> qp, kp;
    if (source == VarianceSource::Projected) {
        // One fresh pair of nn.Linear(D, D) layers per chunk, torch init.
        wq = Linear(dk, dk, true);
        wk = Linear(dk, dk, true);
        wq.init(InitSpec{}, rng);
        wk.init(InitSpec{}, rng);
        qp.resize(static_cast<size_t>(per_batch * dk));
        kp.resize(static_cast<size_t>(per_batch * dk));
    }
    for (int64_t s0 = 0; s0 < n; s0 += per_batch) {
        const int64_t nb = std::min(per_batch, n - s0);
        const int64_t cnt = nb * dk;
        float* q = buf.data();        // [nb, Dk]
        float* k = buf.data() + cnt;  // [nb, Dk]
        // pass 1: draw q and k (q[s][i] and k[s][i] are the two halves of pair s*Dk + i)
        if (source == VarianceSource::Uniform) {
            const float a = std::sqrt(3.0f);
            uniform_block(q, 2 * cnt, -a, a, key, static_cast<uint64_t>(2 * s0 * dk));
        } else {
            normal_block(q, cnt, key, static_cast<uint64_t>(s0 * dk));
        }
        if (source == VarianceSource::Projected) {
            // x [nb, D] -> q = x W_q^T + b_q [nb, Dk]; likewise k from x'
            linear_forward(qp.data(), q, wq.W.ptr(), wq.b.ptr(), nb, dk, dk);
            linear_forward(kp.data(), k, wk.W.ptr(), wk.b.ptr(), nb, dk, dk);
            q = qp.data();
            k = kp.data();
        }
        // pass 2: the dot products
        for (int64_t s = 0; s < nb; ++s) scores[s0 + s] = dot(q + s * dk, k + s * dk, dk);
    }
}

// Softmax statistics of the full rows of scores[n] (rows of T), unscaled and scaled.
ChunkResult chunk_rows(const float* scores, int64_t n, int64_t T, float scale) {
    ChunkResult res;
    res.rows = n / T;
    std::vector<float> p(static_cast<size_t>(T));
    const double log_t = std::log(static_cast<double>(T));
    for (int64_t r = 0; r < res.rows; ++r) {
        const float* z = scores + r * T;  // [T]
        for (int v = 0; v < 2; ++v) {
            const float f = v == 0 ? 1.0f : scale;
            // pass 1: stable softmax of f * z
            float m = -std::numeric_limits<float>::infinity();
            for (int64_t j = 0; j < T; ++j) m = std::max(m, f * z[j]);
            float sum = 0;
            for (int64_t j = 0; j < T; ++j) {
                p[j] = std::exp(f * z[j] - m);
                sum += p[j];
            }
            const float inv = 1.0f / sum;
            float pmax = 0;
            for (int64_t j = 0; j < T; ++j) {
                p[j] *= inv;
                pmax = std::max(pmax, p[j]);
            }
            // pass 2: the row's statistics
            RowSums& s = res.sums[v];
            s.max_w += pmax;
            s.norm_h += entropy_nats(p.data(), T) / log_t;
            s.jac += softmax_jacobian_norm(p.data(), T);
            s.onehot += pmax > 0.99f ? 1 : 0;
        }
    }
    return res;
}

}  // namespace

std::vector<VarianceRow> run_variance(const VarianceConfig& cfg, const std::function<void(double)>& progress) {
    validate(cfg);
    const int64_t N = cfg.samples, T = cfg.keys;
    const int64_t chunk = std::max<int64_t>(1, kChunkTarget / T) * T;  // samples per chunk, whole rows
    const int64_t n_chunks = (N + chunk - 1) / chunk;
    const size_t n_dk = cfg.d_k.size();

    // Work items: (Dk index, chunk). Costliest Dk first so threads finish together.
    struct Item {
        size_t d;
        int64_t c;
    };
    std::vector<size_t> order(n_dk);
    for (size_t d = 0; d < n_dk; ++d) order[d] = d;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cfg.d_k[a] > cfg.d_k[b]; });
    std::vector<Item> items;
    for (size_t d : order)
        for (int64_t c = 0; c < n_chunks; ++c) items.push_back({d, c});

    const auto cost = [&](int64_t dk, int64_t n) {
        const double d = static_cast<double>(dk);
        return static_cast<double>(n) * (cfg.source == VarianceSource::Projected ? d * (d + 2) : d + 2);
    };
    double total = 0;
    for (int64_t dk : cfg.d_k) total += cost(dk, N);

    std::vector<std::vector<float>> scores(n_dk, std::vector<float>(static_cast<size_t>(N)));  // [n_dk][N]
    std::vector<ChunkResult> results(items.size());
    std::mutex progress_mu;
    double done = 0;
    parallel_for(static_cast<int64_t>(items.size()), cfg.threads, [&](int64_t i, int) {
        const Item it = items[static_cast<size_t>(i)];
        const int64_t dk = cfg.d_k[it.d];
        const int64_t s0 = it.c * chunk, n = std::min(chunk, N - s0);
        float* sc = scores[it.d].data() + s0;
        const uint64_t stream = (static_cast<uint64_t>(dk) << 32) | static_cast<uint64_t>(it.c);
        chunk_scores(sc, n, dk, cfg.source, cfg.seed, stream);
        results[static_cast<size_t>(i)] = chunk_rows(sc, n, T, 1.0f / std::sqrt(static_cast<float>(dk)));
        if (progress) {
            std::lock_guard<std::mutex> lk(progress_mu);
            done += cost(dk, n);
            progress(std::min(1.0, done / total));
        }
    });

    // Reduce: per Dk, chunks in chunk order.
    std::vector<VarianceRow> out;
    for (size_t d = 0; d < n_dk; ++d) {
        const int64_t dk = cfg.d_k[d];
        std::vector<float>& v = scores[d];
        // pass 1: moments in double, sample order
        double sum = 0;
        for (float x : v) sum += x;
        const double mean = sum / static_cast<double>(N);
        double m2 = 0, m4 = 0;
        for (float x : v) {
            const double e = x - mean, e2 = e * e;
            m2 += e2;
            m4 += e2 * e2;
        }
        const double var = N > 1 ? m2 / static_cast<double>(N - 1) : 0.0;
        const double pop2 = m2 / static_cast<double>(N), pop4 = m4 / static_cast<double>(N);
        const double kurt = pop2 > 0 ? pop4 / (pop2 * pop2) : 0.0;
        // pass 2: percentiles (reorders the scores; row statistics are done)
        const double p001 = percentile(v, 0.001), p999 = percentile(v, 0.999);
        // pass 3: row sums over chunks in chunk order
        ChunkResult acc;
        size_t pos = 0;
        while (items[pos].d != d) ++pos;  // this Dk's chunks are contiguous, in order
        for (int64_t c = 0; c < n_chunks; ++c) {
            const ChunkResult& r = results[pos + static_cast<size_t>(c)];
            acc.rows += r.rows;
            for (int s = 0; s < 2; ++s) {
                acc.sums[s].max_w += r.sums[s].max_w;
                acc.sums[s].norm_h += r.sums[s].norm_h;
                acc.sums[s].jac += r.sums[s].jac;
                acc.sums[s].onehot += r.sums[s].onehot;
            }
        }
        const double theory = variance_theory_std(cfg.source, dk);
        for (int s = 0; s < 2; ++s) {
            // The scaled row is the same samples divided by sqrt(Dk).
            const double f = s == 0 ? 1.0 : 1.0 / std::sqrt(static_cast<double>(dk));
            VarianceRow row;
            row.d_k = dk;
            row.scaled = s == 1;
            row.samples = N;
            row.rows = acc.rows;
            row.mean = mean * f;
            row.std = std::sqrt(var) * f;
            row.theory_std = theory * f;
            row.ratio = row.std / row.theory_std;
            row.kurtosis = kurt;
            row.range_lo = row.mean - 3 * row.std;
            row.range_hi = row.mean + 3 * row.std;
            row.p001 = p001 * f;
            row.p999 = p999 * f;
            const double nr = static_cast<double>(acc.rows);
            row.mean_max_weight = acc.sums[s].max_w / nr;
            row.mean_norm_entropy = acc.sums[s].norm_h / nr;
            row.onehot_fraction = static_cast<double>(acc.sums[s].onehot) / nr;
            row.mean_jacobian_norm = acc.sums[s].jac / nr;
            out.push_back(row);
        }
    }
    return out;
}

// ---------------------------------------------------------------------------
// Output

static nlohmann::ordered_json row_json(const VarianceRow& r) {
    return nlohmann::ordered_json{{"d_k", r.d_k},
                          {"scaled", r.scaled},
                          {"samples", r.samples},
                          {"rows", r.rows},
                          {"mean", r.mean},
                          {"std", r.std},
                          {"theory_std", r.theory_std},
                          {"ratio", r.ratio},
                          {"kurtosis", r.kurtosis},
                          {"range_lo", r.range_lo},
                          {"range_hi", r.range_hi},
                          {"p001", r.p001},
                          {"p999", r.p999},
                          {"mean_max_weight", r.mean_max_weight},
                          {"mean_norm_entropy", r.mean_norm_entropy},
                          {"onehot_fraction", r.onehot_fraction},
                          {"mean_jacobian_norm", r.mean_jacobian_norm}};
}

std::string variance_json(const VarianceConfig& cfg, const std::vector<VarianceRow>& rows, JsonNonFinite nonfinite) {
    nlohmann::ordered_json j;
    j["format"] = "attn-variance";
    j["version"] = 1;
    j["config"] = nlohmann::ordered_json{{"d_k", cfg.d_k},
                                         {"samples", cfg.samples},
                                         {"keys", cfg.keys},
                                         {"source", variance_source_name(cfg.source)},
                                         {"seed", cfg.seed},
                                         {"threads", cfg.threads},
                                         {"theory_std", theory_formula(cfg.source)},
                                         {"scaled_by", "1/sqrt(d_k)"},
                                         {"onehot_threshold", 0.99}};
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& r : rows) arr.push_back(row_json(r));
    j["rows"] = arr;
    return json_text(j, 2, nonfinite) + "\n";
}

static const char* const kCsvFields[] = {"d_k",  "scaled",          "samples",           "rows",
                                         "mean", "std",             "theory_std",        "ratio",
                                         "kurtosis", "range_lo",    "range_hi",          "p001",
                                         "p999", "mean_max_weight", "mean_norm_entropy", "onehot_fraction",
                                         "mean_jacobian_norm"};

std::string variance_csv(const std::vector<VarianceRow>& rows) {
    std::string out;
    for (size_t i = 0; i < std::size(kCsvFields); ++i) out += fmt::format("{}{}", i ? "," : "", kCsvFields[i]);
    out += "\n";
    for (const auto& r : rows)
        out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.d_k, r.scaled ? 1 : 0, r.samples,
                           r.rows, r.mean, r.std, r.theory_std, r.ratio, r.kurtosis, r.range_lo, r.range_hi, r.p001,
                           r.p999, r.mean_max_weight, r.mean_norm_entropy, r.onehot_fraction, r.mean_jacobian_norm);
    return out;
}

static std::string source_phrase(VarianceSource s) {
    switch (s) {
        case VarianceSource::Normal: return "q_i, k_i ~ N(0, 1)";
        case VarianceSource::Uniform: return "q_i, k_i ~ U(-√3, √3) (variance 1)";
        case VarianceSource::Projected:
            return "q = W_q x + b_q, k = W_k x' + b_k, nn.Linear(Dk, Dk) torch init, x ~ N(0, I)";
    }
    return "";
}

std::string variance_table(const VarianceConfig& cfg, const std::vector<VarianceRow>& rows) {
    std::string out;
    out += fmt::format("attn variance: std of q·k vs Dk (C14-C17). {}; {} samples per Dk; softmax rows of T={} keys; "
                       "seed {}\n",
                       source_phrase(cfg.source), cfg.samples, cfg.keys, cfg.seed);
    if (cfg.source == VarianceSource::Projected)
        out += "theory: Var(q_i) = (1 + 1/D)/3 (torch init), so std(q·k) = √Dk (1 + 1/Dk)/3, not √Dk; "
               "scaled: that / √Dk\n";
    else
        out += "theory: std(q·k) = √Dk (C14); scaled by 1/√Dk: std 1 (C17)\n";
    out += "\n";
    out += fmt::format("{:>6} {:>6} {:>8} {:>8} {:>8} {:>6}  {:>19} {:>9} {:>9}  {:>6} {:>6} {:>7} {:>6}\n", "Dk",
                       "scale", "mean", "std", "theory", "ratio", "mean ± 3σ", "p0.1", "p99.9", "max w", "H/lnT",
                       "one-hot", "‖J‖F");
    for (const auto& r : rows) {
        const std::string range = fmt::format("[{:.2f}, {:.2f}]", r.range_lo, r.range_hi);
        out += fmt::format(
            "{:>6} {:>6} {:>8.3f} {:>8.3f} {:>8.3f} {:>6.4f}  {:>19} {:>9.2f} {:>9.2f}  {:>6.3f} {:>6.3f} "
            "{:>7.3f} {:>6.4f}\n",
            r.d_k, r.scaled ? "1/√Dk" : "none", r.mean, r.std, r.theory_std, r.ratio, range, r.p001, r.p999,
            r.mean_max_weight, r.mean_norm_entropy, r.onehot_fraction, r.mean_jacobian_norm);
    }
    // What the numbers say, for the largest Dk in the list.
    int64_t top = 0;
    for (const auto& r : rows) top = std::max(top, r.d_k);
    const VarianceRow* un = nullptr;
    const VarianceRow* sc = nullptr;
    for (const auto& r : rows)
        if (r.d_k == top) {
            if (r.scaled && !sc) sc = &r;
            if (!r.scaled && !un) un = &r;
        }
    if (un && sc) {
        out += "\n";
        out += fmt::format(
            "At Dk={} a score 3σ above the mean is exp({:.1f}) = {:.2g} times as heavy as a score of 0 (C16);\n",
            un->d_k, 3 * un->std, std::exp(3 * un->std));
        out += fmt::format(
            "unscaled, rows put {:.3f} of their weight on one key and {:.1f}% of rows are one-hot (max > 0.99);\n",
            un->mean_max_weight, 100 * un->onehot_fraction);
        out += fmt::format(
            "scaled by 1/√Dk: {:.3f} and {:.1f}%. Mean ‖softmax Jacobian‖F: {:.4f} unscaled vs {:.4f} scaled "
            "(uniform rows: {:.4f}).\n",
            sc->mean_max_weight, 100 * sc->onehot_fraction, un->mean_jacobian_norm, sc->mean_jacobian_norm,
            std::sqrt(1.0 / static_cast<double>(cfg.keys) - 1.0 / static_cast<double>(cfg.keys * cfg.keys)));
    }
    return out;
}

// ---------------------------------------------------------------------------
// SVG: two panels, each a viz::line_chart. The theory line and the uniform row are
// listed (and so drawn) last: dashed, on top of the measured lines they are compared with.

std::string variance_svg(const VarianceConfig& cfg, const std::vector<VarianceRow>& rows) {
    // Series sorted by Dk (duplicates in the list are drawn once each, in order).
    std::vector<const VarianceRow*> un, sc;
    for (const auto& r : rows) (r.scaled ? sc : un).push_back(&r);
    const auto by_dk = [](const VarianceRow* a, const VarianceRow* b) { return a->d_k < b->d_k; };
    std::stable_sort(un.begin(), un.end(), by_dk);
    std::stable_sort(sc.begin(), sc.end(), by_dk);
    viz::Series s_un{.label = "std of q·k (unscaled)", .color = "#d62728", .draw = viz::Draw::LineAndMarkers};
    viz::Series s_sc{.label = "std of q·k / √Dk (scaled)", .color = "#1f77b4", .draw = viz::Draw::LineAndMarkers};
    viz::Series s_th{.label = cfg.source == VarianceSource::Projected ? "theory √Dk (1+1/Dk)/3" : "theory √Dk",
                     .color = "#222222", .dash = "6 4", .width = 1.6, .draw = viz::Draw::Line};
    viz::Series m_un{.label = "max weight, unscaled", .color = "#d62728", .draw = viz::Draw::LineAndMarkers};
    viz::Series m_sc{.label = "max weight, scaled by 1/√Dk", .color = "#1f77b4", .draw = viz::Draw::LineAndMarkers};
    viz::Series m_uni{.label = fmt::format("uniform row 1/T = {:.3g}", 1.0 / static_cast<double>(cfg.keys)),
                      .color = "#222222", .dash = "2 4", .width = 1.6, .draw = viz::Draw::Line};
    double dmin = 1e300, dmax = 0;
    for (const auto* r : un) {
        s_un.x.push_back(double(r->d_k)), s_un.y.push_back(r->std);
        m_un.x.push_back(double(r->d_k)), m_un.y.push_back(r->mean_max_weight);
        dmin = std::min(dmin, double(r->d_k)), dmax = std::max(dmax, double(r->d_k));
    }
    for (const auto* r : sc) {
        s_sc.x.push_back(double(r->d_k)), s_sc.y.push_back(r->std);
        m_sc.x.push_back(double(r->d_k)), m_sc.y.push_back(r->mean_max_weight);
    }
    if (un.empty()) dmin = dmax = 1;
    // The theory line: 32 points across the Dk range (smooth on log axes).
    for (int i = 0; i <= 32; ++i) {
        const double d = std::pow(10.0, std::log10(dmin) + (std::log10(dmax) - std::log10(dmin)) * i / 32.0);
        s_th.x.push_back(d);
        s_th.y.push_back(cfg.source == VarianceSource::Projected ? std::sqrt(d) * (1 + 1 / d) / 3 : std::sqrt(d));
    }
    m_uni.x = {dmin, dmax};
    m_uni.y = {1.0 / static_cast<double>(cfg.keys), 1.0 / static_cast<double>(cfg.keys)};
    // x ticks: the Dk values themselves when there are few, else 1-2-5 ticks
    std::vector<double> xticks = s_un.x;
    xticks.erase(std::unique(xticks.begin(), xticks.end()), xticks.end());
    if (xticks.size() > 10) xticks.clear();

    SvgDocument svg(1000, 500,
                    "attn variance: std of q·k and softmax saturation vs Dk, unscaled and scaled by 1/√Dk");
    // the title and, on a line of its own so that both fit the 1000 px width, the run's parameters
    svg.text(500, 24, "Why scale by 1/√Dk: spread of q·k and softmax saturation",
             {.font_size = 16, .bold = true, .anchor = "middle"});
    svg.text(500, 42,
             fmt::format("source {}, {} samples per Dk, T={}, seed {}", variance_source_name(cfg.source), cfg.samples,
                         cfg.keys, cfg.seed),
             {.anchor = "middle"});
    viz::LineChart left, right;
    left.title = "std of q·k vs Dk";
    left.x = {.title = "Dk (log)", .log = true, .ticks = xticks};
    left.y = {.title = "std (log)", .log = true};
    left.series = {s_un, s_sc, s_th};
    right.title = "Softmax saturation vs Dk";
    right.x = left.x;
    right.y = {.title = "mean max softmax weight", .min = 0, .max = 1};
    right.series = {m_un, m_sc, m_uni};
    viz::line_chart(svg, {20, 56, 490, 490}, left);
    viz::line_chart(svg, {510, 56, 980, 490}, right);
    return svg.str();
}

}  // namespace attn
