// The strict safetensors writer (attn/io/safetensors.hpp) and TrainableStack checkpoints
// (attn/train/checkpoint.hpp): round trips, the layout rules, and refusals that name
// the file and the tensor.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/train/checkpoint.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using attn::Tensor;

namespace {

std::string tmp_path(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("attn_test_ckpt_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    return (dir / name).string();
}

attn::ModelConfig small() {
    attn::ModelConfig c;
    c.vocab = 9;
    c.max_seq = 8;
    c.d_model = 12;
    c.heads = 3;
    c.layers = 2;
    c.causal = false;
    c.scale.kind = attn::ScaleKind::Cosine;
    c.scale.value = 0.25f;
    c.dropout = 0.1f;
    c.act = attn::Activation::Relu;
    c.init.kind = attn::InitKind::Normal;
    c.init.std = 0.05f;
    return c;
}

std::string error_of(const std::string& path) {
    try {
        (void)attn::load_checkpoint(path);
    } catch (const attn::InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("safetensors writer: sorted names, 8-byte aligned data, read back by the reader") {
    const Tensor a = attn::test::randn({2, 3}, 1), b = attn::test::randn({5}, 2), e({0, 4});
    const std::string bytes = attn::safetensors_to_string({{"zeta", a}, {"alpha", b}, {"mid", e}}, {{"k", "v"}});
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    CHECK((8 + n) % 8 == 0);
    const std::string header = bytes.substr(8, n);
    CHECK(header.find("\"alpha\"") < header.find("\"mid\""));
    CHECK(header.find("\"mid\"") < header.find("\"zeta\""));
    const attn::SafeTensors st = attn::SafeTensors::parse(bytes, "mem");
    CHECK(st.info("alpha").begin == 0);  // data in name order
    CHECK(st.info("zeta").begin == 20);
    CHECK(st.to_float("zeta").data == a.data);
    CHECK(st.to_float("alpha").data == b.data);
    CHECK(st.to_float("mid").shape == attn::Shape{0, 4});
    CHECK(st.metadata().at("k") == "v");
    CHECK_THROWS_WITH_AS(attn::safetensors_to_string({{"x", a}, {"x", b}}), doctest::Contains("'x' appears twice"),
                         attn::InputError);
    CHECK_THROWS_AS(attn::safetensors_to_string({{"", a}}), attn::InputError);
    CHECK_THROWS_AS(attn::safetensors_to_string({{"__metadata__", a}}), attn::InputError);
    Tensor bad = a;
    bad.shape = {4, 4};
    CHECK_THROWS_WITH_AS(attn::safetensors_to_string({{"bad", bad}}), doctest::Contains("[4, 4]"), attn::InputError);
    // save_safetensors: the same bytes, written whole
    const std::string p = tmp_path("w.safetensors");
    attn::save_safetensors(p, {{"zeta", a}, {"alpha", b}, {"mid", e}}, {{"k", "v"}});
    CHECK(attn::read_file(p) == bytes);
}

TEST_CASE("checkpoint: save and load give the same model, config and metadata") {
    attn::TrainableStack m(small());
    m.init(4);
    const std::string p = tmp_path("model.safetensors");
    attn::save_checkpoint(p, m, {{"task", "recall"}, {"step", "12"}});
    attn::Checkpoint ck = attn::load_checkpoint(p);
    CHECK(ck.metadata.at("task") == "recall");
    CHECK(ck.metadata.at("format") == "attn-tiny-transformer");
    CHECK(attn::config_to_json(ck.model.config()) == attn::config_to_json(m.config()));
    auto a = m.params(), b = ck.model.params();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].name == b[i].name);
        CHECK(a[i].value->data == b[i].value->data);
    }
    // the reloaded model computes the same logits
    std::vector<int32_t> tok = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(m.logits(tok.data(), 1, 8, 1).data == ck.model.logits(tok.data(), 1, 8, 1).data);
    // and the file is a plain safetensors file for the rest of attn
    const attn::SafeTensors st = attn::SafeTensors::load(p);
    CHECK(st.has("blocks.1.attn.q_proj.weight"));
    CHECK_FALSE(st.has("blocks.0.attn.log_tau"));
}

TEST_CASE("checkpoint: a learned cosine temperature is saved, reloaded and required") {
    attn::ModelConfig c = small();
    c.learn_temperature = true;
    attn::TrainableStack m(c);
    m.init(4);
    for (auto& p : m.params())
        if (p.name == "blocks.1.attn.log_tau") p.value->data[0] = -0.75f;  // as if trained
    const std::string p = tmp_path("tau.safetensors");
    attn::save_checkpoint(p, m);
    attn::Checkpoint ck = attn::load_checkpoint(p);
    CHECK(ck.model.config().learn_temperature);
    bool found = false;
    for (auto& q : ck.model.params())
        if (q.name == "blocks.1.attn.log_tau") {
            found = true;
            CHECK(q.value->data[0] == -0.75f);
        }
    CHECK(found);
    std::vector<int32_t> tok = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(m.logits(tok.data(), 1, 8, 1).data == ck.model.logits(tok.data(), 1, 8, 1).data);
    // a file without the temperatures of its config is refused, naming the tensor
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (auto& q : m.params())
        if (q.name != "blocks.0.attn.log_tau") tensors.emplace_back(q.name, *q.value);
    const std::string cut = tmp_path("tau_cut.safetensors");
    attn::save_safetensors(cut, tensors,
                           {{"format", "attn-tiny-transformer"}, {"attn.config", attn::config_to_json(m.config())}});
    CHECK(error_of(cut).find("blocks.0.attn.log_tau") != std::string::npos);
}

TEST_CASE("checkpoint: a file that does not match its config is refused, naming file and tensor") {
    attn::TrainableStack m(small());
    m.init(4);
    std::vector<std::pair<std::string, Tensor>> ts;
    for (auto& p : m.params()) ts.emplace_back(p.name, *p.value);
    const std::map<std::string, std::string> meta = {{"attn.config", attn::config_to_json(m.config())}};

    auto with = [&](const std::string& file, std::vector<std::pair<std::string, Tensor>> t,
                    std::map<std::string, std::string> md) {
        const std::string p = tmp_path(file);
        attn::save_safetensors(p, t, md);
        return p;
    };
    // a misshapen tensor
    auto t1 = ts;
    t1[3].second = Tensor({13});
    std::string p = with("shape.safetensors", t1, meta);
    std::string e = error_of(p);
    CHECK(e.find(p) == 0);
    CHECK(e.find("'" + t1[3].first + "' has shape [13]") != std::string::npos);
    // a missing tensor
    auto t2 = ts;
    const std::string gone = t2.back().first;
    t2.pop_back();
    p = with("missing.safetensors", t2, meta);
    CHECK(error_of(p).find("'" + gone + "' is missing") != std::string::npos);
    // an extra tensor
    auto t3 = ts;
    t3.emplace_back("blocks.2.ln1.weight", Tensor({12}));
    p = with("extra.safetensors", t3, meta);
    CHECK(error_of(p).find("'blocks.2.ln1.weight' is not part of the model") != std::string::npos);
    // no config, a bad config
    p = with("noconfig.safetensors", ts, {});
    CHECK(error_of(p).find("not an attn checkpoint") != std::string::npos);
    auto bad = meta;
    bad["attn.config"] = "{\"vocab\": 9}";
    p = with("badconfig.safetensors", ts, bad);
    CHECK(error_of(p).find("has no 'max_seq'") != std::string::npos);
    bad["attn.config"] = attn::config_to_json(m.config());
    bad["attn.config"].replace(bad["attn.config"].find("\"heads\":3"), 9, "\"heads\":5");
    p = with("heads.safetensors", ts, bad);  // d_k 4 is stored, so 5 heads of 4 is a valid config, of other shapes
    CHECK(error_of(p).find("'blocks.0.attn.q_proj.weight' has shape [12, 12], the config needs [20, 12]") !=
          std::string::npos);
    bad["attn.config"].replace(bad["attn.config"].find("\"d_k\":4"), 7, "\"d_k\":0");
    p = with("heads0.safetensors", ts, bad);
    e = error_of(p);
    CAPTURE(e);
    CHECK(e.find("heads: must divide d_model") != std::string::npos);
    // an unwritable path
    CHECK_THROWS_AS(attn::save_checkpoint("/nonexistent-dir/x.safetensors", m), attn::InputError);
}
