// Hostile inputs and outputs found by an adversarial run over every command, each first
// reproduced here: JSON nested 200,000 deep inside a checkpoint's metadata, --html on a GPT-2
// folder, weights no trained model has and NaN results, outputs inside one another and a run
// that fails after writing some, messages that named the wrong culprit, and memory found late.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/errors.hpp"
#include "attn/core/numeric_error.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/guards.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/model/gpt2.hpp"
#include "test_util.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

const std::string kMacbeth = test::source_path("data/decoders/macbeth-char");
const std::string kBertTiny = test::source_path("tests/fixtures/bert-tiny");

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// `attn ARGS` exits `code` with one line "attn: error: ..." holding each of `must_mention`.
void check_error(const std::string& args, int code, std::initializer_list<std::string> must_mention) {
    INFO(args);
    const auto r = test::run_attn(args);
    INFO(r.out);
    CHECK(r.code == code);
    CHECK(r.out.rfind("attn: error: ", 0) == 0);
    for (const std::string& m : must_mention) CHECK_MESSAGE(r.out.find(m) != std::string::npos, "wanted: " << m);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
}

// A copy of a GPT-2 folder (the four files), to break.
std::string copy_folder(const std::string& from, const std::string& tag) {
    const std::string d = test::temp_dir(tag);
    for (const auto& e : fs::directory_iterator(from)) fs::copy_file(e.path(), d + "/" + e.path().filename().string());
    return d;
}

