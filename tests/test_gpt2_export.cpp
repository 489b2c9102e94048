// attn train --export-gpt2: the tiny Transformer written as a GPT-2 folder gives the same
// logits through Gpt2Model (the reference ops) as the checkpoint of the same run through
// TrainableStack (the training fast path), its vocabulary spells the task's tokens, a
// saved folder reads back unchanged, and what cannot be a GPT-2 is refused before training.
//
// Tolerance: max |gpt2 - tiny| <= 1e-4 x (1 + max |tiny|) over the (T, V) logits: the same
// float32 weights, two implementations that sum in different orders (blocked GEMMs against
// plain loops) through two or three LayerNorms and softmaxes, a few ulps of logits of ~10.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/io/dump.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/model/gpt2.hpp"
#include "attn/train/checkpoint.hpp"
#include "attn/train/tasks.hpp"
#include "gpt2_test_util.hpp"
#include "test_util.hpp"

namespace {

using attn::test::run_attn;

struct Exported {
    attn::Checkpoint ck;
    attn::Gpt2Model g;
    attn::BpeTokenizer tok;
    std::string dir;
};

Exported train_and_export(const std::string& tag, const std::string& args) {
    const std::string dir = attn::test::temp_dir(tag);
    const auto r = run_attn(args + " -q --save " + dir + "/ck.safetensors --export-gpt2 " + dir + "/gpt2");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    const attn::Gpt2Files files = attn::locate_gpt2(dir + "/gpt2");
    const attn::Gpt2Config config = attn::read_gpt2_config(files);
    return {attn::load_checkpoint(dir + "/ck.safetensors"), attn::Gpt2Model::load(files),
            attn::load_gpt2_tokenizer(files, config), dir};
}

// max |a - b| over the logits of one row of ids, relative to 1 + max |tiny|
double logit_gap(Exported& e, const std::vector<int32_t>& ids) {
    const int64_t T = static_cast<int64_t>(ids.size());
    const attn::Tensor tiny = e.ck.model.logits(ids.data(), 1, T, 1);  // (1, T, V)
    const attn::StackOutput out = e.g.forward(ids);                    // (T, V)
    REQUIRE(tiny.numel() == out.logits.numel());
    double gap = 0, scale = 0;
    for (size_t i = 0; i < tiny.data.size(); ++i) {
        gap = std::max(gap, static_cast<double>(std::fabs(tiny.data[i] - out.logits.data[i])));
        scale = std::max(scale, static_cast<double>(std::fabs(tiny.data[i])));
    }
    return gap / (1.0 + scale);
}

}  // namespace

TEST_CASE("export gpt2: an attention-only induction model gives the checkpoint's logits and attention") {
    Exported e = train_and_export("export-ind", "train --task induction --steps 40 --seed 3");
    const attn::Gpt2Config& c = e.g.config;
    CHECK(c.n_layer == 2);
    CHECK(c.n_inner == 1);  // no MLP: a zero MLP of width 1
    CHECK(c.vocab_size == 64);
    CHECK(!e.g.stack.config.tied_head);
    CHECK(e.g.stack.lm_head.shape ==
          attn::Shape{64, e.g.config.n_embd});  // the tiny Transformer's head is its own matrix
    // a row of the task's own eval data
    attn::TaskOptions to;
    to.symbols = 64;
    to.seq = 32;
    const attn::Task task(attn::TaskKind::Induction, to);
    const attn::TaskBatch b = task.batch(1, 3, attn::DataSplit::Eval, 0);
    const std::vector<int32_t> ids(b.tokens.begin(), b.tokens.begin() + 32);
    CHECK(logit_gap(e, ids) <= 1e-4);
    // the attention weights of both, layer by layer (1, H, T, T)
    (void)e.ck.model.logits(ids.data(), 1, 32, 1);
    const auto& tiny_w = e.ck.model.attention_weights();
    const attn::StackOutput out = e.g.forward(ids);
    for (size_t l = 0; l < 2; ++l) {
        double gap = 0;
        for (size_t i = 0; i < tiny_w[l].data.size(); ++i)
            gap = std::max(gap, static_cast<double>(std::fabs(tiny_w[l].data[i] - out.attentions[l].data[i])));
        CHECK(gap <= 1e-5);
    }
    // the vocabulary spells symbol s as kSymbolAlphabet[s], one byte a token
    for (int32_t id = 0; id < 64; ++id) CHECK(e.tok.encode(std::string(1, attn::kSymbolAlphabet[id])).ids ==
                                              std::vector<int32_t>{id});
    CHECK(e.tok.encode("abcXYZ09").ids == std::vector<int32_t>{0, 1, 2, 49, 50, 51, 52, 61});
    // provenance: in config.json and in the weights' metadata, with the command that made it
    const nlohmann::json j = nlohmann::json::parse(attn::read_file(e.dir + "/gpt2/config.json"));
    CHECK(j.at("attn").at("attn.train.seed") == "3");
    CHECK(j.at("attn").at("attn.command").get<std::string>().find("train --task induction --steps 40") !=
          std::string::npos);
    const attn::SafeTensors st = attn::SafeTensors::load(e.dir + "/gpt2/model.safetensors");
    CHECK(st.metadata().at("format") == "pt");
    CHECK(st.metadata().at("attn.task") == "induction");
    std::filesystem::remove_all(e.dir);
}

