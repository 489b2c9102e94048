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

TEST_CASE("dump: non-finite values as strings or null are strict JSON, and the reader takes them back") {
    Dump d;
    d.tensors["x"] = Tensor({4});
    d.tensors["x"].data = {-INFINITY, INFINITY, NAN, 0.5f};
    const std::string as_string = dump_to_string(d, JsonNonFinite::string);
    CHECK(as_string.find(R"(["-Infinity", "Infinity", "NaN", 0.5])") != std::string::npos);
    const std::string as_null = dump_to_string(d, JsonNonFinite::null);
    CHECK(as_null.find("[null, null, null, 0.5]") != std::string::npos);
    for (const std::string& text : {as_string, as_null}) {
        INFO(text);
        CHECK(nlohmann::json::accept(text));  // strict RFC 8259, as JavaScript's JSON.parse
    }
    const std::vector<float> s = dump_from_string(as_string).tensors.at("x").data;
    CHECK((s[0] == -INFINITY && s[1] == INFINITY && std::isnan(s[2]) && s[3] == 0.5f));
    const std::vector<float> n = dump_from_string(as_null).tensors.at("x").data;
    CHECK((std::isnan(n[0]) && std::isnan(n[1]) && std::isnan(n[2]) && n[3] == 0.5f));  // null is NaN
    CHECK(std::string(json_nonfinite_name(JsonNonFinite::literal)) == "literal");
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
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [1], \"data\": [\"inf\"]}}}",
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
