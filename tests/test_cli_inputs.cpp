// The command line around the new inputs and commands: `attn forward --input`
// in .npy and .safetensors, the rules of --mask-file, --tk/--kdim/--vdim,
// `attn decode` (the KV cache) and `attn model embed` (sentence embeddings,
// compared with sentence-transformers' encode on the committed model fixtures).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/attn.hpp"
#include "attn/io/safetensors.hpp"
#include "test_util.hpp"

using namespace attn;
using test::run_attn;

namespace {

bool one_error_line(const test::CliResult& r) {
    return r.code == 2 && r.out.rfind("attn: error: ", 0) == 0 && std::count(r.out.begin(), r.out.end(), '\n') == 1;
}

}  // namespace

TEST_CASE("forward --input: .npy (x alone) and .safetensors (named tensors, config in the metadata)") {
    const std::string dir = test::temp_dir("inputs");
    const Dump golden = read_dump_file(test::source_path("tests/fixtures/golden/pad_dk_ne_dv.json"));
    // .safetensors: every tensor of the golden fixture, its config as metadata: PyTorch's out again
    std::vector<std::pair<std::string, Tensor>> named;
    for (const char* n : {"x", "W_q", "b_q", "W_k", "b_k", "W_v", "b_v", "W_o", "b_o"})
        named.emplace_back(n, golden.tensors.at(n));
    nlohmann::json cfg = golden.config;
    cfg.erase("generator");
    save_safetensors(dir + "/layer.safetensors", named, {{"config", cfg.dump()}});
    test::CliResult r = run_attn("forward --input " + dir + "/layer.safetensors --dump " + dir + "/st.json");
    INFO(r.out);
    REQUIRE(r.code == 0);
    const Dump st = read_dump_file(dir + "/st.json");
    CHECK(max_abs_diff(st.tensors.at("out"), golden.tensors.at("out")) <= 1e-5);
    CHECK(st.config["heads"] == 4);
    CHECK(st.config["mask"] == "pad:7,3,5");
    // .npy: x of shape (B, T, D), and (T, D) read as B = 1; the weights from --seed as for any run
    save_npy(dir + "/x.npy", golden.tensors.at("x"));
    r = run_attn("forward --input " + dir + "/x.npy --heads 4 --dump " + dir + "/npy.json");
    REQUIRE(r.code == 0);
    Dump json_in;
    json_in.tensors["x"] = golden.tensors.at("x");
    write_file_atomic(dir + "/x.json", dump_to_string(json_in));
    r = run_attn("forward --input " + dir + "/x.json --heads 4 --dump " + dir + "/json.json");
    REQUIRE(r.code == 0);
    CHECK(read_dump_file(dir + "/npy.json").tensors.at("out").data ==
          read_dump_file(dir + "/json.json").tensors.at("out").data);
    save_npy(dir + "/x2.npy", Tensor::from({3, 4}, std::vector<float>(12, 0.5f)));
    r = run_attn("forward --input " + dir + "/x2.npy --dump " + dir + "/x2.json");
    REQUIRE(r.code == 0);
    CHECK(read_dump_file(dir + "/x2.json").tensors.at("x").shape == Shape{1, 3, 4});
    // refusals: one line naming the option and the file
    write_file_atomic(dir + "/bool.npy", npy_bool_to_string({2, 2}, {1, 0, 0, 1}));
    save_npy(dir + "/x4.npy", Tensor(Shape{1, 1, 2, 2}));
    std::string fortran = read_file(test::source_path("tests/fuzz/corpus/npy/seed-fortran"));
    write_file_atomic(dir + "/fortran.npy", fortran);
    for (const auto& [file, says] :
         {std::pair<std::string, std::string>{"bool.npy", "a boolean array ('|b1') cannot be x"},
          {"x4.npy", "must be (B, T, D) or (T, D)"},
          {"fortran.npy", "fortran_order is True"},
          {"missing.npy", "missing.npy"}}) {
        r = run_attn("forward --input " + dir + "/" + file);
        INFO(r.out);
        CHECK(one_error_line(r));
        CHECK(r.out.find("--input: ") != std::string::npos);
        CHECK(r.out.find(says) != std::string::npos);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("forward --mask-file and cross-attention: the rules, each a one-line error") {
    const std::string dir = test::temp_dir("maskrules");
    save_npy(dir + "/m55.npy", Tensor(Shape{5, 5}));
    save_npy(dir + "/m66.npy", Tensor(Shape{6, 6}));
    save_npy(dir + "/m3.npy", Tensor(Shape{3, 6, 6}));
    save_npy(dir + "/nan.npy", Tensor::from({1, 2}, {0.0f, NAN}));
    save_npy(dir + "/rowinf.npy", Tensor::from({2, 2}, {0.0f, 0.0f, -INFINITY, -INFINITY}));
    write_file_atomic(dir + "/two.npy", std::string("\x93NUMPY\x01\x00", 8) + "x");
    Dump both;
    both.tensors["mask"] = Tensor(Shape{6, 6}, 1.0f);
    both.tensors["additive_mask"] = Tensor(Shape{6, 6});
    write_file_atomic(dir + "/both.json", dump_to_string(both));
    Dump notbool;
    notbool.tensors["mask"] = Tensor(Shape{6, 6}, 2.0f);
    write_file_atomic(dir + "/notbool.json", dump_to_string(notbool));
    struct Case {
        std::string args, says;
    };
    const Case cases[] = {
        {"--mask-file " + dir + "/m55.npy", "does not fit the scores [B, H, Tq, Tk] = [2, 1, 6, 6]"},
        {"--mask-file " + dir + "/m3.npy", "the additive mask of shape [3, 6, 6] does not fit"},
        {"--mask-file " + dir + "/nan.npy --seq 1 --tk 2", "holds nan at flat index 1"},
        {"--mask-file " + dir + "/two.npy", "not a .npy file attn reads"},
        {"--mask-file " + dir + "/both.json", "exactly one tensor named mask"},
        {"--mask-file " + dir + "/notbool.json", "the boolean mask holds 2"},
        {"--mask-file " + dir + "/m66.npy --heads 2 --impl cuda", ""},
        {"--tk 4 --backward", "--backward: runs on self-attention only"},
        {"--tk 0", "--tk"},
        {"--tk 3 --mask pad:4,2", "--mask"},
    };
    for (const Case& c : cases) {
        const test::CliResult r = run_attn("forward " + c.args);
        INFO(c.args << " -> " << r.out);
        CHECK(one_error_line(r));
        CHECK(r.out.find(c.says) != std::string::npos);
    }
    // a good --mask-file [T, T] combined with --mask causal; cross-attention shapes in the trace
    test::CliResult r = run_attn("forward --mask causal --mask-file " + dir + "/m66.npy");
    CHECK(r.code == 0);
    // a row whose every key gets -inf added is fully masked: zero weights (PyTorch: NaN), as a boolean mask gives
    r = run_attn("forward --seq 2 --mask-file " + dir + "/rowinf.npy --dump " + dir + "/rowinf.json");
    REQUIRE(r.code == 0);
    const Tensor w = read_dump_file(dir + "/rowinf.json").tensors.at("weights");
    CHECK(w.at({0, 0, 1, 0}) == 0.0f);
    CHECK(w.at({0, 0, 1, 1}) == 0.0f);
    CHECK(w.at({0, 0, 0, 0}) + w.at({0, 0, 0, 1}) == doctest::Approx(1.0));
    r = run_attn("forward --tq 3 --tk 5 --kdim 7 --vdim 9 --heads 2 --d-model 8 --trace");
    INFO(r.out);
    REQUIRE(r.code == 0);
    for (const char* line :
         {"x_kv = key/value input (another sequence)", "x_v = value input", "[2, 5, 7]", "[2, 5, 9]",
          "weights = softmax(masked, dim=-1)", "[2, 2, 3, 5]", "cross-attention: Tk=5 kdim=7 vdim=9"})
        CHECK(r.out.find(line) != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("attn decode: the cache grows one row per step and every step equals the full causal pass") {
    test::CliResult r = run_attn("decode --steps 6 --heads 4 --d-model 16 --layers 3 --json");
    REQUIRE(r.code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["equal_to_full_pass"] == true);
    REQUIRE(j["steps"].size() == 6);
    for (int t = 0; t < 6; ++t) {
        CHECK(j["steps"][t]["cache_k_shape"] == std::vector<int64_t>{1, 4, t + 1, 4});
        CHECK(j["steps"][t]["cache_bytes"].get<double>() == 4.0 * 3 * 1 * 4 * (t + 1) * (4 + 4));
        CHECK(j["steps"][t]["max_abs_diff_per_layer"].size() == 3);
    }
    CHECK(j["max_abs_diff"].get<double>() < 1e-5);
    // H_kv in 4, 2, 1: the bytes shrink by H / H_kv
    REQUIRE(j["bytes_at_T_by_kv_heads"].size() == 3);
    CHECK(j["bytes_at_T_by_kv_heads"][0]["bytes"].get<double>() ==
          4 * j["bytes_at_T_by_kv_heads"][2]["bytes"].get<double>());
    r = run_attn("decode --steps 3 --trace");
    REQUIRE(r.code == 0);
    CHECK(r.out.find("K0 = cache ++ (x_t·W_kᵀ + b_k)") != std::string::npos);
    CHECK(r.out.find("[1, 4, 3, 4]") != std::string::npos);
    for (const char* bad : {"decode --steps 0", "decode --heads 3", "decode --trace --json", "decode --steps 2000"}) {
        CAPTURE(bad);
        CHECK(one_error_line(run_attn(bad)));
    }
}

TEST_CASE("attn model embed: equals sentence-transformers' encode within 1e-5, batches equal single sentences "
          "(skipped without the model)") {
    if (!test::model_or_skip()) return;
    std::ifstream in(test::source_path("tests/fixtures/model/encoder.json"));
    const nlohmann::json fx = nlohmann::json::parse(in);
    const std::string dir = test::temp_dir("embed");
    {
        std::ofstream f(dir + "/s.txt");
        for (const auto& s : fx["sentences"]) f << s["text"].get<std::string>() << "\n";
    }
    const size_t N = fx["sentences"].size();
    // the JSON has stdout; the text goes to stderr, dropped here
    std::string cmd = "'";  // built by appending: GCC 12 warns (-Wrestrict, falsely) on "'" + std::string(...)
    cmd.append(ATTN_BINARY).append("' model embed --file ").append(dir).append("/s.txt --json - --npy ");
    cmd.append(dir).append("/e.npy 2>/dev/null");
    test::CliResult r = test::run_shell(cmd);
    INFO(r.out.substr(0, 400));
    REQUIRE(r.code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    REQUIRE(j["sentences"].size() == N);
    double worst = 0;
    for (size_t s = 0; s < N; ++s) {
        const auto got = j["sentences"][s]["embedding"].get<std::vector<double>>();
        const auto ref = fx["sentences"][s]["embedding"].get<std::vector<double>>();
        REQUIRE(got.size() == ref.size());
        for (size_t d = 0; d < got.size(); ++d) worst = std::max(worst, std::fabs(got[d] - ref[d]));
        CHECK(j["sentences"][s]["tokens"] == fx["sentences"][s]["ids"].size());
    }
    MESSAGE("attn model embed vs sentence-transformers encode(normalize_embeddings=True): max abs " << worst);
    CHECK(worst <= 1e-5);
    const NpyArray npy = read_npy_file(dir + "/e.npy");
    REQUIRE(npy.values.shape == Shape{static_cast<int64_t>(N), 384});
    for (size_t s = 0; s < N; ++s)
        for (size_t d = 0; d < 384; ++d)
            REQUIRE(npy.values.data[s * 384 + d] == j["sentences"][s]["embedding"][d].get<float>());
    // batches of 1 and of 3 give the embeddings of the one batch of 7, to float rounding
    for (const char* batch : {"1", "3"}) {
        r = run_attn("model embed --batch " + std::string(batch) + " --file " + dir + "/s.txt --npy " + dir + "/b.npy");
        REQUIRE(r.code == 0);
        const Tensor b = read_npy_file(dir + "/b.npy").values;
        const double diff = max_abs_diff(b, npy.values);
        MESSAGE("--batch " << std::string(batch) << " vs one batch of " << N << ": max abs " << diff);
        CHECK(diff <= 1e-6);
    }
    // too long: cut to the model's 256 with a note (as sentence-transformers), or refused naming the line with
    // --no-truncate; --max-tokens up to the 512 positions
    {
        std::ofstream f(dir + "/long.txt");
        std::string words;
        for (int k = 0; k < 300; ++k) words += "word ";
        f << "short\n" << words << "\n";
    }
    r = run_attn("model embed --no-truncate --file " + dir + "/long.txt");
    CHECK(one_error_line(r));
    CHECK(r.out.find("long.txt: line 2: is 302 tokens long, more than the limit of 256") != std::string::npos);
    r = run_attn("model embed --file " + dir + "/long.txt --json -");
    CHECK(r.code == 0);
    CHECK(r.out.find("attn: note: 1 of 2 text(s) cut to 256 tokens (the model's max_seq_length)") != std::string::npos);
    r = run_attn("model embed --max-tokens 8 --file " + dir + "/long.txt --json -");
    CHECK(r.out.find("2 of 2 text(s) cut to 8 tokens (--max-tokens)") == std::string::npos);  // "short" is 3 tokens
    CHECK(r.out.find("1 of 2 text(s) cut to 8 tokens (--max-tokens)") != std::string::npos);
    r = run_attn("model embed --max-tokens 512 --file " + dir + "/long.txt --npy " + dir + "/l.npy");
    CHECK(r.code == 0);
    for (const std::string bad :
         {"model embed --max-tokens 513 --text a", "model embed", "model embed --text a --file x",
          "model embed --file /nonexistent/f.txt", "model embed --text a --json - --npy -"}) {
        CAPTURE(bad);
        CHECK(one_error_line(run_attn(bad)));
    }
    std::filesystem::remove_all(dir);
}
