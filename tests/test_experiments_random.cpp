// tests/test_experiments_random.cpp: the two registry experiments that draw random inputs
// instead of training, `variance` (C14-C17) and `variants` (C42, C43): they are listed, their
// verdicts are computed from the numbers (changed numbers flip them), and `attn variance` /
// `attn variants` print the same verdicts as `attn experiment`.
#include <algorithm>
#include <cmath>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "attn/experiments/experiment.hpp"
#include "attn/experiments/variance.hpp"
#include "attn/experiments/variants.hpp"
#include "test_util.hpp"

using namespace attn;

namespace {

const Verdict& verdict_of(const ExperimentResult& r, const std::string& claim) {
    const auto it =
        std::find_if(r.verdicts.begin(), r.verdicts.end(), [&](const Verdict& v) { return v.claim == claim; });
    REQUIRE(it != r.verdicts.end());
    return *it;
}

VarianceConfig small_variance() {
    VarianceConfig cfg;  // d_k 1, 16, 64, 512
    cfg.samples = 16384;
    cfg.threads = 2;
    return cfg;
}

VarianceRow& row_of(std::vector<VarianceRow>& rows, int64_t d_k, bool scaled) {
    for (auto& r : rows)
        if (r.d_k == d_k && r.scaled == scaled) return r;
    FAIL("no row");
    return rows.front();
}

// A timing row of `v` at T whose time is c * T^e.
SpeedRow timed(Variant v, int64_t T, double c, double e) {
    SpeedRow s;
    s.variant = v, s.T = T, s.ok = true, s.seconds = c * std::pow(double(T), e);
    return s;
}

VariantsResult synthetic_timings(const VariantsConfig& cfg, double linear_exponent, double sparse_factor) {
    VariantsResult r;
    for (int64_t T : cfg.lengths) {
        r.speed.push_back(timed(Variant::Flash, T, 1e-9, 2));
        r.speed.push_back(timed(Variant::Window, T, sparse_factor * 2e-7, 1));
        r.speed.push_back(timed(Variant::Strided, T, 1.1e-9, 2));  // the tiled kernel skips few blocks
        r.speed.push_back(timed(Variant::GlobalLocal, T, sparse_factor * 3e-7, 1));
        r.speed.push_back(timed(Variant::EluPlusOne, T, 1e-7, linear_exponent));
        r.speed.push_back(timed(Variant::Favor, T, 4e-7, 1));
        r.speed.push_back(timed(Variant::CosFormer, T, 2e-7, 1));
    }
    r.crossover = crossovers(cfg, r.speed);
    return r;
}

}  // namespace

TEST_CASE("experiment registry: variance and variants are entries, listed by attn experiment --list") {
    const ExperimentInfo* var = find_experiment("variance");
    const ExperimentInfo* vts = find_experiment("variants");
    REQUIRE(var != nullptr);
    REQUIRE(vts != nullptr);
    CHECK(var->claims == std::vector<std::string>{"C14", "C15", "C16", "C17"});
    CHECK(vts->claims == std::vector<std::string>{"C42", "C43"});
    const auto list = test::run_attn("experiment --list");
    REQUIRE(list.code == 0);
    // one line an experiment, each the registry's, in its order
    CHECK(std::count(list.out.begin(), list.out.end(), '\n') == static_cast<long>(experiments().size()));
    size_t at = 0;
    for (const auto& e : experiments()) {
        const size_t p = list.out.find(e.name + " ", at);
        CHECK(p != std::string::npos);
        if (p != std::string::npos) at = p;
    }
    CHECK(list.out.find("C14, C15, C16, C17") != std::string::npos);
}

