// Tests of the GPT-2 decoder: parity with transformers' GPT2LMHeadModel on a random tiny model
// (tests/fixtures/gpt2-tiny*, made by scripts/make-gpt2-fixtures.py: 2 layers, 2 heads,
// D = 32, a 507-token vocabulary, float32 weights and the same rounded to float16 and
// bfloat16), the KV cache against the full forward, and the loader's refusals.
//
// Tolerances. Logits: max |attn - transformers| <= 1e-4 x max |transformers| over the whole
// (T, V) tensor: both sides compute in float32 in a different order (transformers' addmm
// vs attn's loops), and two layers of LayerNorm, softmax and GELU stay within a few ulps of
// the logit scale (~8). Attention weights: max |difference| <= 1e-5 (they lie in [0, 1]).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/model/gpt2.hpp"
#include "attn/model/induction.hpp"
#include "gpt2_test_util.hpp"
#include "test_util.hpp"

using attn::Gpt2Model;
using attn::Tensor;

namespace fs = std::filesystem;

namespace {

const std::string kTiny = attn::test::source_path("tests/fixtures/gpt2-tiny");

double max_abs(const float* p, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(p[i])));
    return m;
}
double max_diff(const float* a, const float* b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
    return m;
}

Gpt2Model tiny(const std::string& dir = kTiny) { return Gpt2Model::load(attn::locate_gpt2(dir)); }

// A copy of the fixture folder to break.
std::string copy_tiny(const std::string& tag) {
    const std::string d = attn::test::temp_dir(tag);
    for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt"})
        fs::copy_file(kTiny + "/" + f, d + "/" + f, fs::copy_options::overwrite_existing);
    return d;
}

