// Tests of the safetensors reader: round trip, every rule a file can break,
// and the real model file when it has been fetched.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "attn/core/errors.hpp"
#include "attn/io/safetensors.hpp"
#include "test_util.hpp"

using attn::SafeTensors;
using attn::Tensor;

namespace {

// A file from a hand-written header and a data section of `data_bytes` zero bytes.
std::string make_file(const std::string& header, size_t data_bytes) {
    std::string out(8, '\0');
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return out + header + std::string(data_bytes, '\0');
}

// The error message parse() gives, or "" if it accepted the bytes.
std::string error_of(const std::string& bytes) {
    try {
        (void)SafeTensors::parse(bytes, "bad.safetensors");
    } catch (const attn::InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("safetensors: a written file reads back bit for bit, metadata included") {
    Tensor a = Tensor::from({2, 3}, {1, -2, 3.5f, 0, 1e-8f, -1e8f});
    Tensor b = Tensor::from({4}, {0.25f, 0.5f, 0.75f, 1});
    Tensor empty({0, 3});
    const std::string bytes =
        attn::safetensors_to_string({{"a", a}, {"b.weight", b}, {"e", empty}}, {{"format", "pt"}});
    SafeTensors st = SafeTensors::parse(bytes, "mem");
    CHECK(st.names() == std::vector<std::string>{"a", "b.weight", "e"});
    CHECK(st.metadata().at("format") == "pt");
    CHECK(st.info("a").dtype == attn::DType::F32);
    Tensor a2 = st.to_float("a", {2, 3});
    CHECK(a2.data == a.data);
    CHECK(st.to_float("b.weight").data == b.data);
    CHECK(st.to_float("e").shape == attn::Shape{0, 3});
    CHECK_THROWS_AS(st.to_float("a", {3, 2}), attn::ShapeError);
    CHECK_THROWS_WITH_AS(st.info("missing"), doctest::Contains("has no tensor 'missing'"), attn::InputError);
}

TEST_CASE("safetensors: F16, BF16 and F64 convert to float32 exactly") {
    // F16 1.0 = 0x3C00, -2.0 = 0xC000, smallest subnormal 0x0001 = 2^-24, +inf 0x7C00
    const std::string hdr =
        R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},)"
        R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},)"
        R"("d":{"dtype":"F64","shape":[1],"data_offsets":[12,20]}})";
    std::string f = make_file(hdr, 20);
    const size_t d0 = 8 + hdr.size();
    const uint16_t halves[4] = {0x3C00, 0xC000, 0x0001, 0x7C00};
    std::memcpy(&f[d0], halves, 8);
    const uint16_t bf[2] = {0x3F80, 0xC120};  // 1.0, -10.0
    std::memcpy(&f[d0 + 8], bf, 4);
    const double dv = 0.1;
    std::memcpy(&f[d0 + 12], &dv, 8);
    SafeTensors st = SafeTensors::parse(f, "mem");
    Tensor h = st.to_float("h");
    CHECK(h.data[0] == 1.0f);
    CHECK(h.data[1] == -2.0f);
    CHECK(h.data[2] == std::ldexp(1.0f, -24));
    CHECK(std::isinf(h.data[3]));
    CHECK(st.to_float("b").data == std::vector<float>{1.0f, -10.0f});
    CHECK(st.to_float("d").data[0] == 0.1f);
}

TEST_CASE("safetensors: integer tensors are readable as bytes but refused as floats") {
    SafeTensors st = SafeTensors::parse(make_file(R"({"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", 16));
    CHECK(st.bytes("ids").size() == 16);
    CHECK_THROWS_WITH_AS(st.to_float("ids"), doctest::Contains("not a floating-point type"), attn::InputError);
}

TEST_CASE("safetensors: every malformed file is a one-line InputError naming the file") {
    struct Case {
        const char* why;
        std::string bytes;
        const char* expect;
    };
    std::string huge_len(8, '\0');
    huge_len[7] = '\x7f';  // header length ~ 9e18
    std::string past_end = make_file("{}", 0);
    past_end[0] = 100;  // claims 100 header bytes, has 2
    std::string deep = make_file(std::string(1000, '[') + std::string(1000, ']'), 0);
    deep[8] = '{';
    const Case cases[] = {
        {"empty file", "", "shorter than the 8-byte"},
        {"7 bytes", std::string(7, '\0'), "shorter than the 8-byte"},
        {"header length over the cap", huge_len, "exceeds the cap"},
        {"header length past the end", past_end, "runs past the end"},
        {"not JSON", make_file("{not json", 0), "not valid JSON"},
        {"array header", make_file("[1,2]", 0), "not a JSON object"},
        {"nested too deep", deep, "nests deeper"},
        {"unknown dtype", make_file(R"({"x":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}})", 1),
         "unknown dtype 'F8'"},
        {"no shape", make_file(R"({"x":{"dtype":"F32","data_offsets":[0,4]}})", 4), "no shape"},
        {"negative dim", make_file(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), "non-negative"},
        {"float dim", make_file(R"({"x":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4), "non-negative"},
        {"one offset", make_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4), "data_offsets"},
        {"end before begin", make_file(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", 4), "END < BEGIN"},
        {"range past the data", make_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
         "past the data section"},
        {"size disagrees with shape", make_file(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
         "different byte count"},
        {"shape product overflows",
         make_file(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
         "different byte count"},
        {"overlap",
         make_file(
             R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
             R"("y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
             12),
         "overlaps"},
        {"hole", make_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "hole"},
        {"trailing bytes", make_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8), "no tensor owns"},
        {"metadata not strings", make_file(R"({"__metadata__":{"a":1}})", 0), "not a string"},
        {"entry not object", make_file(R"({"x":3})", 0), "not an object"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.why);
        const std::string err = error_of(c.bytes);
        CHECK(err.find("bad.safetensors: not a valid safetensors file") == 0);
        CHECK(err.find(c.expect) != std::string::npos);
        CHECK(err.find('\n') == std::string::npos);
    }
    // A valid minimal file, to show the cases above fail for their stated reason.
    CHECK(error_of(make_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4)) == "");
    CHECK(error_of(make_file("{}", 0)) == "");
}

TEST_CASE("safetensors: a missing file names the path") {
    CHECK_THROWS_WITH_AS(SafeTensors::load("/nonexistent/x.safetensors"),
                         doctest::Contains("/nonexistent/x.safetensors"), attn::InputError);
}

TEST_CASE("safetensors: the fetched all-MiniLM-L6-v2 weights parse (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const std::string path = std::string(ATTN_SOURCE_DIR) + "/data/models/all-MiniLM-L6-v2/model.safetensors";
    SafeTensors st = SafeTensors::load(path);
    CHECK(st.to_float("embeddings.word_embeddings.weight").shape == attn::Shape{30522, 384});
    CHECK(st.info("encoder.layer.5.intermediate.dense.weight").shape == attn::Shape{1536, 384});
}