TEST_CASE(
    "experiment variance: the registry's run is run_variance's rows, judged, and changed rows flip the verdicts") {
    const VarianceConfig cfg = small_variance();
    std::vector<VarianceRow> rows = run_variance(cfg);
    const ExperimentResult r = variance_result(cfg, {rows});
    CHECK(r.name == "variance");
    REQUIRE(r.tables.size() == 1);
    CHECK(r.tables[0].rows.size() == rows.size());
    CHECK(r.tables[0].rows[4][4].get<double>() == rows[4].std);  // the row's numbers, as they are
    CHECK(!r.curves.empty());
    REQUIRE(r.verdicts.size() == 4);
    CHECK(verdict_of(r, "C14").kind == VerdictKind::Supported);
    CHECK(verdict_of(r, "C15").kind == VerdictKind::Supported);
    CHECK(verdict_of(r, "C16").kind == VerdictKind::Qualified);  // about 0.8 at d_k 64, above 0.9 at 512
    CHECK(verdict_of(r, "C17").kind == VerdictKind::Supported);
    CHECK(verdict_of(r, "C16").figures.find("d_k 64") != std::string::npos);

    // the registry entry at the quick size, one seed: the same numbers as run_variance of its config
    ExperimentConfig quick;
    quick.size = ExperimentSize::Quick, quick.seeds = 1, quick.seed = 0, quick.threads = 2;
    const ExperimentResult q = find_experiment("variance")->run(quick, {});
    VarianceConfig qc;
    qc.samples = 65536;
    CHECK(q.tables[0].rows[2][4].get<double>() == run_variance(qc)[2].std);

    // a std 10% off sqrt(d_k): C14 and C15 fail; the scaled row 10% off 1: C17 fails
    std::vector<VarianceRow> off = rows;
    VarianceRow& un = row_of(off, 64, false);
    un.std *= 1.1, un.ratio *= 1.1, un.range_lo *= 1.1, un.range_hi *= 1.1;
    const ExperimentResult bad = variance_result(cfg, {off});
    CHECK(verdict_of(bad, "C14").kind == VerdictKind::NotSupported);
    CHECK(verdict_of(bad, "C15").kind == VerdictKind::NotSupported);
    CHECK(verdict_of(bad, "C17").kind == VerdictKind::Supported);
    VarianceRow& sc = row_of(off, 16, true);
    sc.std *= 1.1, sc.ratio *= 1.1;
    CHECK(verdict_of(variance_result(cfg, {off}), "C17").kind == VerdictKind::NotSupported);
    // every seed must pass: a second, good run does not hide the bad one
    CHECK(verdict_of(variance_result(cfg, {rows, off}), "C14").kind == VerdictKind::NotSupported);

    // rows nearly one-hot at d_k 64 already: C16 supported; nowhere: not supported
    std::vector<VarianceRow> hot = rows;
    row_of(hot, 64, false).mean_max_weight = 0.95;
    CHECK(verdict_of(variance_result(cfg, {hot}), "C16").kind == VerdictKind::Supported);
    row_of(hot, 64, false).mean_max_weight = 0.5;
    row_of(hot, 512, false).mean_max_weight = 0.5;
    CHECK(verdict_of(variance_result(cfg, {hot}), "C16").kind == VerdictKind::NotSupported);

    // the projected source's entries do not have variance 1: no verdicts
    VarianceConfig proj = cfg;
    proj.source = VarianceSource::Projected;
    proj.d_k = {4, 16};
    proj.samples = 4096;
    CHECK(variance_result(proj, {run_variance(proj)}).verdicts.empty());
}

TEST_CASE("experiment variants: the verdicts are computed from the timings, and changed timings flip them") {
    VariantsConfig cfg;
    cfg.lengths = {256, 1024, 4096};
    const ExperimentResult r = variants_result(cfg, synthetic_timings(cfg, 1.0, 1.0));
    CHECK(r.name == "variants");
    CHECK(std::fabs(time_exponent(synthetic_timings(cfg, 1.0, 1.0).speed, Variant::Flash) - 2) < 1e-9);
    REQUIRE(r.verdicts.size() == 2);
    CHECK(verdict_of(r, "C42").kind == VerdictKind::Qualified);  // window and global-local faster, strided not
    CHECK(verdict_of(r, "C42").figures.find("2 of 3") != std::string::npos);
    CHECK(verdict_of(r, "C43").kind == VerdictKind::Supported);
    // elu+1 growing as T^2: only 2 of 3 linear kinds are O(n)
    CHECK(verdict_of(variants_result(cfg, synthetic_timings(cfg, 2.0, 1.0)), "C43").kind == VerdictKind::Qualified);
    // window and global-local 1000x slower: no sparse kind beats flash
    CHECK(verdict_of(variants_result(cfg, synthetic_timings(cfg, 1.0, 1000.0)), "C42").kind ==
          VerdictKind::NotSupported);
    // no timings (attn variants --no-speed): no verdicts
    VariantsResult none = synthetic_timings(cfg, 1.0, 1.0);
    none.speed.clear(), none.crossover.clear();
    CHECK(variants_result(cfg, none).verdicts.empty());
}

TEST_CASE("experiment variance and variants: attn variance and attn variants print the registry's verdicts") {
    const auto v = test::run_attn("variance --samples 8192 --threads 2");
    REQUIRE(v.code == 0);
    CHECK(v.out.find("C14 supported: ") != std::string::npos);
    CHECK(v.out.find("C17 supported: ") != std::string::npos);
    const auto e = test::run_shell("'" + std::string(ATTN_BINARY) +
                                   "' experiment variance --quick --seeds 1 --threads 2 --json 2>/dev/null");
    REQUIRE(e.code == 0);
    const auto j = nlohmann::json::parse(e.out);
    CHECK(j["format"] == "attn-experiment");
    CHECK(j["name"] == "variance");
    CHECK(j["verdicts"].size() == 4);
    const auto w = test::run_attn("variants --seq 64,256 --heads 2 --d-k 16 --window 16 --error-t 32 --favor-m 16 "
                                  "--no-model --threads 2");
    REQUIRE(w.code == 0);
    CHECK(w.out.find("C42 ") != std::string::npos);
    CHECK(w.out.find("C43 ") != std::string::npos);
}
