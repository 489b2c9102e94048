// Tests of the d_k variance experiment (attn/experiments/variance.hpp, `attn variance`):
// the std of q.k against theory with a tolerance derived from the sample
// count, what scaling does to saturation and gradient, bit-for-bit
// reproducibility across thread counts, the output formats and bad input.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/experiments/variance.hpp"

// The XML checker of test_heatmap.cpp.
bool xml_well_formed(const std::string& s, std::string* why);

namespace {

using attn::VarianceConfig;
using attn::VarianceRow;
using attn::VarianceSource;

const VarianceRow& find_row(const std::vector<VarianceRow>& rows, int64_t dk, bool scaled) {
    for (const auto& r : rows)
        if (r.d_k == dk && r.scaled == scaled) return r;
    FAIL("no row for Dk=" << dk << " scaled=" << scaled);
    return rows.front();
}

// The default experiment (normal source, Dk 1,16,64,512, 100000 samples, seed 0), run once.
const std::vector<VarianceRow>& default_rows() {
    static const std::vector<VarianceRow> rows = attn::run_variance(VarianceConfig{});
    return rows;
}

// Standard error of the sample std of n independent draws with std sigma and
// kurtosis kappa. Var(s^2) ~ (mu4 - sigma^4)/n = sigma^4 (kappa - 1)/n and,
// by the delta method (s = sqrt(s^2), ds = d(s^2) / (2 sigma)),
// Var(s) ~ sigma^2 (kappa - 1) / (4 n).
double std_se(double sigma, double kappa, int64_t n) {
    return sigma * std::sqrt((kappa - 1.0) / (4.0 * static_cast<double>(n)));
}

// Runs the CLI binary; returns its exit status, stdout and stderr.
int run_cli(const std::string& args, std::string* out, std::string* err) {
    static int counter = 0;
    const auto dir = std::filesystem::temp_directory_path();
    const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(counter++);
    const std::string fo = (dir / ("attn_var_out_" + tag)).string(), fe = (dir / ("attn_var_err_" + tag)).string();
    const std::string cmd = std::string("\"") + ATTN_BINARY + "\" " + args + " >" + fo + " 2>" + fe;
    const int st = std::system(cmd.c_str());
    const auto slurp = [](const std::string& p) {
        std::ifstream f(p, std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    };
    if (out) *out = slurp(fo);
    if (err) *err = slurp(fe);
    std::filesystem::remove(fo);
    std::filesystem::remove(fe);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

bool same_bits(const VarianceRow& a, const VarianceRow& b) {
    const double x[] = {a.mean, a.std, a.theory_std, a.ratio, a.kurtosis, a.range_lo, a.range_hi, a.p001, a.p999,
                        a.mean_max_weight, a.mean_norm_entropy, a.onehot_fraction, a.mean_jacobian_norm};
    const double y[] = {b.mean, b.std, b.theory_std, b.ratio, b.kurtosis, b.range_lo, b.range_hi, b.p001, b.p999,
                        b.mean_max_weight, b.mean_norm_entropy, b.onehot_fraction, b.mean_jacobian_norm};
    return a.d_k == b.d_k && a.scaled == b.scaled && a.samples == b.samples && a.rows == b.rows &&
           std::memcmp(x, y, sizeof x) == 0;
}

}  // namespace

TEST_CASE("variance: std of q.k matches sqrt(Dk) within 5 standard errors (normal source, C14/C15)") {
    // For q, k ~ N(0, I_Dk): Var(q.k) = Dk and E[(q.k)^4] = 3 Dk^2 + 6 Dk
    // (the i=j=k=l terms give 9 Dk, the three pairings with i != k give
    // 3 Dk (Dk - 1)), so the kurtosis is kappa = 3 + 6/Dk (9 at Dk = 1). With
    // n independent samples the sample std has standard error
    // sqrt(Dk) sqrt((kappa - 1)/(4n)); 5 of them fail a correct run with
    // probability < 1e-6. At n = 100000 that is 2.2% of sqrt(Dk) at Dk = 1 and
    // 1.1% at Dk = 512.
    const auto& rows = default_rows();
    REQUIRE(rows.size() == 8);
    for (int64_t dk : {1, 16, 64, 512}) {
        CAPTURE(dk);
        const VarianceRow& r = find_row(rows, dk, false);
        const double sigma = std::sqrt(static_cast<double>(dk));
        const double kappa = 3.0 + 6.0 / static_cast<double>(dk);
        CHECK(r.samples == 100000);
        CHECK(r.theory_std == doctest::Approx(sigma).epsilon(1e-15));
        CHECK(std::abs(r.std - sigma) < 5 * std_se(sigma, kappa, r.samples));
        // The mean has standard error sigma / sqrt(n).
        CHECK(std::abs(r.mean) < 5 * sigma / std::sqrt(static_cast<double>(r.samples)));
        // The accuracy claim, checked at the default seed: within 1%.
        CHECK(std::abs(r.ratio - 1.0) < 0.01);
        // C15's typical range: mean +- 3 std, about +-3 sqrt(Dk).
        CHECK(r.range_hi == doctest::Approx(r.mean + 3 * r.std));
        CHECK(r.range_lo == doctest::Approx(r.mean - 3 * r.std));
        // Percentiles are ordered and lie beyond 3 std for the 0.1% tails (a normal's is 3.09).
        CHECK(r.p001 < r.range_lo * 0.9);
        CHECK(r.p999 > r.range_hi * 0.9);
    }
}

TEST_CASE("variance: scaling by 1/sqrt(Dk) brings the std back to 1 (C17)") {
    const auto& rows = default_rows();
    for (int64_t dk : {1, 16, 64, 512}) {
        CAPTURE(dk);
        const VarianceRow& r = find_row(rows, dk, true);
        const double kappa = 3.0 + 6.0 / static_cast<double>(dk);
        CHECK(r.theory_std == doctest::Approx(1.0).epsilon(1e-15));
        CHECK(std::abs(r.std - 1.0) < 5 * std_se(1.0, kappa, r.samples));
        // Same samples, divided by sqrt(Dk): the scaled std is the unscaled one / sqrt(Dk).
        CHECK(r.std == doctest::Approx(find_row(rows, dk, false).std / std::sqrt(double(dk))).epsilon(1e-12));
    }
}

TEST_CASE("variance: uniform source also gives std sqrt(Dk)") {
    // U(-sqrt 3, sqrt 3) has variance 1 and E[x^4] = 9/5, so
    // E[(q.k)^4] = Dk (9/5)^2 + 3 Dk (Dk - 1) and kappa = 3 + 0.24/Dk.
    VarianceConfig cfg;
    cfg.source = VarianceSource::Uniform;
    cfg.samples = 50000;
    cfg.seed = 7;
    const auto rows = attn::run_variance(cfg);
    for (int64_t dk : {1, 16, 64, 512}) {
        CAPTURE(dk);
        const VarianceRow& r = find_row(rows, dk, false);
        const double sigma = std::sqrt(static_cast<double>(dk));
        CHECK(std::abs(r.std - sigma) < 5 * std_se(sigma, 3.0 + 0.24 / static_cast<double>(dk), r.samples));
    }
}

TEST_CASE("variance: projected source follows sqrt(Dk)(1 + 1/Dk)/3, not sqrt(Dk)") {
    // q = W_q x + b_q with the torch init: Var(W) = Var(b) = 1/(3D), so
    // Var(q_i) = (1 + 1/D)/3 and Var(q.k) = Dk Var(q_i)^2. The samples of one
    // chunk share a layer, so they are not independent; the layer-to-layer
    // spread of Var(q.k | layer) is O(1/Dk) relative, so at Dk >= 64 the
    // sampling error of ~0.4% (as for the normal source) dominates and a 3%
    // band is > 5 of those standard errors. At Dk = 1 the layer is 4 numbers
    // and the std varies a lot between layers, so it is not checked here.
    VarianceConfig cfg;
    cfg.source = VarianceSource::Projected;
    cfg.d_k = {64, 128};
    cfg.samples = 60000;
    const auto rows = attn::run_variance(cfg);
    for (int64_t dk : {64, 128}) {
        CAPTURE(dk);
        const VarianceRow& r = find_row(rows, dk, false);
        const double d = static_cast<double>(dk);
        CHECK(r.theory_std == doctest::Approx(std::sqrt(d) * (1 + 1 / d) / 3));
        CHECK(std::abs(r.ratio - 1.0) < 0.03);
        CHECK(r.std < 0.5 * std::sqrt(d));  // far below sqrt(Dk): the init already shrinks q and k
    }
}

TEST_CASE("variance: unscaled softmax saturates as Dk grows, scaled stays flat (C16/C17)") {
    const auto& rows = default_rows();
    // Unscaled: the max weight and the one-hot fraction rise with Dk, entropy falls.
    double prev_max = 0, prev_onehot = -1, prev_h = 2;
    for (int64_t dk : {1, 16, 64, 512}) {
        CAPTURE(dk);
        const VarianceRow& r = find_row(rows, dk, false);
        CHECK(r.rows == 100000 / 64);
        CHECK(r.mean_max_weight > prev_max);
        CHECK(r.onehot_fraction >= prev_onehot);
        CHECK(r.mean_norm_entropy < prev_h);
        prev_max = r.mean_max_weight;
        prev_onehot = r.onehot_fraction;
        prev_h = r.mean_norm_entropy;
    }
    const VarianceRow& u512 = find_row(rows, 512, false);
    CHECK(u512.mean_max_weight > 0.8);
    CHECK(u512.onehot_fraction > 0.4);
    // Scaled: for Dk >= 16 the scores are close to N(0, 1) whatever Dk, so the
    // rows look alike: max weight about 0.11 (uniform would be 1/64), no
    // one-hot rows, entropy near 0.88. (At Dk = 1 q.k is a product of two
    // normals, kurtosis 9: heavier tails make rows sharper, so Dk = 1 is
    // left out of the flatness check.)
    double lo = 1, hi = 0;
    for (int64_t dk : {16, 64, 512}) {
        CAPTURE(dk);
        const VarianceRow& r = find_row(rows, dk, true);
        lo = std::min(lo, r.mean_max_weight);
        hi = std::max(hi, r.mean_max_weight);
        CHECK(r.onehot_fraction == 0.0);
        CHECK(r.mean_norm_entropy > 0.8);
    }
    CHECK(hi - lo < 0.03);
    CHECK(u512.mean_max_weight - find_row(rows, 16, false).mean_max_weight > 0.25);
    // Dk = 1: scaling by 1/sqrt(1) changes nothing, row for row.
    CHECK(find_row(rows, 1, true).mean_max_weight == find_row(rows, 1, false).mean_max_weight);
}

TEST_CASE("variance: the softmax Jacobian norm falls unscaled, not scaled (gradient, C16/C18)") {
    // ||J||_F is sqrt(1/T - 1/T^2) = 0.124 for a uniform row, peaks for rows
    // split between a few keys and goes to 0 for one-hot rows. So from Dk = 16
    // on, as unscaled rows saturate, it must fall; scaled rows keep it flat.
    const auto& rows = default_rows();
    const double j16 = find_row(rows, 16, false).mean_jacobian_norm;
    const double j64 = find_row(rows, 64, false).mean_jacobian_norm;
    const double j512 = find_row(rows, 512, false).mean_jacobian_norm;
    CHECK(j16 > j64);
    CHECK(j64 > j512);
    CHECK(j512 < 0.6 * find_row(rows, 512, true).mean_jacobian_norm);
    double lo = 1, hi = 0;
    for (int64_t dk : {16, 64, 512}) {
        const double j = find_row(rows, dk, true).mean_jacobian_norm;
        lo = std::min(lo, j);
        hi = std::max(hi, j);
    }
    CHECK(hi - lo < 0.02);
}

TEST_CASE("variance: same seed, same numbers bit for bit at 1, 2 and 3 threads") {
    for (VarianceSource src : {VarianceSource::Normal, VarianceSource::Uniform, VarianceSource::Projected}) {
        CAPTURE(attn::variance_source_name(src));
        VarianceConfig cfg;
        cfg.source = src;
        cfg.d_k = {1, 16, 64, src == VarianceSource::Projected ? int64_t{96} : int64_t{512}};
        cfg.samples = 20001;  // 5 chunks of 4096 and a partial row at the end
        cfg.keys = 64;
        cfg.seed = 12345;
        cfg.threads = 1;
        const auto a = attn::run_variance(cfg);
        cfg.threads = 2;
        const auto b = attn::run_variance(cfg);
        cfg.threads = 3;
        const auto c = attn::run_variance(cfg);
        REQUIRE(a.size() == 8);
        REQUIRE(b.size() == 8);
        REQUIRE(c.size() == 8);
        for (size_t i = 0; i < a.size(); ++i) {
            CAPTURE(i);
            CHECK(same_bits(a[i], b[i]));
            CHECK(same_bits(a[i], c[i]));
        }
        CHECK(a[0].rows == 20001 / 64);
        // A Dk's numbers do not depend on the other Dk in the list.
        cfg.d_k = {64};
        const auto solo = attn::run_variance(cfg);
        CHECK(same_bits(solo[0], a[4]));
        // A different seed gives different numbers.
        cfg.seed = 12346;
        CHECK(attn::run_variance(cfg)[0].std != a[4].std);
    }
}

TEST_CASE("variance: the fast generators are standard and do not depend on blocking") {
    // 2^20 pairs = 2^21 normals: mean within 5/sqrt(n), variance within
    // 5 sqrt(2/n) (Var(s^2) = 2 sigma^4 / n for a normal), kurtosis within
    // 5 sqrt(24/n).
    const int64_t pairs = 1 << 20, n = 2 * pairs;
    std::vector<float> z(static_cast<size_t>(n));
    attn::normal_block(z.data(), pairs, 99, 0);
    double s1 = 0, s2 = 0, s4 = 0;
    for (float v : z) s1 += v;
    const double mean = s1 / double(n);
    for (float v : z) {
        const double e = v - mean;
        s2 += e * e;
        s4 += e * e * e * e;
    }
    const double var = s2 / double(n), kurt = (s4 / double(n)) / (var * var);
    CHECK(std::abs(mean) < 5 / std::sqrt(double(n)));
    CHECK(std::abs(var - 1) < 5 * std::sqrt(2.0 / double(n)));
    CHECK(std::abs(kurt - 3) < 5 * std::sqrt(24.0 / double(n)));
    // The cos and sin halves are uncorrelated (|r| < 5 / sqrt(pairs)).
    double cs = 0;
    for (int64_t j = 0; j < pairs; ++j) cs += double(z[size_t(j)]) * z[size_t(pairs + j)];
    CHECK(std::abs(cs / double(pairs)) < 5 / std::sqrt(double(pairs)));

    // Blocking: 1000 pairs at once equal 333 + 667, also across the 2^32 counter boundary.
    for (uint64_t first : {uint64_t{0}, (uint64_t{1} << 32) - 500}) {
        CAPTURE(first);
        std::vector<float> all(2000), p1(666), p2(1334);
        attn::normal_block(all.data(), 1000, 5, first);
        attn::normal_block(p1.data(), 333, 5, first);
        attn::normal_block(p2.data(), 667, 5, first + 333);
        CHECK(std::memcmp(all.data(), p1.data(), 333 * sizeof(float)) == 0);            // cos, pairs 0..332
        CHECK(std::memcmp(all.data() + 333, p2.data(), 667 * sizeof(float)) == 0);      // cos, pairs 333..999
        CHECK(std::memcmp(all.data() + 1000, p1.data() + 333, 333 * sizeof(float)) == 0);  // sin
        CHECK(std::memcmp(all.data() + 1333, p2.data() + 667, 667 * sizeof(float)) == 0);
        std::vector<float> ua(1001), ub(1001);
        attn::uniform_block(ua.data(), 1001, -1.0f, 1.0f, 5, first);
        attn::uniform_block(ub.data(), 400, -1.0f, 1.0f, 5, first);
        attn::uniform_block(ub.data() + 400, 601, -1.0f, 1.0f, 5, first + 400);
        CHECK(std::memcmp(ua.data(), ub.data(), ua.size() * sizeof(float)) == 0);
        for (float v : ua) CHECK((v >= -1.0f && v < 1.0f));
    }
}

TEST_CASE("variance: JSON and CSV parse and carry the rows") {
    VarianceConfig cfg;
    cfg.samples = 5000;
    const auto rows = attn::run_variance(cfg);
    const auto j = nlohmann::json::parse(attn::variance_json(cfg, rows));
    CHECK(j["format"] == "attn-variance");
    CHECK(j["version"] == 1);
    CHECK(j["config"]["d_k"] == nlohmann::json({1, 16, 64, 512}));
    CHECK(j["config"]["samples"] == 5000);
    CHECK(j["config"]["source"] == "normal");
    REQUIRE(j["rows"].size() == 8);
    CHECK(j["rows"][4]["d_k"] == 64);
    CHECK(j["rows"][4]["scaled"] == false);
    CHECK(j["rows"][4]["theory_std"].get<double>() == 8.0);
    CHECK(j["rows"][4]["std"].get<double>() == rows[4].std);  // shortest round-trip text

    std::string out, err;
    REQUIRE(run_cli("variance --samples 3000 --d-k 4,9 --csv", &out, &err) == 0);
    CHECK(err.empty());
    auto lines = split(out, '\n');
    REQUIRE(lines.back().empty());
    lines.pop_back();
    REQUIRE(lines.size() == 5);  // header + 2 Dk x 2
    const auto header = split(lines[0], ',');
    CHECK(header.size() == 17);
    CHECK(header[0] == "d_k");
    for (size_t i = 1; i < lines.size(); ++i) {
        const auto cells = split(lines[i], ',');
        REQUIRE(cells.size() == header.size());
        for (const auto& c : cells) {
            size_t used = 0;
            (void)std::stod(c, &used);
            CHECK(used == c.size());
        }
    }
    REQUIRE(run_cli("variance --samples 3000 --d-k 4 --json --seed 3 --threads 2", &out, &err) == 0);
    const auto jc = nlohmann::json::parse(out);
    CHECK(jc["rows"].size() == 2);
    CHECK(jc["config"]["seed"] == 3);
    // Progress goes to stderr only on a TTY: nothing when piped.
    CHECK(err.empty());
}

TEST_CASE("variance: the SVG is well-formed and labelled, --svg writes it") {
    VarianceConfig cfg;
    cfg.samples = 3000;
    const auto rows = attn::run_variance(cfg);
    const std::string svg = attn::variance_svg(cfg, rows);
    std::string why;
    CHECK_MESSAGE(xml_well_formed(svg, &why), why);
    CHECK(svg.find("<svg") != std::string::npos);
    CHECK(svg.find("<title>") != std::string::npos);
    CHECK(svg.find("theory √Dk") != std::string::npos);          // legend
    CHECK(svg.find("mean max softmax weight") != std::string::npos);  // axis label
    CHECK(svg.find("nan") == std::string::npos);
    // One Dk only: the axes still have a range.
    cfg.d_k = {64};
    const std::string one = attn::variance_svg(cfg, attn::run_variance(cfg));
    CHECK(xml_well_formed(one, &why));
    CHECK(one.find("nan") == std::string::npos);
    CHECK(one.find("inf") == std::string::npos);

    const auto path = std::filesystem::temp_directory_path() / ("attn_var_" + std::to_string(::getpid()) + ".svg");
    std::string out, err;
    REQUIRE(run_cli("variance --samples 2000 --svg " + path.string(), &out, &err) == 0);
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    CHECK(xml_well_formed(ss.str(), &why));
    CHECK(out.find("attn variance") != std::string::npos);  // the table still prints
    std::filesystem::remove(path);
}

TEST_CASE("variance: bad input exits 2 with one line naming the option") {
    struct Case {
        const char* args;
        const char* option;
    };
    const Case cases[] = {
        {"--d-k ''", "--d-k"},          {"--d-k 1,x", "--d-k"},       {"--d-k 0", "--d-k"},
        {"--d-k=-4", "--d-k"},          {"--d-k 1,,2", "--d-k"},      {"--samples 0", "--samples"},
        {"--samples -5", "--samples"}, {"--keys 1", "--keys"},     {"--source gaussian", "--source"},
        {"--threads -1", "--threads"}, {"--samples 10 --keys 64", "--samples"},
        {"--samples abc", "--samples"}, {"--d-k 100000 --source projected", "--d-k"},
        {"--seed -1", "--seed"},       {"--json --csv", "--json"},
        {"--threads 5000", "--threads"}, {"--source ''", "--source"},
        {"--svg /nonexistent-dir/v.svg", "--svg"},  // refused before the experiment runs
    };
    for (const auto& c : cases) {
        CAPTURE(c.args);
        std::string out, err;
        CHECK(run_cli(std::string("variance ") + c.args, &out, &err) == 2);
        CHECK(err.rfind("attn: error: ", 0) == 0);
        CHECK(err.find(c.option) != std::string::npos);
        CHECK(std::count(err.begin(), err.end(), '\n') == 1);
        CHECK(out.empty());
    }
    // The library throws InputError for the same things.
    VarianceConfig cfg;
    cfg.d_k = {};
    CHECK_THROWS_AS(attn::run_variance(cfg), attn::InputError);
}
