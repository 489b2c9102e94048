// attn exercise: the twelve exercises, their reference answers pass their own check, one
// typical wrong answer each is diagnosed as that mistake, and the command writes the
// inputs and task, grades files and refuses bad answers with one line.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/check/exercise.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/io/npy.hpp"
#include "test_util.hpp"

TEST_CASE("exercise: twelve exercises, numbered and named as the lessons cite them") {
    const std::vector<std::string> names = {"scores", "softmax",      "causal",  "padding", "one-head", "split-merge",
                                            "multi-head", "softmax-grad", "kv-step", "rope", "gqa", "find-the-bug"};
    const auto& all = attn::check::exercises();
    REQUIRE(all.size() == names.size());
    for (size_t k = 0; k < all.size(); ++k) {
        CHECK(all[k].number == static_cast<int>(k + 1));
        CHECK(all[k].name == names[k]);
        CHECK(&attn::check::find_exercise(std::to_string(k + 1)) == &all[k]);
        CHECK(&attn::check::find_exercise(names[k]) == &all[k]);
    }
    CHECK_THROWS_AS(attn::check::find_exercise("13"), attn::InputError);
}

TEST_CASE("exercise: each reference answer passes, the typical wrong answer is diagnosed as its mistake") {
    for (const auto& e : attn::check::exercises())
        for (uint64_t seed : {0u, 7u}) {
            CAPTURE(e.name);
            CAPTURE(seed);
            const attn::Dump in = attn::check::exercise_inputs(e, seed);
            const attn::Tensor good = attn::check::reference_answer(e, in);
            CHECK(good.shape == attn::check::answer_shape(e, in));
            const auto ok = attn::check::grade_exercise(e, in, good, false, "answer");
            CHECK(ok.first_divergence.empty());
            const auto bad = attn::check::grade_exercise(e, in, attn::check::wrong_answer(e, in), false, "answer");
            CHECK(bad.first_divergence == e.answer);
            REQUIRE(bad.diagnosis.size() == 1);
            CHECK(bad.diagnosis[0].id == attn::check::wrong_answer_id(e));
            CHECK(!attn::check::exercise_hint(e, bad).empty());
        }
}

TEST_CASE("exercise: inputs depend on the seed, and the same seed gives the same inputs") {
    for (const auto& e : attn::check::exercises()) {
        CAPTURE(e.name);
        const auto a = attn::check::exercise_inputs(e, 1), b = attn::check::exercise_inputs(e, 1),
                   c = attn::check::exercise_inputs(e, 2);
        CHECK(a.tensors.begin()->second.data == b.tensors.begin()->second.data);
        CHECK(a.tensors.begin()->second.data != c.tensors.begin()->second.data);
    }
}

TEST_CASE("exercise: the command writes inputs and task, grades answers, --list --json") {
    const auto list = attn::test::run_attn("exercise --list --json");
    REQUIRE(list.code == 0);
    const auto j = nlohmann::json::parse(list.out);
    CHECK(j["format"] == "attn-exercises");
    CHECK(j["version"] == 1);
    CHECK(j["exercises"].size() == 12);
    CHECK(j["exercises"][2]["name"] == "causal");

    const std::string dir = attn::test::temp_dir("exercise");
    const auto wrote = attn::test::run_attn("exercise causal -o '" + dir + "' --seed 5");
    REQUIRE(wrote.code == 0);
    CHECK(wrote.out.find("np.save(\"answer.npy\", weights)") != std::string::npos);
    const attn::Dump in = attn::read_dump_any(dir + "/inputs.npz");
    CHECK(in.config["exercise"] == "causal");
    CHECK(in.config["seed"] == 5);
    CHECK(std::filesystem::exists(dir + "/task.md"));
    const auto& e = attn::check::find_exercise("causal");
    attn::save_npy(dir + "/answer.npy", attn::check::reference_answer(e, in));
    const auto pass = attn::test::run_attn("exercise 3 --check '" + dir + "/answer.npy'");
    CHECK(pass.code == 0);
    CHECK(pass.out.find("pass") != std::string::npos);
    attn::save_npy(dir + "/answer.npy", attn::check::wrong_answer(e, in));
    const auto fail = attn::test::run_attn("exercise causal --check '" + dir + "/answer.npy'");
    CHECK(fail.code == 3);
    CHECK(fail.out.find("diagnosis [mask-after-softmax]") != std::string::npos);
    CHECK(fail.out.find("hint:") != std::string::npos);
    // a seed that disagrees with the inputs beside the answer is refused
    const auto seed = attn::test::run_attn("exercise causal --check '" + dir + "/answer.npy' --seed 6");
    CHECK(seed.code == 2);
    // an answer of the wrong size or dtype: one line, exit 2
    attn::save_npy(dir + "/answer.npy", attn::Tensor({5, 6}));
    const auto size = attn::test::run_attn("exercise causal --check '" + dir + "/answer.npy'");
    CHECK(size.code == 2);
    CHECK(size.out.find("shape [5, 6] is not the answer's: weights is [6, 6]") != std::string::npos);
    attn::write_file_atomic(dir + "/answer.npy", attn::npy_bool_to_string({6, 6}, std::vector<uint8_t>(36, 1)));
    const auto dtype = attn::test::run_attn("exercise causal --check '" + dir + "/answer.npy'");
    CHECK(dtype.code == 2);
    CHECK(dtype.out.find("weights: a boolean array") != std::string::npos);
    CHECK(std::count(dtype.out.begin(), dtype.out.end(), '\n') == 1);
    const auto unknown = attn::test::run_attn("exercise 13");
    CHECK(unknown.code == 2);
}