TEST_CASE(
    "export gpt2: a chars model with MLPs gives the checkpoint's logits, and its vocabulary is the corpus bytes") {
    Exported e = train_and_export(
        "export-chars", "train --task chars --seq 24 --d-model 32 --heads 2 --layers 2 --steps 30 --seed 1");
    CHECK(e.g.config.n_inner == 128);
    const std::string text = "When shall we three meet again";
    const attn::BpeEncoding enc = e.tok.encode(text);
    REQUIRE(enc.ids.size() == text.size());  // no merges: one token a byte
    const std::vector<int32_t> ids(enc.ids.begin(), enc.ids.begin() + 24);
    CHECK(logit_gap(e, ids) <= 1e-4);
    CHECK(e.tok.decode(enc.ids) == text);
    // a byte Macbeth never uses is refused by name
    CHECK_THROWS_WITH_AS(e.tok.encode("~"), doctest::Contains("byte 0x7e ('~')"), attn::InputError);
    // written again from what was loaded: the same files, byte for byte
    attn::save_gpt2_folder(e.dir + "/again", e.g, [&] {
        std::vector<std::string> t;
        for (int32_t id = 0; id < static_cast<int32_t>(e.tok.vocab_size()); ++id) t.push_back(e.tok.decode({id}));
        return t;
    }(), attn::SafeTensors::load(e.dir + "/gpt2/model.safetensors").metadata());
    for (const char* f : {"model.safetensors", "vocab.json", "merges.txt"})
        CHECK_MESSAGE(attn::read_file(e.dir + "/again/" + f) == attn::read_file(e.dir + "/gpt2/" + f), f);
    std::filesystem::remove_all(e.dir);
}

TEST_CASE("export gpt2: what a GPT-2 cannot hold is refused before training, exit 2") {
    const std::string dir = attn::test::temp_dir("export-refuse");
    const std::string out = " --steps 1 -q --export-gpt2 " + dir + "/g";
    struct Case {
        std::string args, msg;
    };
    for (const Case& k : std::vector<Case>{
             {"train --task copy", "--export-gpt2: task copy has the token 'SEP', which no byte spells"},
             {"train --task induction --symbols 95", "task induction has the token 's94'"},
             {"train --task distance --arch encoder", "--export-gpt2: a GPT-2 is a decoder"},
             {"train --task induction --pos sinusoidal", "--export-gpt2: a GPT-2 has learned positions"},
             {"train --task induction --act relu", "GELU"},
             {"train --task induction --scale none", "--export-gpt2: a GPT-2 scales scores by 1/sqrt(Dk)"},
             {"train --task induction --d-k 8", "Dk = Dv = D / H"},
         }) {
        const auto r = run_attn(k.args + out);
        CHECK_MESSAGE(r.code == 2, k.args, r.out);
        CHECK_MESSAGE(r.out.find(k.msg) != std::string::npos, k.args, r.out);
        CHECK_MESSAGE(std::count(r.out.begin(), r.out.end(), '\n') == 1, r.out);
        CHECK(!std::filesystem::exists(dir + "/g"));
    }
    attn::write_file_atomic(dir + "/file", "x");
    const auto r = run_attn("train --task induction --steps 1 -q --export-gpt2 " + dir + "/file");
    CHECK(r.code == 2);
    CHECK(r.out.find("--export-gpt2: '" + dir + "/file' is a file") != std::string::npos);
    // a folder that cannot be made: refused before the first step, nothing made
    const auto r2 = run_attn("train --task induction --steps 1 -q --export-gpt2 " + dir + "/file/sub");
    CHECK(r2.code == 2);
    CHECK_MESSAGE(r2.out.find("--export-gpt2: cannot write into") != std::string::npos, r2.out);
    std::filesystem::remove_all(dir);
}

// The decoders attn ships (data/decoders) against transformers' GPT2LMHeadModel on the texts
// scripts/check-shipped-decoders.py ran: the same ids from attn's tokenizer, logits within
// 1e-4 of the logit scale (the tolerance of the parity tests in test_gpt2.cpp).
TEST_CASE("export gpt2: the shipped decoders give transformers' ids and logits") {
    const attn::SafeTensors ref =
        attn::SafeTensors::load(attn::test::source_path("tests/fixtures/shipped-decoders.safetensors"));
    const nlohmann::json texts = nlohmann::json::parse(ref.metadata().at("texts"));
    REQUIRE(texts.size() == 2);
    for (const auto& [name, list] : texts.items()) {
        const attn::Gpt2Files files = attn::locate_gpt2(attn::test::source_path("data/decoders/" + name));
        const attn::Gpt2Config config = attn::read_gpt2_config(files);
        const attn::BpeTokenizer tok = attn::load_gpt2_tokenizer(files, config);
        const attn::Gpt2Model m = attn::Gpt2Model::load(files);
        for (size_t i = 0; i < list.size(); ++i) {
            const std::string key = name + "." + std::to_string(i);
            const std::vector<int32_t> ids = tok.encode(list[i].get<std::string>()).ids;
            const std::vector<int32_t> want = attn::test::int64_ids(ref, key + ".ids");
            CHECK_MESSAGE(ids == want, key);
            const attn::Tensor logits =
                ref.to_float(key + ".logits", {static_cast<int64_t>(want.size()), config.vocab_size});
            const attn::StackOutput out = m.forward(want, {false, false});
            double gap = 0, scale = 0;
            for (size_t k = 0; k < logits.data.size(); ++k) {
                gap = std::max(gap, static_cast<double>(std::fabs(logits.data[k] - out.logits.data[k])));
                scale = std::max(scale, static_cast<double>(std::fabs(logits.data[k])));
            }
            CHECK_MESSAGE(gap <= 1e-4 * scale, key, ": max |attn - transformers| = ", gap, " of ", scale);
        }
    }
}
