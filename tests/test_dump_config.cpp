// The schema of a dump's config and mask tensors (attn/io/dump_config.hpp): what
// `attn forward --input` reads back, each defect an error that names the field.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "attn/core/errors.hpp"
#include "attn/io/dump_config.hpp"

using namespace attn;

namespace {
// Sizes are written 1u: a parsed file's positive integers are unsigned, as the reader expects.
// A dump with tensor x of shape [1, 3, 2] and `config`.
Dump dump_with(nlohmann::json config) {
    Dump d;
    d.config = std::move(config);
    d.tensors["x"] = Tensor(Shape{1, 3, 2});
    return d;
}
// The message read_dump_config throws for `config`, or "" when it takes it.
std::string refusal(nlohmann::json config) {
    try {
        read_dump_config(dump_with(std::move(config)));
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST_CASE("dump config: a config --dump writes reads back field by field") {
    const DumpLayerConfig c = read_dump_config(dump_with(
        {{"batch", 1u}, {"seq", 3u}, {"d_model", 2u}, {"heads", 2u}, {"d_k", 1u}, {"d_v", 1u}, {"kv_heads", 1u},
         {"scale", "0.5"}, {"fill", -1e9}, {"init", "xavier"}, {"rope", 500.0}, {"alibi", true}, {"softcap", 30.0},
         {"bias", false}, {"train", true}, {"dropout", 0.25}, {"mask", "causal"}, {"impl", "reference"}, {"seed", 3}}));
    CHECK(c.heads == 2);
    CHECK(c.kv_heads == 1);
    CHECK(c.scale == "0.5");
    CHECK(c.fill == "-1000000000");
    CHECK(c.init == "xavier");
    CHECK(c.rope == true);
    CHECK(c.rope_base == 500.0);
    CHECK(c.alibi == true);
    CHECK(c.softcap == 30.0);
    CHECK(c.bias == false);
    CHECK(c.train == true);
    CHECK(c.dropout == 0.25);
    CHECK(c.mask == "causal");
    const DumpLayerConfig empty = read_dump_config(dump_with(nlohmann::json::object()));
    CHECK_FALSE(empty.heads.has_value());
    CHECK_FALSE(empty.rope.has_value());
    CHECK(read_dump_config(dump_with({{"rope", false}})).rope == false);
}

TEST_CASE("dump config: each bad field is refused naming that field first") {
    struct Case {
        nlohmann::json config;
        std::string starts;  // the message starts with the field
        std::string says;    // and says the rule
    };
    const Case cases[] = {
        {{{"heads", "two"}}, "config.heads: ", "integer in [1, 2147483647]"},
        {{{"heads", 0}}, "config.heads: ", "integer in [1, 2147483647]"},
        {{{"d_k", -1}}, "config.d_k: ", "integer"},
        {{{"seq", 4u}}, "config.seq: ", "says 4 but tensor x has shape [1, 3, 2]"},
        {{{"d_model", 3u}}, "config.d_model: ", "tensor x"},
        {{{"scale", 0.5}}, "config.scale: ", "must be a string"},
        {{{"fill", true}}, "config.fill: ", "a number or \"-inf\""},
        {{{"rope", true}}, "config.rope: ", "false or the base"},
        {{{"alibi", 1}}, "config.alibi: ", "true or false"},
        {{{"softcap", -1}}, "config.softcap: ", ">= 0"},
        {{{"train", 1}}, "config.train: ", "true or false"},
        {{{"dropout", 1.0}}, "config.dropout: ", "[0, 1)"},
        {{{"dropout", 0.99999999}}, "config.dropout: ", "[0, 1)"},  // 1 as a float32
        {{{"mask", 3}}, "config.mask: ", "must be a string"},
        {{{"window", 3u}, {"mask", "causal"}}, "config.window: ", "the tensor mask that holds the window"},
        {{{"hedas", 2}}, "config.hedas: ", "is not a setting"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.config.dump());
        const std::string why = refusal(c.config);
        CHECK(why.rfind(c.starts, 0) == 0);
        CHECK(why.find(c.says) != std::string::npos);
    }
    CHECK(refusal({{"window", 3u}, {"mask", "custom"}}).empty());  // the tensor holds the window
}

TEST_CASE("dump config: mask tensors read back as masks, bad ones refused naming the tensor") {
    Dump d = dump_with(nlohmann::json::object());
    Tensor m(Shape{1, 3, 3});
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j <= i; ++j) m.at({0, i, j}) = 1.0f;  // causal
    d.tensors["mask"] = m;
    DumpMasks got = read_dump_masks(d, 2, 1, 3, 3);
    REQUIRE(got.allowed.has_value());
    CHECK_FALSE(got.additive.has_value());
    CHECK(got.allowed->row(1, 0, 3).allowed(2, 1));
    CHECK_FALSE(got.allowed->row(1, 0, 3).allowed(0, 1));

    auto refusal_of = [](const Dump& bad) {
        try {
            read_dump_masks(bad, 2, 1, 3, 3);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    Dump two = d;
    two.tensors["mask"].at({0, 2, 2}) = 2.0f;
    CHECK(refusal_of(two) == "tensor mask: must hold 0 (masked) or 1 (may attend), got mask[0, 2, 2] = 2");
    Dump wide = d;
    wide.tensors["mask"] = Tensor(Shape{1, 3, 4});
    CHECK(refusal_of(wide).rfind("tensor mask: has shape [1, 3, 4], expected [2, 3, 3]", 0) == 0);
    Dump nan = d;
    nan.tensors["additive_mask"] = Tensor(Shape{2, 3, 3});
    nan.tensors["additive_mask"].at({1, 0, 0}) = NAN;
    CHECK(refusal_of(nan).rfind("tensor additive_mask: must hold finite values or -inf, got additive_mask[1, 0, 0]",
                                0) == 0);
}