// The files under `dir` (recursively), as paths relative to it.
std::vector<std::string> files_under(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); ++it)
        out.push_back(fs::relative(it->path(), dir).string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("hardening: a checkpoint whose attn.config nests 200,000 deep is refused, exit 2, not a stack overflow") {
    const std::string dir = test::temp_dir("deep-ck");
    const std::string ck = dir + "/ck.safetensors";
    const auto made =
        test::run_attn("train --task copy --steps 1 --eval-batches 1 --batch 4 --threads 1 -q --save " + ck);
    REQUIRE_MESSAGE(made.code == 0, made.out);
    const SafeTensors st = SafeTensors::load(ck);
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& n : st.names()) tensors.emplace_back(n, st.to_float(n));
    std::map<std::string, std::string> meta = st.metadata();
    std::string deep;
    for (int i = 0; i < 200'000; ++i) deep += "{\"vocab\":";
    deep += "1" + std::string(200'000, '}');
    const std::string arrays = "{\"vocab\": " + std::string(200'000, '[') + std::string(200'000, ']') + "}";
    for (const std::string& config : {deep, arrays}) {
        meta["attn.config"] = config;
        save_safetensors(ck, tensors, meta);
        check_error("train --steps 0 --eval-batches 1 --batch 4 --threads 1 -q --load " + ck, 2,
                    {ck, "nested deeper than 64 levels"});
    }
    // the one helper every reader calls: 64 levels read, 65 refused, brackets inside strings not counted
    const std::string at64 = std::string(64, '[') + std::string(64, ']'), at65 = "[" + at64 + "]";
    CHECK_NOTHROW((void)parse_json(at64, "t"));
    CHECK_THROWS_WITH_AS((void)parse_json(at65, "t"), "t: JSON nested deeper than 64 levels", InputError);
    CHECK_NOTHROW((void)parse_json("[\"" + std::string(1000, '[') + "\"]", "t"));
    CHECK_THROWS_WITH_AS((void)parse_json("[1,", "t"), doctest::Contains("t: not valid JSON"), InputError);
    fs::remove_all(dir);
}

TEST_CASE("hardening: model attention --html on a GPT-2 folder writes the page, or refuses its target in one line") {
    const std::string dir = test::temp_dir("dec-html");
    const std::string page = dir + "/out.html";
    const auto r = test::run_attn("model attention --model '" + kMacbeth + "' --text 'To be' --html " + page);
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("wrote " + page) != std::string::npos);
    REQUIRE(fs::is_regular_file(page));
    const std::string html = read_file(page);
    CHECK(html.find("<html") != std::string::npos);
    CHECK(html.find("GPT-2 decoder attention weights (causal)") != std::string::npos);
    CHECK(html.find("[CLS]") == std::string::npos);  // a decoder's notes speak of the first token, not [CLS]
    CHECK(html.find("first ") != std::string::npos);
    // a device that cannot take the page: the tables went out, then one error line, exit 2
    const auto full = test::run_attn("model attention --model '" + kMacbeth + "' --text 'To be' --html /dev/full");
    CHECK(full.code == 2);
    CHECK(full.out.ends_with("attn: error: --html: '/dev/full' cannot be written (No space left on device)\n"));
    check_error("model attention --model '" + kMacbeth + "' --text 'To be' --html " + dir, 2, {"--html", dir});
    check_error("model attention --model '" + kMacbeth + "' --text 'To be' --html -", 2, {"--html"});
    fs::remove_all(dir);
}

TEST_CASE("hardening: weights no trained model has are refused by every reader, naming the tensor and the file") {
    const std::string d = copy_folder(kMacbeth, "huge-w");
    const std::string weights = d + "/model.safetensors";
    const SafeTensors st = SafeTensors::load(weights);
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& n : st.names()) {
        Tensor t = st.to_float(n);
        if (n.ends_with("h.0.attn.c_attn.weight")) std::fill(t.data.begin(), t.data.end(), 3e38f);
        tensors.emplace_back(n, std::move(t));
    }
    save_safetensors(weights, tensors, st.metadata());
    for (const char* cmd : {"generate --steps 5", "next", "attention"})
        check_error(std::string("model ") + cmd + " --model '" + d + "' --text 'To be'", 2,
                    {weights, "h.0.attn.c_attn.weight", "holds 3e+38 at flat index 0", "|w| <= 1e+06"});
    // a NaN is named as one, the same rule
    for (auto& [n, t] : tensors)
        if (n.ends_with("h.0.attn.c_attn.weight")) std::fill(t.data.begin(), t.data.end(), NAN);
    save_safetensors(weights, tensors, st.metadata());
    check_error("model next --model '" + d + "' --text 'To be'", 2, {"holds the non-finite value nan at flat index 0"});
    // the rule itself: 1e6 read, past it refused
    CHECK_NOTHROW(check_weight_values(Tensor({2}, 1e6f), "f", "w"));
    CHECK_THROWS_WITH_AS(check_weight_values(Tensor({2}, -1.5e6f), "f", "w"),
                         "f: tensor 'w' holds -1.5e+06 at flat index 0 (weights must be finite, |w| <= 1e+06)",
                         InputError);
    fs::remove_all(d);
}

TEST_CASE("hardening: a model whose logits come out NaN is never printed as a result (NumericError, exit 1)") {
    const std::string d = copy_folder(kMacbeth, "nan-logits");
    const Gpt2Model good = Gpt2Model::load(locate_gpt2(d));
    Gpt2Model m = good;
    std::fill(m.stack.lnf_beta.data.begin(), m.stack.lnf_beta.data.end(), NAN);  // past the loader: the forward's NaN
    Gpt2GenerateOptions go;
    go.steps = 5;
    CHECK_THROWS_AS((void)gpt2_generate(m, {1, 2, 3}, go), NumericError);
    const StackOutput out = m.forward({1, 2, 3});
    CHECK_THROWS_AS((void)gpt2_loss(out.logits, {1, 2, 3}), NumericError);
    const std::vector<float> row = {0.0f, INFINITY};
    CHECK_THROWS_WITH_AS(check_finite_logits(row.data(), 2, "after the text"),
                         doctest::Contains("the model's logits after the text hold inf at token id 1"), NumericError);
    CHECK_NOTHROW((void)gpt2_generate(good, {1, 2, 3}, go));
    fs::remove_all(d);
}

