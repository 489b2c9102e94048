// The JSON dump: round trip, non-finite values, strict reader, atomic writes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "test_util.hpp"

using namespace attn;

TEST_CASE("dump: round trip keeps every float bit for bit, -inf included") {
    Dump d;
    d.seed = 7;
    d.config = {{"batch", 1}};
    Tensor t = test::randn({2, 3}, 1);
    t.data[1] = -INFINITY;
    t.data[4] = 1e-30f;
    d.tensors["scores"] = t;
    d.order = {"scores"};
    const std::string text = dump_to_string(d);
    CHECK(text.find("-Infinity") != std::string::npos);
    const Dump back = dump_from_string(text);
    CHECK(back.seed == 7);
    CHECK(back.config["batch"] == 1);
    const Tensor& u = back.tensors.at("scores");
    CHECK(u.shape == t.shape);
    for (size_t i = 0; i < t.data.size(); ++i) CHECK(std::memcmp(&u.data[i], &t.data[i], 4) == 0);
}

TEST_CASE("dump: the reader refuses malformed files with a message") {
    const char* bad[] = {
        "",
        "[]",
        "{\"format\": \"other\", \"version\": 1, \"tensors\": {}}",
        "{\"format\": \"attn-dump\", \"version\": 2, \"tensors\": {}}",
        "{\"format\": \"attn-dump\", \"version\": 1}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [2], \"data\": [1]}}}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [-1], \"data\": []}}}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [1], \"data\": [\"a\"]}}}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [4294967296, 4294967296, 4294967296], \"data\": []}}}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [1], \"data\": [Infinit]}}}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": 3}}",
    };
    for (const char* text : bad) {
        INFO(text);
        CHECK_THROWS_AS(dump_from_string(text, "f.json"), InputError);
    }
    // Strings that merely contain the words stay strings.
    const Dump ok = dump_from_string(
        "{\"format\": \"attn-dump\", \"version\": 1, \"config\": {\"note\": \"NaN and -Infinity\"}, "
        "\"tensors\": {\"x\": {\"shape\": [3], \"data\": [NaN, Infinity, -2]}}}");
    CHECK(ok.config["note"] == "NaN and -Infinity");
    CHECK(std::isnan(ok.tensors.at("x").data[0]));
    CHECK(std::isinf(ok.tensors.at("x").data[1]));
}

TEST_CASE("dump: files are written whole or not at all") {
    const std::string dir = test::temp_dir("dump");
    const std::string path = dir + "/a.json";
    write_file_atomic(path, "first");
    CHECK(read_file(path) == "first");
    write_file_atomic(path, "second");
    CHECK(read_file(path) == "second");
    CHECK_THROWS_AS(write_file_atomic(dir + "/missing/b.json", "x"), InputError);
    // Nothing but the one file is left behind (no temp files).
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        (void)e;
        ++n;
    }
    CHECK(n == 1);
    std::filesystem::remove_all(dir);
}
