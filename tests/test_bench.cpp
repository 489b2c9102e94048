// tests/test_bench.cpp: `attn bench` runs end to end on a tiny size, its JSON
// parses with the documented fields, and bad options exit 2 naming the option.
// No timing is asserted: speed lives in the bench output, not in unit tests.
#include <cstdio>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "attn/bench/bench.hpp"
#include "attn/core/stats.hpp"
#include "attn/core/errors.hpp"
#include "attn/cpu/flash.hpp"

namespace {

struct Run {
    int code;
    std::string out;
};

// Runs the attn binary with `args`; stdout captured, stderr (2>&1 when asked).
Run run_attn(const std::string& args, bool with_stderr = false) {
    const std::string cmd = std::string("\"") + ATTN_BINARY + "\" " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

TEST_CASE("attn bench --json: a quick size parses with every implementation's fields") {
    const Run r = run_attn("bench --seq 48,64 --heads 2 --d-k 16 --reps 2 --warmup 0 --threads 2 --json");
    REQUIRE(r.code == 0);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["format"] == "attn-bench");
    CHECK(doc["version"] == 1);
    CHECK(doc["machine"]["threads"] == 2);
    CHECK(doc["machine"]["fma_peak_gflops"].get<double>() > 0);
    // the register tile with its loads runs at most at the register-only loop's rate (10% for noise)
    CHECK(doc["machine"]["tile_gflops_per_cpu_second"].get<double>() > 0);
    CHECK(doc["machine"]["tile_gflops_per_cpu_second"].get<double>() <=
          1.1 * doc["machine"]["fma_gflops_per_cpu_second"].get<double>());
    CHECK(doc["machine"]["tile_shape"].is_string());
    CHECK(doc["machine"]["gemm_gflops"].get<double>() > 0);
    // the dispatch actually taken and the processor, so figures from different machines never mix
    CHECK(doc["machine"]["flash_bf16_path"] == attn::flash_bf16_path());
    CHECK(doc["machine"]["flash_kernel"] == attn::flash_kernels().front());
    CHECK(doc["machine"]["cpu_model"].is_string());
    CHECK(doc["machine"]["cpu_flags"].is_array());
#if defined(__x86_64__)
    CHECK(!doc["machine"]["cpu_model"].get<std::string>().empty());
#endif
    const auto& res = doc["results"];
    const bool bf16 = doc["machine"]["bf16"].get<bool>();
    CHECK(res.size() == (bf16 ? 6u : 4u));
    for (const auto& x : res) {
        CHECK(x["seconds"].get<double>() > 0);
        CHECK(x["times"].size() == 2);
        CHECK(x["gflops"].get<double>() > 0);
        // the same rate against the tile's figure: a larger fraction than against the FMA loop's
        CHECK(x["fraction_of_tile_peak_cpu"].get<double>() ==
              doctest::Approx(x["fraction_of_fma_peak_cpu"].get<double>() *
                              doc["machine"]["fma_gflops_per_cpu_second"].get<double>() /
                              doc["machine"]["tile_gflops_per_cpu_second"].get<double>()));
        CHECK(x["peak_rss_bytes"].get<double>() > x["io_bytes"].get<double>());  // the process holds q, k, v, out
        const double flops = 4.0 * 2 * x["seq"].get<double>() * x["seq"].get<double>() * 16;
        CHECK(x["flops"].get<double>() == doctest::Approx(flops));
        if (x["impl"] == "flash-bf16") CHECK(x["err_vs_fp32"].get<double>() < 2e-2);
    }
}

TEST_CASE("attn bench --backward --json: reference and flash timed, FLOPs 2.5 x the forward's, flash's scratch") {
    const Run r = run_attn("bench --backward --seq 48,100 --heads 2 --d-k 16 --reps 2 --warmup 0 --threads 2 --json");
    REQUIRE(r.code == 0);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["config"]["backward"] == true);
    CHECK(doc["config"]["flop_factor"].get<double>() == 2.5);
    const auto& res = doc["results"];
    REQUIRE(res.size() == 4u);  // reference and flash at both lengths; flash-bf16 has no backward
    for (const auto& x : res) {
        INFO(x.dump());
        CHECK(x["seconds"].get<double>() > 0);
        const double T = x["seq"].get<double>();
        CHECK(x["flops"].get<double>() == doctest::Approx(2.5 * 4.0 * 2 * T * T * 16));
        if (x["impl"] == "flash") {
            CHECK(x["scratch_bytes"].get<double>() > 0);
            CHECK(x.contains("speedup_vs_reference"));
        } else {
            CHECK(x["impl"] == "reference");
            CHECK(!x.contains("scratch_bytes"));
        }
    }
    bool bf16_said = false;
    for (const auto& x : doc["skipped"])
        if (x["impl"] == "flash-bf16")
            bf16_said = x["reason"].get<std::string>().find("no backward") != std::string::npos;
    CHECK(bf16_said);
}

TEST_CASE("attn bench: bad input exits 2 with a one-line error naming the option") {
    const std::pair<const char*, const char*> bad[] = {
        {"bench --seq ''", "--seq"},          {"bench --seq 64,x", "--seq"},   {"bench --seq 0", "--seq"},
        {"bench --seq 64,,128", "--seq"},     {"bench --batch 0", "--batch"},  {"bench --heads -1", "--heads"},
        {"bench --d-k abc", "--d-k"},         {"bench --impl nope", "--impl"}, {"bench --impl flash,", "--impl"},
        {"bench --reps 0", "--reps"},         {"bench --threads x", "--threads"}};
    for (const auto& case_ : bad) {
        const char* const args = case_.first;  // not a structured binding: clang 14 cannot capture one (INFO)
        const char* const opt = case_.second;
        const Run r = run_attn(args, true);
        INFO(args << " -> " << r.out);
        CHECK(r.code == 2);
        CHECK(r.out.find(opt) != std::string::npos);
        CHECK(r.out.find("attn: error:") == 0);
    }
}

TEST_CASE("bench helpers: median, flop count, bad sizes and a backend that cannot run here") {
    CHECK(attn::median({3, 1, 2}) == 2);
    CHECK(attn::median({4, 1, 2, 3}) == 2.5);
    attn::BenchCase c;
    c.B = 2, c.H = 3, c.T = 10, c.Dk = 4;
    CHECK(attn::bench_flops(c) == doctest::Approx(4.0 * 2 * 3 * 100 * 4));
    c.causal = true;  // T(T+1)/2 allowed pairs per head
    CHECK(attn::bench_flops(c) == doctest::Approx(2.0 * 2 * 3 * 10 * 11 * 4));
    c.backward = true;  // FlashAttention's convention: 2.5 x the forward
    CHECK(attn::bench_flops(c) == doctest::Approx(2.5 * 2.0 * 2 * 3 * 10 * 11 * 4));
    c.backend = attn::Backend::FlashBf16;  // no backward pass: reported, not thrown
    const attn::BenchResult nb = attn::run_case(c);
    CHECK(!nb.ok);
    CHECK(nb.error.find("no backward") != std::string::npos);
    c.backward = false;
    c.backend = attn::Backend::Flash;
    c.reps = 0;
    CHECK_THROWS_AS(attn::run_case(c), attn::InputError);
    c.reps = 1;
    for (const attn::BackendInfo& row : attn::backends()) {
        std::string why;
        if (row.available(&why)) continue;
        c.backend = row.id;
        const attn::BenchResult r = attn::run_case(c);  // reported, not thrown: the other rows still run
        CHECK(!r.ok);
        CHECK(r.error == why);
    }
}