TEST_CASE("hardening: train refuses an output inside the --export-gpt2 folder before any step") {
    const std::string dir = test::temp_dir("export-nest");
    const std::string d = dir + "/D";
    fs::create_directory(d);
    const std::string run =
        "train --task induction --steps 1 --eval-batches 1 --batch 4 --threads 1 -q --export-gpt2 " + d;
    check_error(run + " --save " + d + "/model.safetensors", 2, {"--save", d + "/model.safetensors", "--export-gpt2"});
    check_error(run + " --json " + d + "/run.json", 2, {"--json", "--export-gpt2"});
    check_error(run + "/ --svg " + d + "/../D/curve.svg", 2, {"--svg", "--export-gpt2"});
    CHECK(files_under(d).empty());  // refused before any work: nothing written
    // beside the folder, not in it: a run
    const auto r = test::run_attn(run + " --save " + dir + "/model.safetensors");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(files_under(d) == std::vector<std::string>{"config.json", "merges.txt", "model.safetensors", "vocab.json"});
    fs::remove_all(dir);
}

TEST_CASE("hardening: a train run that fails after writing some outputs leaves none of them") {
    const std::string dir = test::temp_dir("export-fail");
    const std::string run = "train --task induction --steps 1 --eval-batches 1 --batch 4 --threads 1 -q";
    // the JSON last, to a device that cannot take it: the export, the checkpoint and the curve go too
    check_error(run + " --export-gpt2 " + dir + "/D/a/b --save " + dir + "/ck.safetensors --svg " + dir +
                    "/c.svg --json=/dev/full",
                2, {"--json", "/dev/full"});
    CHECK(files_under(dir).empty());  // D, D/a and D/a/b were made by the run: removed too
    // an existing file is kept as it was
    write_text(dir + "/ck.safetensors", "old");
    check_error(run + " --save " + dir + "/ck.safetensors --json=/dev/full", 2, {"--json"});
    CHECK(read_file(dir + "/ck.safetensors") == "old");
    CHECK(files_under(dir) == std::vector<std::string>{"ck.safetensors"});
    fs::remove_all(dir);
}

TEST_CASE("hardening: OutputBatch holds files until commit, and removes them and its folders when not committed") {
    const std::string dir = test::temp_dir("batch");
    {
        OutputBatch b;
        create_folders(dir + "/x/y");
        write_file_atomic(dir + "/x/y/f", "1");
        write_file_atomic(dir + "/g", "2");
        CHECK(!fs::exists(dir + "/g"));  // held in its temp file
        CHECK_THROWS_AS(OutputBatch(), std::logic_error);
    }
    CHECK(files_under(dir).empty());
    write_text(dir + "/g", "old");
    {
        OutputBatch b;
        create_folders(dir + "/x/y");
        write_file_atomic(dir + "/x/y/f", "1");
        write_file_atomic(dir + "/g", "2");
        b.commit();
    }
    CHECK(read_file(dir + "/x/y/f") == "1");
    CHECK(read_file(dir + "/g") == "2");
    CHECK(files_under(dir) == std::vector<std::string>{"g", "x", "x/y", "x/y/f"});
    fs::remove_all(dir);
}

TEST_CASE("hardening: a model file that is a folder, a FIFO or a device is named for what it is, not 'missing'") {
    const std::string dir = test::temp_dir("kinds");
    for (const char* file : {"config.json", "model.safetensors", "vocab.json"}) {
        for (const char* kind : {"folder", "fifo", "zero"}) {
            CAPTURE(file);
            CAPTURE(kind);
            const std::string d = copy_folder(kMacbeth, "kind");
            const std::string p = d + "/" + file;
            fs::remove(p);
            const std::string k = kind;
            if (k == "folder") fs::create_directory(p);
            else if (k == "fifo") REQUIRE(::mkfifo(p.c_str(), 0600) == 0);
            else fs::create_symlink("/dev/zero", p);
            const std::string said = k == "folder" ? "is a folder" : "is not a regular file";
            const auto r = test::run_attn("model next --model '" + d + "' --text 'To be'");
            INFO(r.out);
            CHECK(r.code == 2);
            CHECK(r.out.find(std::string(file) + " " + said) != std::string::npos);
            CHECK(r.out.find("is missing") == std::string::npos);
            fs::remove_all(d);
        }
    }
    // a BERT folder: the same words
    const std::string b = copy_folder(kBertTiny, "kind-bert");
    fs::remove(b + "/model.safetensors");
    fs::create_directory(b + "/model.safetensors");
    check_error("model embed --model '" + b + "' --text hi", 2, {"model.safetensors is a folder"});
    fs::remove_all(b);
    fs::remove_all(dir);
}

