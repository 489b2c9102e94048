// tests/test_variants.cpp: `attn variants` end to end (small sizes), and the sparse
// kinds of `attn forward --mask`.
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "test_util.hpp"

using attn::test::run_attn;

TEST_CASE("attn variants --json: every variant timed and compared, the crossovers, Performer's curves") {
    const auto r = run_attn(
        "variants --seq 64,300 --heads 2 --d-k 16 --window 16 --error-t 64 --favor-m 16,64 --no-model "
        "--threads 2 --json");
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["format"] == "attn-variants");
    CHECK(j["speed"].size() == 2 * 7);
    for (const auto& s : j["speed"]) {
        CHECK(s["ok"] == true);
        CHECK(s["seconds"].get<double>() > 0);
    }
    CHECK(j["crossover"].size() == 6);
    CHECK(j["errors"].size() == 6);  // random inputs, every variant but flash
    for (const auto& e : j["errors"]) {
        CHECK(e["rel_error"].get<double>() > 0);
        CHECK(e["kl"].get<double>() >= 0);
    }
    REQUIRE(j["favor"].size() == 2);
    CHECK(j["favor"][1]["points"].size() == 2);
}

TEST_CASE("attn variants and forward --mask: bad values are one-line errors naming the option") {
    for (const std::string bad : {"variants --seq 0 --no-model", "variants --variants flash,nope --no-model",
                                   "variants --variants window,window --no-model"}) {
        const auto r = run_attn(bad + " 2>&1");
        INFO(bad << ": " << r.out);
        CHECK(r.code == 2);
        CHECK(r.out.find("--") != std::string::npos);
    }
    for (const std::string bad : {"window:0", "window:", "strided:x", "global-local:4", "global-local-causal:1,2,3"}) {
        const auto r = run_attn("forward --mask " + bad + " 2>&1");
        INFO(bad << ": " << r.out);
        CHECK(r.code == 2);
        CHECK(r.out.find("--mask") != std::string::npos);
    }
    for (const std::string good :
         {"window:3", "window-causal:2", "strided:2", "strided-causal:3", "global-local:1,2"}) {
        const auto r = run_attn("forward --seq 6 --impl flash --mask " + good + " 2>&1");
        INFO(good << ": " << r.out);
        CHECK(r.code == 0);
    }
}