std::string load_error(const std::string& dir) {
    try {
        const auto files = attn::locate_gpt2(dir);
        const auto m = Gpt2Model::load(files);
        (void)attn::load_gpt2_tokenizer(files, m.config);
    } catch (const attn::InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("gpt2: config.json of the fixture is read as transformers wrote it") {
    const auto files = attn::locate_gpt2(kTiny);
    const attn::Gpt2Config c = attn::read_gpt2_config(files);
    CHECK(c.n_layer == 2);
    CHECK(c.n_head == 2);
    CHECK(c.n_embd == 32);
    CHECK(c.n_inner == 128);  // null: 4 n_embd
    CHECK(c.n_positions == 64);
    CHECK(c.vocab_size == 507);
    CHECK(c.activation == "gelu_new");
    CHECK(c.layer_norm_epsilon == doctest::Approx(1e-5));
    CHECK(attn::folder_model_type(kTiny) == "gpt2");
    CHECK(attn::folder_model_type("/nonexistent") == "");
    CHECK(c.trained_task.empty());  // transformers wrote it: no attn provenance
    CHECK(c.trained_seq == 0);
}

TEST_CASE("gpt2: read_folder_config reads config.json once: the model_type, and a decoder's checked config") {
    const attn::FolderConfig tiny = attn::read_folder_config(kTiny);
    CHECK(tiny.model_type == "gpt2");
    REQUIRE(tiny.gpt2.has_value());
    CHECK(tiny.gpt2->n_embd == attn::read_gpt2_config(attn::locate_gpt2(kTiny)).n_embd);
    // the shipped induction model carries what attn train wrote: the task and its length
    const attn::FolderConfig ind = attn::read_folder_config(attn::test::source_path("data/decoders/induction-2l"));
    REQUIRE(ind.gpt2.has_value());
    CHECK(ind.gpt2->trained_task == "induction");
    CHECK(ind.gpt2->trained_seq == 32);
    // a BERT folder: its type, no decoder config; no folder: nothing
    const attn::FolderConfig bert = attn::read_folder_config(attn::test::source_path("tests/fixtures/st-tiny"));
    CHECK(bert.model_type == "bert");
    CHECK(!bert.gpt2.has_value());
    CHECK(attn::read_folder_config("/nonexistent").model_type.empty());
}

TEST_CASE("gpt2: logits within 1e-4 and attention within 1e-5 of transformers' GPT2LMHeadModel") {
    const Gpt2Model m = tiny();
    const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
    double worst_logit = 0, worst_attn = 0;
    for (int k = 0; k < 3; ++k) {
        CAPTURE(k);
        const auto ids = attn::test::int64_ids(ref, "ids." + std::to_string(k));
        const attn::StackOutput out = m.forward(ids);
        const Tensor want = ref.to_float("logits." + std::to_string(k));
        REQUIRE(out.logits.shape == want.shape);
        const double rel =
            max_diff(out.logits.ptr(), want.ptr(), want.data.size()) / max_abs(want.ptr(), want.data.size());
        CHECK(rel <= 1e-4);
        worst_logit = std::max(worst_logit, rel);
        REQUIRE(out.attentions.size() == 2);
        for (int l = 0; l < 2; ++l) {
            const Tensor wa = ref.to_float("attention." + std::to_string(k) + "." + std::to_string(l));  // (H, T, T)
            REQUIRE(out.attentions[static_cast<size_t>(l)].numel() == wa.numel());
            const double d = max_diff(out.attentions[static_cast<size_t>(l)].ptr(), wa.ptr(), wa.data.size());
            CHECK(d <= 1e-5);
            worst_attn = std::max(worst_attn, d);
        }
    }
    MESSAGE("max |logit diff| / max |logit| = " << worst_logit << ", max |attention diff| = " << worst_attn);
}

TEST_CASE("gpt2: float16 and bfloat16 weights load and give transformers' logits of the rounded model") {
    for (const std::string suffix : {"-f16", "-bf16"}) {
        CAPTURE(suffix);
        const std::string dir = kTiny + suffix;
        const attn::SafeTensors st = attn::SafeTensors::load(dir + "/model.safetensors");
        CHECK(std::string(attn::dtype_name(st.info("transformer.wte.weight").dtype)) ==
              (suffix == "-f16" ? "F16" : "BF16"));
        const Gpt2Model m = tiny(dir);
        const attn::SafeTensors ref = attn::SafeTensors::load(dir + "/reference.safetensors");
        const Tensor want = ref.to_float("logits.0");
        const attn::StackOutput out = m.forward(attn::test::int64_ids(ref, "ids.0"));
        REQUIRE(out.logits.shape == want.shape);
        const double rel =
            max_diff(out.logits.ptr(), want.ptr(), want.data.size()) / max_abs(want.ptr(), want.data.size());
        MESSAGE(suffix << ": max |logit diff| / max |logit| = " << rel);
        CHECK(rel <= 1e-4);
    }
}

TEST_CASE("gpt2: the KV cache gives the full forward's logits and attention, and greedy decoding matches generate()") {
    const Gpt2Model m = tiny();
    const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
    const auto ids = attn::test::int64_ids(ref, "ids.0");
    const attn::StackOutput full = m.forward(ids);
    attn::KvCache cache = m.make_cache();
    const int64_t T = static_cast<int64_t>(ids.size()), V = m.config.vocab_size, H = m.config.n_head;
    double worst = 0, worst_attn = 0;
    for (int64_t t = 0; t < T; ++t) {
        std::vector<Tensor> att;
        const Tensor logits = m.step(ids[static_cast<size_t>(t)], cache, &att);
        worst = std::max(worst, max_diff(logits.ptr(), full.logits.ptr() + t * V, static_cast<size_t>(V)));
        // this query's row of each head (1, H, 1, t+1) vs row t of the full (1, H, T, T)
        for (int64_t l = 0; l < 2; ++l)
            for (int64_t h = 0; h < H; ++h)
                worst_attn =
                    std::max(worst_attn, max_diff(att[static_cast<size_t>(l)].ptr() + h * (t + 1),
                                                  full.attentions[static_cast<size_t>(l)].ptr() + (h * T + t) * T,
                                                  static_cast<size_t>(t + 1)));
    }
    CHECK(cache.length() == T);
    CHECK(worst <= 1e-5 * max_abs(full.logits.ptr(), full.logits.data.size()));
    CHECK(worst_attn <= 1e-5);
    // greedy continuation: 12 steps, as model.generate(do_sample=False)
    const auto greedy = attn::test::int64_ids(ref, "greedy.0");
    std::vector<int32_t> got;
    Tensor logits = full.logits;  // the last row is the next token's
    int32_t next = static_cast<int32_t>(std::max_element(logits.ptr() + (T - 1) * V, logits.ptr() + T * V) -
                                        (logits.ptr() + (T - 1) * V));
    for (size_t s = 0; s < greedy.size(); ++s) {
        got.push_back(next);
        const Tensor l = m.step(next, cache);
        next = static_cast<int32_t>(std::max_element(l.ptr(), l.ptr() + V) - l.ptr());
    }
    CHECK(got == greedy);
    // past the positions
    attn::KvCache full_cache = m.make_cache();
    for (int64_t t = 0; t < m.config.n_positions; ++t) (void)m.step(0, full_cache);
    CHECK_THROWS_WITH_AS(m.step(0, full_cache), doctest::Contains("more than the model's 64 positions"),
                         attn::InputError);
}

TEST_CASE("gpt2: forward refuses no tokens, too many, and ids outside the vocabulary") {
    const Gpt2Model m = tiny();
    CHECK_THROWS_AS(m.forward({}), attn::InputError);
    CHECK_THROWS_WITH_AS(m.forward(std::vector<int32_t>(65, 1)), doctest::Contains("65 tokens"), attn::InputError);
    CHECK_THROWS_WITH_AS(m.forward({1, 507}), doctest::Contains("token id 507"), attn::InputError);
    CHECK_THROWS_AS(m.forward({-1}), attn::InputError);
}

TEST_CASE("gpt2: a broken folder is refused in one line naming the file and the rule") {
    auto write = [](const std::string& path, const std::string& text) {
        std::ofstream(path, std::ios::binary) << text;
    };
    auto edit_config = [&](const std::string& d, const std::string& from, const std::string& to) {
        std::string s = attn::read_file(d + "/config.json");
        const size_t at = s.find(from);
        REQUIRE(at != std::string::npos);
        s.replace(at, from.size(), to);
        write(d + "/config.json", s);
    };
    auto expect = [](const std::string& msg, const std::string& needle) {
        CHECK_MESSAGE(msg.find(needle) != std::string::npos, "message: " << msg << "\nwanted: " << needle);
        CHECK(msg.find('\n') == std::string::npos);
    };
    SUBCASE("missing files") {
        for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt"}) {
            const std::string d = copy_tiny("gpt2-missing");
            fs::remove(d + "/" + f);
            expect(load_error(d), std::string(f) + " is missing");
        }
        expect(load_error("/nonexistent-attn-folder"), "no model folder at '/nonexistent-attn-folder'");
    }
    SUBCASE("unknown architecture") {
        const std::string d = copy_tiny("gpt2-arch");
        edit_config(d, "\"model_type\": \"gpt2\"", "\"model_type\": \"llama\"");
        expect(load_error(d), "config.json: model_type is \"llama\", not \"gpt2\"");
    }
    SUBCASE("config values") {
        const std::pair<const char*, const char*> cases[][2] = {
            {{"\"n_head\": 2", "\"n_head\": 3"}, {"n_embd 32 is not divisible by n_head 3", ""}},
            {{"\"n_layer\": 2", "\"n_layer\": 0"}, {"\"n_layer\" = 0 is outside", ""}},
            {{"\"n_embd\": 32", "\"n_embd\": \"32\""}, {"needs an integer \"n_embd\"", ""}},
            {{"\"gelu_new\"", "\"swish\""}, {"\"activation_function\" \"swish\" is not one attn implements", ""}},
            {{"\"layer_norm_epsilon\": 1e-05", "\"layer_norm_epsilon\": 0"}, {"layer_norm_epsilon", ""}},
            {{"\"add_cross_attention\": false", "\"add_cross_attention\": true"}, {"add_cross_attention", ""}},
            {{"\"scale_attn_by_inverse_layer_idx\": false", "\"scale_attn_by_inverse_layer_idx\": true"},
             {"scale_attn_by_inverse_layer_idx", ""}},
        };
        for (const auto& c : cases) {
            CAPTURE(c[0].second);
            const std::string d = copy_tiny("gpt2-config");
            edit_config(d, c[0].first, c[0].second);
            expect(load_error(d), c[1].first);
        }
    }
    SUBCASE("wrong shapes: a config that disagrees with the weights") {
        const std::string d = copy_tiny("gpt2-shape");
        edit_config(d, "\"n_inner\": null", "\"n_inner\": 64");
        expect(load_error(d), "tensor 'transformer.h.0.mlp.c_fc.weight' has shape [32, 128], expected [32, 64]");
        const std::string d2 = copy_tiny("gpt2-layers");
        edit_config(d2, "\"n_layer\": 2", "\"n_layer\": 3");
        expect(load_error(d2), "has no tensor 'transformer.h.2.ln_1.weight'");
        const std::string d3 = copy_tiny("gpt2-fewer");
        edit_config(d3, "\"n_layer\": 2", "\"n_layer\": 1");
        expect(load_error(d3), "tensor 'transformer.h.1.");
        expect(load_error(d3), "is not part of a GPT2LMHeadModel with 1 layers");
    }
    SUBCASE("truncated safetensors") {
        const std::string d = copy_tiny("gpt2-trunc");
        const std::string bytes = attn::read_file(d + "/model.safetensors");
        write(d + "/model.safetensors", bytes.substr(0, bytes.size() - 100));
        expect(load_error(d), d + "/model.safetensors: ");
    }
    SUBCASE("bad merges and vocabulary") {
        const std::string d = copy_tiny("gpt2-merges");
        write(d + "/merges.txt", "#version: 0.2\nĠ t\nh e\nthis is bad\n");
        expect(load_error(d), d + "/merges.txt: line 4: 'this is bad' is not two tokens separated by one space");
        write(d + "/merges.txt", "Ġ t\nq z\n");
        expect(load_error(d), "merges.txt: merge 2 ('q z'): the merged token 'qz' is not in");
        write(d + "/vocab.json", "{\"a\": 0,");
        expect(load_error(d), d + "/vocab.json");
    }
    SUBCASE("a vocabulary larger than the embedding") {
        const std::string d = copy_tiny("gpt2-vocab");
        edit_config(d, "\"vocab_size\": 507", "\"vocab_size\": 500");
        // the embedding is checked first, against the config
        expect(load_error(d), "tensor 'transformer.wte.weight' has shape [507, 32], expected [500, 32]");
    }
}

TEST_CASE("gpt2: bare tensor names (no \"transformer.\" prefix) and an untied lm_head load too") {
    const attn::SafeTensors st = attn::SafeTensors::load(kTiny + "/model.safetensors");
    std::vector<std::pair<std::string, Tensor>> bare;
    for (const std::string& name : st.names())
        bare.emplace_back(name.substr(std::string("transformer.").size()), st.to_float(name));
    // the old causal-mask buffer is skipped
    bare.emplace_back("h.0.attn.bias", Tensor({1, 1, 64, 64}, 1.0f));
    const std::string d = copy_tiny("gpt2-bare");
    attn::save_safetensors(d + "/model.safetensors", bare);
    const Gpt2Model a = tiny(), b = tiny(d);
    const std::vector<int32_t> ids{10, 20, 30, 506, 7};
    CHECK(a.forward(ids).logits.data == b.forward(ids).logits.data);
    // a stored lm_head.weight: ignored while tie_word_embeddings is true (transformers ties it
    // to wte on load), read when false (here the negated embedding: the logits flip)
    Tensor neg = st.to_float("transformer.wte.weight");
    for (float& v : neg.data) v = -v;
    bare.emplace_back("lm_head.weight", neg);
    attn::save_safetensors(d + "/model.safetensors", bare);
    const attn::StackOutput oa = a.forward(ids);
    CHECK(tiny(d).forward(ids).logits.data == oa.logits.data);
    std::string cfg = attn::read_file(d + "/config.json");
    cfg.replace(cfg.find("\"tie_word_embeddings\": true"), 27, "\"tie_word_embeddings\": false");
    std::ofstream(d + "/config.json") << cfg;
    const attn::StackOutput ob = tiny(d).forward(ids);
    for (size_t i = 0; i < oa.logits.data.size(); i += 97) CHECK(ob.logits.data[i] == -oa.logits.data[i]);
    // a NaN weight is named
    bare.back().second.data[5] = NAN;
    attn::save_safetensors(d + "/model.safetensors", bare);
    CHECK_THROWS_WITH_AS(tiny(d),
                         doctest::Contains("tensor 'lm_head.weight' holds the non-finite value nan at flat index 5"),
                         attn::InputError);
}

TEST_CASE("gpt2 cli: model next and generate on the fixture, and their refusals") {
    const std::string m = "--model '" + kTiny + "'";
    const std::string prompt = " --text 'When Mary and John went to the store, John gave a drink to'";
    SUBCASE("next --json: the top token is the arg max of transformers' last logits") {
        const auto r = attn::test::run_attn("model next " + m + prompt + " --top 3 --json");
        REQUIRE_MESSAGE(r.code == 0, r.out);
        const nlohmann::json j = nlohmann::json::parse(r.out);
        REQUIRE(j.at("next").size() == 3);
        CHECK(j.at("tokens").size() == 33);
        const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
        const Tensor want = ref.to_float("logits.0");
        const float* last = want.ptr() + (want.dim(0) - 1) * want.dim(1);
        CHECK(j["next"][0]["id"].get<int64_t>() == std::max_element(last, last + want.dim(1)) - last);
        double p0 = j["next"][0]["prob"].get<double>(), p1 = j["next"][1]["prob"].get<double>();
        CHECK(p0 >= p1);
        CHECK(p0 < 1.0);
    }
    SUBCASE("generate, greedy: the ids of transformers' generate(); sampled: the same for the same seed") {
        const auto r = attn::test::run_attn("model generate " + m + prompt + " --steps 12 --json");
        REQUIRE_MESSAGE(r.code == 0, r.out);
        const nlohmann::json j = nlohmann::json::parse(r.out);
        std::vector<int32_t> got;
        for (const auto& s : j.at("steps")) got.push_back(s.at("id").get<int32_t>());
        const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
        CHECK(got == attn::test::int64_ids(ref, "greedy.0"));
        const std::string sample = "model generate " + m + " --text Fair --steps 6 --temperature 0.9 --json";
        const auto a = attn::test::run_attn(sample + " --seed 5"), b = attn::test::run_attn(sample + " --seed 5"),
                   c = attn::test::run_attn(sample + " --seed 6");
        REQUIRE(a.code == 0);
        CHECK(a.out == b.out);
        CHECK(a.out != c.out);
        const auto text = attn::test::run_attn("model generate " + m + " --text Fair --steps 3");
        CHECK(text.code == 0);
        CHECK(text.out.find("KV cache at the end: 5 tokens") != std::string::npos);
    }
    SUBCASE("attention on a decoder folder: the table, a heatmap, and --dump with transformers' weights") {
        const std::string dump = attn::test::temp_dir("gpt2-attn") + "/a.json";
        const auto r = attn::test::run_attn("model attention " + m + prompt +
                                            " --layer 1 --head 0 --no-color --dump '" + dump + "'");
        REQUIRE_MESSAGE(r.code == 0, r.out);
        CHECK(r.out.find("first    prev    self") != std::string::npos);
        CHECK(r.out.find("layer 1, head 0") != std::string::npos);
        const attn::Dump d = attn::read_dump_file(dump);
        const Tensor& got = d.tensors.at("attention");  // (L, 1, H, T, T)
        const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
        for (int64_t l = 0; l < 2; ++l) {
            const Tensor want = ref.to_float("attention.0." + std::to_string(l));
            CHECK(max_diff(got.ptr() + l * want.numel(), want.ptr(), want.data.size()) <= 1e-5);
        }
        const auto bad = attn::test::run_attn("model attention " + m + " --text x --layer 2");
        CHECK(bad.code == 2);
        CHECK_MESSAGE(bad.out.find("--layer: must be in [0, 1]") != std::string::npos, bad.out);
    }
    SUBCASE("bad input: one line, exit 2") {
        const std::pair<std::string, std::string> cases[] = {
            {"model next --model /nonexistent-attn --text x", "--model: no model folder at '/nonexistent-attn'"},
            {"model next " + m + " --text ''", "--text: gives no tokens"},
            {"model generate " + m + " --text x --steps 64", "--steps: 1 prompt tokens + 64 steps"},
            {"model generate " + m + " --text x --temperature 0.001",
             "--temperature: must be 0 (greedy) or in [0.01, 100]"},
            {"model generate " + m + " --text x --attention", "--attention: goes with --json"},
            {"model next " + m + " --text x --top 0", "--top"},
            {"model next " + m + " --text " + std::string(64 * 13 + 1, 'a'),
             "--text: is 833 bytes long, more than the model's 64 positions can hold"},
            {"model next --model '" + attn::test::source_path("tests/fixtures/model") + "' --text x", "--model: "},
        };
        for (const auto& [args, needle] : cases) {
            CAPTURE(args);
            const auto r = attn::test::run_attn(args);
            CHECK(r.code == 2);
            CHECK_MESSAGE(r.out.find(needle) != std::string::npos, r.out);
            CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
        }
        // a folder with broken merges, through the command
        const std::string d = copy_tiny("gpt2-cli");
        std::ofstream(d + "/merges.txt") << "Ġ t\nbad\n";
        const auto r = attn::test::run_attn("model next --model '" + d + "' --text x");
        CHECK(r.code == 2);
        CHECK_MESSAGE(
            r.out.find("merges.txt: line 2: 'bad' is not two tokens separated by one space") != std::string::npos,
            r.out);
    }
}

TEST_CASE("induction probe: the scores read the two diagonals, and the command reports them") {
    // (1, 2, T, T) with T = 1 + 2n, n = 3: head 0 attends to the previous token, head 1 to the
    // token after the earlier occurrence in the second copy (and to itself elsewhere)
    const int64_t n = 3, T = 1 + 2 * n;
    Tensor w({1, 2, T, T});
    for (int64_t i = 0; i < T; ++i) {
        w.data[static_cast<size_t>(i * T + std::max<int64_t>(i - 1, 0))] = 1.0f;
        w.data[static_cast<size_t>(T * T + i * T + (i >= 1 + n ? i - n + 1 : i))] = 1.0f;
    }
    const auto prev = attn::previous_token_scores(w), prefix = attn::prefix_matching_scores(w, 1, n);
    CHECK(prev[0] == doctest::Approx(1.0));
    CHECK(prev[1] == doctest::Approx(0.0));
    CHECK(prefix[0] == doctest::Approx(0.0));
    CHECK(prefix[1] == doctest::Approx(1.0));
    CHECK_THROWS_AS(attn::prefix_matching_scores(w, 1, 6), attn::ShapeError);
    const auto ids = attn::repeated_random_tokens(4, 10, 20, 7, 99);
    REQUIRE(ids.size() == 9);
    CHECK(ids[0] == 99);
    for (int k = 1; k <= 4; ++k) {
        CHECK(ids[static_cast<size_t>(k)] == ids[static_cast<size_t>(k + 4)]);
        CHECK(ids[static_cast<size_t>(k)] >= 10);
        CHECK(ids[static_cast<size_t>(k)] < 20);
    }
    CHECK(attn::repeated_random_tokens(4, 10, 20, 7, 99) == ids);
    // uniform logits: the loss is ln V
    Tensor flat({3, 5});
    CHECK(attn::next_token_loss(flat, {0, 1, 2}, 0, 2) == doctest::Approx(std::log(5.0)));

    const auto r = attn::test::run_attn("model induction --model '" + kTiny + "' --length 20 --seed 3 --json");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j.at("ids").size() == 41);
    CHECK(j.at("previous_token").size() == 2);
    // the command's scores are the library's on the model's own weights
    const Gpt2Model m = tiny();
    const auto out = m.forward(j.at("ids").get<std::vector<int32_t>>());
    CHECK(j["prefix_matching"][1][0].get<double>() ==
          doctest::Approx(attn::prefix_matching_scores(out.attentions[1], 1, 20)[0]).epsilon(1e-6));
    const auto bad = attn::test::run_attn("model induction --model '" + kTiny + "' --length 32");
    CHECK(bad.code == 2);
    CHECK_MESSAGE(bad.out.find("--length: must be in [1, 31]") != std::string::npos, bad.out);
}