TEST_CASE("hardening: a value from --input's config is blamed on the file, not on an option never given") {
    const std::string dir = test::temp_dir("blame");
    auto input = [&](const std::string& name, const std::string& config) {
        const std::string f = dir + "/" + name;
        write_text(f, R"({"format": "attn-dump", "version": 1, "config": )" + config +
                          R"(, "tensors": {"x": {"shape": [1, 2, 6], "data": [1,2,3,4,5,6,1,2,3,4,5,6]}}})");
        return f;
    };
    const std::string kv = input("kv.json", R"({"heads": 3, "kv_heads": 2})");
    check_error("forward --input " + kv, 2, {"--input: '" + kv + "': config.kv_heads"});
    CHECK(test::run_attn("forward --input " + kv).out.find("--kv-heads:") == std::string::npos);
    check_error("forward --input " + kv + " --kv-heads 2", 2, {"--kv-heads"});  // given: the option
    const std::string rope = input("rope.json", R"({"heads": 2, "rope": 10000})");  // Dk = 3
    check_error("forward --input " + rope, 2, {"--input: '" + rope + "': config.rope", "Dk must be even"});
    fs::remove_all(dir);
}

TEST_CASE("hardening: an empty value given through an old spelling names the option, and --heads 0.-0 is refused") {
    // the old spelling's note, then the one error line naming the option it stands for
    const auto r = test::run_attn("variance --samples 1000 --dk ''");
    CHECK(r.code == 2);
    CHECK(r.out == "attn: note: --dk is deprecated; use --d-k\nattn: error: --d-k: the value is empty\n");
    check_error("model ablate --model '" + kMacbeth + "' --text 'To be or not' --heads 0.-0", 2,
                {"--heads: '0.-0' is not a head of this model"});
    check_error("model ablate --model '" + kMacbeth + "' --text 'To be or not' --heads -0.0", 2, {"--heads"});
}

TEST_CASE("hardening: model embed and model bench refuse sizes past memory naming the option, before any work") {
    const std::string dir = test::temp_dir("embed-mem");
    const std::string lines = dir + "/lines.txt";
    {
        std::ofstream f(lines);
        for (int i = 0; i < 200'000; ++i) f << "the quick brown fox jumps over the lazy dog\n";
    }
    // 200,000 sentences of 64 floats with their --json: about 900 MB planned, over 60% of 1 GiB
    const auto e = test::run_shell("ulimit -v 1048576; '" + std::string(ATTN_BINARY) + "' model embed --model '" +
                                   kBertTiny + "' --file " + lines + " --json " + dir + "/e.json 2>&1");
    INFO(e.out);
    CHECK(e.code == 2);
    CHECK(e.out.rfind("attn: error: --file: ", 0) == 0);
    CHECK(e.out.find("RLIMIT_AS") != std::string::npos);
    CHECK(!fs::exists(dir + "/e.json"));
    // 4096 sentences of 64 tokens: the batch's activations alone are past the limit
    std::string longline;
    for (int i = 0; i < 40; ++i) longline += "the quick brown fox ";
    write_text(dir + "/long.txt", longline + "\n");
    const auto b = test::run_shell("ulimit -v 1048576; '" + std::string(ATTN_BINARY) + "' model bench --model '" +
                                   kBertTiny + "' --file " + dir + "/long.txt --batch 1,4096 --reps 1 --warmup 0 2>&1");
    INFO(b.out);
    CHECK(b.code == 2);
    CHECK(b.out.find("attn: error: --batch: a batch of 4096 sentences") != std::string::npos);  // after a warning
    CHECK(b.out.find("4096") != std::string::npos);
    fs::remove_all(dir);
}
