// Experiment length (C44): its Quick size (the attention kinds it trains are checked in
// tests/test_nn_variants.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/core/rng.hpp"
#include "attn/experiments/experiment.hpp"

using namespace attn;

TEST_CASE("experiment length (quick): every variant learns, softmax learns recall at T0, verdicts carry numbers") {
    ExperimentConfig cfg;
    cfg.size = ExperimentSize::Quick, cfg.seeds = 1, cfg.threads = 2;
    const ExperimentResult r = experiment_length().run(cfg, {});
    REQUIRE(r.tables.size() == 2);
    for (const auto& t : r.tables) {
        REQUIRE(t.rows.size() == 7);
        CHECK(t.rows[0][0] == "softmax");
        for (const auto& row : t.rows) {
            INFO(t.title << " / " << row[0].get<std::string>());
            // columns: attention, quality T0, vs softmax T0, quality 10T0, vs softmax 10T0, initial loss, final loss,
            // seconds
            CHECK(row[6].get<double>() < row[5].get<double>());  // training lowered the held-out loss at 10 T0
        }
    }
    // chars: softmax's share is 1 by definition where defined; every share is finite at T0
    const auto& ch = r.tables[0].rows;
    for (const auto& row : ch) CHECK(row[2].is_number());
    CHECK(ch[0][2].get<double>() == doctest::Approx(1.0));
    // recall at T0 = 8 (2 pairs, 2 queries, 8 values: chance 0.125): softmax clearly above chance after
    // 40 steps (56% at seed 0 when written; 0.3 leaves room for a slower seed but not for no learning)
    const auto& rc = r.tables[1].rows;
    CHECK(rc[0][1].get<double>() >= 0.3);
    // one C44 verdict, with figures
    int c44 = 0;
    for (const auto& v : r.verdicts)
        if (v.claim == "C44") {
            ++c44;
            CHECK(v.figures.find("softmax") != std::string::npos);
        }
    CHECK(c44 == 1);  // one entry: the recall task names no share, so only the characters task decides
    REQUIRE(find_experiment("length") != nullptr);
    CHECK(find_experiment("length")->claims.front() == "C44");
}
