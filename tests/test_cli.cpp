// The CLI: bad input exits 2 with one line naming the option; nothing is
// written on error; --trace and --dump do what they say; the syntax of option
// values (app/parse.hpp).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "attn/nn/backend.hpp"
#include "parse.hpp"
#include "test_util.hpp"

using namespace attn;

static int count_lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

namespace {
struct BadInput {
    const char* args;
    const char* must_mention;
};

// Each `attn ARGS` must exit 2 with one line "attn: error: ..." that mentions the option.
void check_refused(const std::vector<BadInput>& cases) {
    for (const auto& c : cases) {
        INFO(std::string(c.args));
        const auto r = test::run_attn(c.args);
        INFO(r.out);
        CHECK(r.code == 2);
        CHECK(r.out.find(c.must_mention) != std::string::npos);
        CHECK(r.out.rfind("attn: error: ", 0) == 0);
        CHECK(count_lines(r.out) == 1);
    }
}
}  // namespace

TEST_CASE("cli: every bad input of attn forward exits 2 with a one-line message naming the option") {
    check_refused({
        {"forward --heads 3", "--heads"},                     // 16 % 3 without --d-k
        {"forward --batch 0", "--batch"},
        {"forward --seq -4", "--seq"},
        {"forward --d-model 0", "--d-model"},
        {"forward --heads 0", "--heads"},
        {"forward --mask pad:4", "--mask"},                   // count != B
        {"forward --mask pad:4,9", "--mask"},                 // 9 > T
        {"forward --mask pad:a,b", "--mask"},
        {"forward --mask pad:", "--mask"},
        {"forward --mask causal+pad:4,", "--mask"},
        {"forward --mask diagonal", "--mask"},
        {"forward --dropout 1", "--dropout"},
        {"forward --dropout -0.1", "--dropout"},
        {"forward --scale fast", "--scale"},
        {"forward --scale 0", "--scale"},
        {"forward --scale cosine:0", "--scale"},
        {"forward --scale 1e300", "--scale"},                  // inf once a float
        {"forward --scale 3.4e38", "--scale"},                 // finite, but scores times it overflow
        {"forward --scale 1e-300", "--scale"},                 // 0 once a float
        {"forward --scale cosine:1e-39", "--scale"},           // subnormal
        {"forward --init normal:1e20", "--init"},
        {"forward --fill 3.4e38", "--fill"},
        {"forward --fill nope", "--fill"},
        {"forward --fill inf", "--fill"},
        {"forward --init glorot", "--init"},
        {"forward --init normal:-1", "--init"},
        {"forward --impl quantum", "--impl"},
        {"forward --seq 2000000 --heads 16 --d-model 64", "--seq"},   // (B, H, T, T) would not fit
        {"forward --dump /nonexistent-dir/x.json", "--dump"},
        {"forward --dump /tmp", "--dump"},                        // a folder
        {"forward --heads 100000 --d-k 100000 --d-model 100000", "--heads"},  // weights would not fit
        {"forward --d-v -3", "--d-v"},
        {"forward --d-k 0", "--d-k"},                             // 0 is not "the default": leave --d-k out
        {"forward --d-v 0", "--d-v"},
        {"forward --dropout 0.1", "--train"},                     // dropout acts only with --train
        {"forward --dropout 0.99999999999 --train", "--dropout"}, // 1 as a float
        {"forward --dropout '' --train", "--dropout"},            // '' is not 0
        {"forward --heads ''", "--heads"},
        {"forward --seed ''", "--seed"},
        {"forward --input ''", "--input"},                        // '' is not "no file"
        {"forward --dump ''", "--dump"},
        {"forward --seed 18446744073709551616", "--seed"},        // 2^64: refused, not clamped
        {"forward --seq 2147483647", "--seq"},                    // activations: --seq, not --heads
        {"forward --input /tmp", "is a folder"},
        {"forward --seq 99999999999", "--seq"},
        {"forward --seed -1", "--seed"},
        {"forward --device cpu", "--device"},                     // gone: the backend names its device
        {"forward --impl tpu", "--impl"},
        {"forward --batch x", "--batch"},
        {"forward --input /nonexistent.json", "nonexistent"},
        {"forward --no-such-flag", "--no-such-flag"},
        {"froward", "did you mean 'forward'"},  // bare `attn` prints the usage: tests/test_cli_vocabulary.cpp
    });
}

TEST_CASE("cli: bad lists and numbers of bench, model and tour exit 2 with a one-line message naming the option") {
    check_refused({
        {"bench --seq 1024,,4096", "--seq"},  // CLI11's delimiter would drop the empty item
        {"bench --seq 1024,", "--seq"},
        {"bench --seq ''", "--seq"},
        {"bench --seq 0", "--seq"},
        {"bench --seq x", "--seq"},
        {"bench --seq 99999999999", "--seq"},
        {"bench --batch 0", "--batch"},
        {"bench --batch x", "--batch"},
        {"bench --heads -1", "--heads"},
        {"bench --d-k 0", "--d-k"},
        {"bench --reps 0", "--reps"},
        {"bench --warmup -1", "--warmup"},
        {"bench --threads -1", "--threads"},
        {"bench --seed -1", "--seed"},
        {"bench --seed x", "--seed"},
        {"bench --reps 257", "[1, 256]"},   // above the cap: refused with the cap, never lowered silently
        {"bench --warmup 101", "--warmup"},
        {"bench --threads 100000", "hardware threads"},
        {"bench --seq 10000000 --d-k 1", "--yes"},                 // hours of work: over the FLOP budget
        {"bench --batch 2147483647", "--batch"},                   // Q, K, V do not fit: --batch, not --seq
        {"variance --d-k 65536 --samples 100000000", "--yes"},      // over the multiply-add budget
        {"variance --d-k 65536 --samples 100000000 --yes --svg /nonexistent/x.svg", "--svg"},  // --yes lifts it
        {"tour --from 0", "--from"},
        {"tour --from 100", "--from"},                            // past the last lesson (whatever its number)
        {"tour --to 0", "--to"},
        {"tour --from 3 --to 2", "--to"},                         // before --from
        {"tour --to x", "--to"},
        {"lesson 1 --svg ''", "--svg"},
        {"view ''", "file"},
        {"view /tmp", "is a folder"},
        {"model attention --text hi --model ''", "--model"},       // '' is not "the default model"
        {"model bench --batch 5000", "--batch"},
        {"model bench --batch 1,,2", "--batch"},
        {"model bench --reps 0", "--reps"},
        {"model bench --threads -1", "--threads"},
        {"model bench --attention fast", "--attention"},
        {"model bench --gemm mkl", "--gemm"},
        {"model bench --warmup 101", "--warmup"},
        {"model bench --file /nonexistent/lines.txt", "--file"},
        {"model entropy --text hi --seed -1", "--seed"},
        {"model probe --from it@x --to animal", "--from"},
        {"model probe --from it@0 --to animal", "--from"},
        {"model probe --from it --to animal,,street", "--to"},
        {"model probe --from it --to animal --top -1", "--top"},
    });
}

TEST_CASE("cli: an --input with a non-finite value, an empty x or a size option beside it is refused naming the file") {
    const std::string dir = test::temp_dir("input");
    // x [1, 2, 2] and W_q [2, 2] of a layer D=2, H=1; each file changes one entry.
    auto write = [&](const std::string& name, const std::string& x_shape, const std::string& x,
                     const std::string& w_q) {
        std::ofstream(dir + "/" + name) << R"({"format": "attn-dump", "version": 1, "tensors": {"x": {"shape": )"
                                        << x_shape << R"(, "data": )" << x << R"(}, "W_q": {"shape": [2, 2], "data": )"
                                        << w_q << "}}}";
        return dir + "/" + name;
    };
    const std::string ok = write("ok.json", "[1, 2, 2]", "[1, 2, 3, 4]", "[1, 0, 0, 1]");
    REQUIRE(test::run_attn("forward --input " + ok).code == 0);
    const std::string nan_x = write("nan_x.json", "[1, 2, 2]", R"([1, 2, "NaN", 4])", "[1, 0, 0, 1]");
    const std::string inf_w = write("inf_w.json", "[1, 2, 2]", "[1, 2, 3, 4]", R"([1, 0, "Infinity", 1])");
    const std::string big_x = write("big_x.json", "[1, 2, 2]", "[1, 2, 3, 1e39]", "[1, 0, 0, 1]");
    const std::string empty_x = write("empty_x.json", "[0, 6, 16]", "[]", "[1, 0, 0, 1]");
    const std::string huge_x = write("huge_x.json", "[1, 2, 2]", "[1e30, 1e30, 1e30, 1e30]", "[1, 0, 0, 1]");
    check_refused({
        {("forward --input " + nan_x).c_str(), "x[0, 1, 0] = nan"},   // the tensor, the index, the value
        {("forward --input " + inf_w).c_str(), "W_q[1, 0] = inf"},
        {("forward --input " + big_x).c_str(), "big_x.json"},        // 1e39 is infinite as a float
        {("forward --input " + empty_x).c_str(), "empty_x.json': tensor x has shape [0, 6, 16]"},
        {("forward --input " + huge_x).c_str(), "overflow"},         // finite, but q.k overflows float32
        {("forward --input " + ok + " --batch 5").c_str(), "--batch: cannot be combined with --input"},
        {("forward --input " + ok + " --seq 2").c_str(), "--seq"},
        {("forward --input " + ok + " --d-model 2").c_str(), "--d-model"},
    });
    std::filesystem::remove_all(dir);
}

TEST_CASE("cli: a backend that cannot run here is one line naming --impl and the reason, exit 2") {
    int unavailable = 0;
    for (const attn::BackendInfo& row : attn::backends()) {
        std::string why;
        if (row.available(&why)) continue;
        ++unavailable;
        const auto r = test::run_attn(std::string("forward --impl ") + row.name);
        INFO(row.name << " -> " << r.out);
        CHECK(r.code == 2);
        CHECK(r.out.find(std::string("--impl: ") + row.name + " cannot run here: " + why) != std::string::npos);
        CHECK(count_lines(r.out) == 1);
    }
    if (unavailable == 0) test::skip("every backend can run here: nothing to refuse");
}

TEST_CASE("cli: --help works for the program and for forward") {
    CHECK(test::run_attn("--help").code == 0);
    const auto r = test::run_attn("forward --help");
    CHECK(r.code == 0);
    CHECK(r.out.find("--mask") != std::string::npos);
}

TEST_CASE("cli: --trace prints every step with its shape") {
    const auto r = test::run_attn("forward --trace");
    REQUIRE(r.code == 0);
    for (const char* line :
         {"x·W_qᵀ + b_q", "[2, 6, 16]", "softmax(masked, dim=-1)", "[2, 1, 6, 6]", "merged·W_oᵀ + b_o"})
        CHECK(r.out.find(line) != std::string::npos);
}

TEST_CASE("cli: --dump writes a dump that reads back and matches the config") {
    const std::string dir = test::temp_dir("cli");
    const std::string path = dir + "/out.json";
    const auto r = test::run_attn("forward --heads 2 --d-v 5 --mask causal+pad:5,6 --dump " + path);
    REQUIRE(r.code == 0);
    const Dump d = read_dump_file(path);
    CHECK(d.config["heads"] == 2);
    CHECK(d.config["d_v"] == 5);
    CHECK(d.config["mask"] == "causal+pad:5,6");
    for (const char* n : {"x", "W_q", "b_q", "W_k", "b_k", "W_v", "b_v", "W_o", "b_o", "mask", "Q", "K", "V", "scores",
                          "weights", "head_out", "merged", "out"})
        CHECK(d.tensors.count(n) == 1);
    CHECK(d.tensors.at("W_v").shape == Shape{10, 16});  // [out = H*Dv, in = D]
    CHECK(d.tensors.at("weights").shape == Shape{2, 2, 6, 6});
    CHECK(std::isinf(d.tensors.at("scores_masked").at({0, 0, 0, 5})));  // masked with -inf
    // Same seed, same bytes.
    const std::string path2 = dir + "/out2.json";
    REQUIRE(test::run_attn("forward --heads 2 --d-v 5 --mask causal+pad:5,6 --dump " + path2).code == 0);
    CHECK(read_file(path) == read_file(path2));
    // JSON in: feeding the dump back reproduces the same output.
    const std::string path3 = dir + "/out3.json";
    REQUIRE(test::run_attn("forward --heads 2 --d-v 5 --mask causal+pad:5,6 --seed 999 --input " + path + " --dump " +
                           path3)
                .code == 0);
    CHECK(max_abs_diff(read_dump_file(path3).tensors.at("out"), d.tensors.at("out")) == 0.0);
    std::filesystem::remove_all(dir);
}

TEST_CASE("cli: Python's json module reads the dump, -Infinity included (--json-nonfinite literal)") {
    if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0) {
        test::skip("no python3 with its json module");
        return;
    }
    const std::string dir = test::temp_dir("py");
    REQUIRE(test::run_attn("forward --mask causal --json-nonfinite literal --dump " + dir + "/d.json").code == 0);
    const std::string py = "python3 -c \"import json,math,sys; d=json.load(open(sys.argv[1])); "
                           "s=d['tensors']['scores_masked']['data']; "
                           "sys.exit(0 if any(math.isinf(v) and v < 0 for v in s) else 1)\" " +
                           dir + "/d.json";
    CHECK(std::system(py.c_str()) == 0);
    std::filesystem::remove_all(dir);
}

TEST_CASE("cli: attn bench refuses an unknown CUDA kernel") {
    CHECK(test::run_attn("bench --seq 64 --impl cuda-x").code == 2);
}

TEST_CASE("cli: attn bench takes the CUDA kernels and skips them with a reason when no GPU is usable") {
    if (attn::cuda_available()) {
        test::skip("a GPU is usable here: the bench's no-GPU path is not exercised");
        return;
    }
    const auto r = test::run_attn("bench --seq 64 --reps 1 --warmup 0 --impl flash,cuda-flash --json");
    CHECK(r.code == 0);
    CHECK(r.out.find("cuda-flash") != std::string::npos);  // listed among the skipped cases, with the reason
    CHECK(r.out.find("CUDA") != std::string::npos);
}

TEST_CASE("cli: integers, as every option reads them") {
    int64_t v = 0;
    CHECK(cli::read_integer("42", 1, cli::kMaxSize, v).empty());
    CHECK(v == 42);
    CHECK(cli::read_integer("0", 1, cli::kMaxSize, v) == "must be a positive integer, got 0");
    CHECK(cli::read_integer("x", 0, cli::kMaxSize, v) == "must be a non-negative integer, got 'x'");
    CHECK(cli::read_integer("", 1, cli::kMaxSize, v) == "must be a positive integer, got ''");
    CHECK(cli::read_integer("4 ", 1, cli::kMaxSize, v) == "must be a positive integer, got '4 '");
    CHECK(cli::read_integer("99999999999", 1, cli::kMaxSize, v) == "must be at most 2147483647, got 99999999999");
    CHECK(cli::read_integer("5", 2, 4, v) == "must be an integer in [2, 4], got 5");
    CHECK(cli::parse_int_list("--seq", "1024,4096") == std::vector<int64_t>{1024, 4096});
    CHECK(cli::parse_int_list("--dk", " 1, 16,64 ") == std::vector<int64_t>{1, 16, 64});
    CHECK(cli::parse_int_list("--mask", "0,6", 0, 6) == std::vector<int64_t>{0, 6});
    for (const char* bad : {"", ",", "1,,2", "1, ,2", "1,", ",1", "0", "1,x", "1 2"})
        CHECK_THROWS_WITH_AS(cli::parse_int_list("--seq", bad), doctest::Contains("--seq: "), InputError);
    CHECK(cli::parse_word_list("--to", "animal,it@2") == std::vector<std::string>{"animal", "it@2"});
    CHECK_THROWS_WITH_AS(cli::parse_word_list("--to", "a,,b"), doctest::Contains("--to: "), InputError);
}

TEST_CASE("cli: the syntax of --mask, --scale, --fill and --init") {
    CHECK(cli::parse_mask("none", 2, 6).is_none());
    CHECK(cli::parse_mask("causal", 2, 6).describe() == "causal");
    CHECK(cli::parse_mask("pad:0,6", 2, 6).describe() == "key padding (lengths 0,6)");  // 0: a row with no key
    CHECK(cli::parse_mask("causal+pad:4,6", 2, 6).describe() == "causal + key padding (lengths 4,6)");
    for (const char* bad : {"pad:4", "pad:4,7", "pad:4,-1", "pad:4,x", "pad:", "pad:4,", "causal+", "diagonal", ""})
        CHECK_THROWS_WITH_AS(cli::parse_mask(bad, 2, 6), doctest::Contains("--mask: "), InputError);

    CHECK(cli::parse_scale("sqrt").kind == ScaleKind::InvSqrtDk);
    CHECK(cli::parse_scale("none").kind == ScaleKind::None);
    const Scale constant = cli::parse_scale("0.1"), cosine = cli::parse_scale("cosine"),
                tau = cli::parse_scale("cosine:0.5");
    CHECK((constant.kind == ScaleKind::Constant && constant.value == 0.1f));
    CHECK((cosine.kind == ScaleKind::Cosine && cosine.value == 1.0f));
    CHECK((tau.kind == ScaleKind::Cosine && tau.value == 0.5f));
    CHECK(cli::parse_scale(std::to_string(cli::kMaxScale)).value == static_cast<float>(cli::kMaxScale));
    // Out of range, or 0 / subnormal / infinite once a float (1e-300, cosine:1e-39, 3.4e38 x scores): refused.
    for (const char* bad : {"fast", "0", "-1", "inf", "cosine:0", "cosine:", "cosine:x", "", "1e300", "3.4e38",
                            "1e-300", "1e-39", "cosine:1e-39", "cosine:1e300", "nan"})
        CHECK_THROWS_WITH_AS(cli::parse_scale(bad), doctest::Contains("--scale: "), InputError);

    CHECK(std::isinf(cli::parse_fill("-inf")));
    CHECK(cli::parse_fill("-1e9") == -1e9f);
    CHECK(cli::parse_fill("0") == 0.0f);
    CHECK(cli::parse_fill("-1e30") == -1e30f);
    for (const char* bad : {"-infinity", "inf", "nan", "1e39", "3.4e38", "-1e31", "nope", ""})
        CHECK_THROWS_WITH_AS(cli::parse_fill(bad), doctest::Contains("--fill: "), InputError);

    CHECK(cli::parse_init("default").kind == InitKind::Torch);
    CHECK(cli::parse_init("xavier").kind == InitKind::XavierUniform);
    CHECK(cli::parse_init("kaiming_normal").kind == InitKind::KaimingNormal);
    const InitSpec normal = cli::parse_init("normal:0.5");
    CHECK((normal.kind == InitKind::Normal && normal.std == 0.5f));
    for (const char* bad : {"glorot", "normal:", "normal:-1", "normal:0", "normal:1e20", "normal:1e-300", ""})
        CHECK_THROWS_WITH_AS(cli::parse_init(bad), doctest::Contains("--init: "), InputError);
}

TEST_CASE("cli: stdout that cannot be written is exit 2 with one line, and a reader that leaves ends attn quietly") {
    const auto attn_sh = [](const char* args, const char* redirections) {
        std::string cmd = "'";
        cmd += ATTN_BINARY;
        cmd += "' ";
        cmd += args;
        cmd += redirections;
        return test::run_shell(cmd);
    };
    for (const char* args : {"lessons", "forward", "variance --samples 64", "lesson 1", "--help"}) {
        INFO(std::string(args));
        const auto r = attn_sh(args, " 2>&1 >/dev/full");
        INFO(r.out);
        CHECK(r.code == 2);
        CHECK(r.out.rfind("attn: error: cannot write to standard output", 0) == 0);
        CHECK(count_lines(r.out) == 1);
    }
    const auto closed = attn_sh("forward", " 2>&1 >&-");
    CHECK(closed.code == 2);
    CHECK(closed.out == "attn: error: standard output is closed\n");
    // SIGPIPE keeps its default action: no error text when head stops reading.
    const auto piped = attn_sh("tour", " 2>&1 | head -c 1");
    CHECK(piped.code == 0);
    CHECK(piped.out.size() == 1);
}

TEST_CASE("cli: a FIFO or a folder as an input file is refused at once, naming the file") {
    const std::string dir = test::temp_dir("fifo-in");
    const std::string fifo = dir + "/p";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    check_refused({
        {("forward --input '" + fifo + "'").c_str(), "--input"},
        {("view '" + fifo + "'").c_str(), "is not a regular file"},
        {("forward --input '" + dir + "'").c_str(), "is a folder"},
        {("view '" + dir + "'").c_str(), "is a folder"},
    });
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "cli: forward --input honours the file's config and mask, and an option that disagrees is refused naming both") {
    const std::string dir = test::temp_dir("input-config");
    const std::string made = dir + "/made.json";
    REQUIRE(test::run_attn("forward --heads 2 --d-k 3 --d-v 5 --mask causal+pad:5,6 --scale 0.5 --fill -1e9 --no-bias "
                           "--init xavier --dropout 0.25 --train --dump " + made).code == 0);
    const Dump src = read_dump_file(made);
    // Nothing but the file: the same layer, the same mask, the same numbers.
    const std::string again = dir + "/again.json";
    const auto r = test::run_attn("forward --input " + made + " --dump " + again);
    INFO(r.out);
    REQUIRE(r.code == 0);
    const Dump d = read_dump_file(again);
    for (const char* key : {"heads", "d_k", "d_v", "mask", "scale", "fill", "bias", "init", "dropout", "train"}) {
        INFO(key);
        CHECK(d.config[key] == src.config[key]);
    }
    CHECK(d.tensors.count("b_q") == 0);
    CHECK(max_abs_diff(d.tensors.at("mask"), src.tensors.at("mask")) == 0.0);
    CHECK(max_abs_diff(d.tensors.at("out"), src.tensors.at("out")) == 0.0);  // dropout too: same --seed
    // Options equal to the file's are fine, whatever their spelling.
    CHECK(test::run_attn("forward --input " + made + " --heads 2 --d-k 3 --scale 5e-1 --mask causal+pad:5,6 --train")
              .code == 0);
    check_refused({
        {("forward --input " + made + " --heads 4").c_str(),
         ("--heads 4 conflicts with " + made + ": config.heads = 2").c_str()},
        {("forward --input " + made + " --d-v 3").c_str(), "--d-v 3 conflicts with"},
        {("forward --input " + made + " --mask causal").c_str(), "--mask causal conflicts with"},
        {("forward --input " + made + " --scale sqrt").c_str(), "config.scale = 0.5"},
        {("forward --input " + made + " --fill -inf").c_str(), "config.fill = -1000000000"},
        {("forward --input " + made + " --init torch").c_str(), "config.init = xavier"},
        {("forward --input " + made + " --dropout 0.5 --dump " + dir + "/never.json").c_str(), "config.dropout = 0.25"},
    });
    CHECK(!std::filesystem::exists(dir + "/never.json"));  // refused before anything is written
    // A file with bias and no training: --no-bias and --train are what disagree.
    const std::string plain = dir + "/plain.json";
    REQUIRE(test::run_attn("forward --dump " + plain).code == 0);
    check_refused({
        {("forward --input " + plain + " --no-bias").c_str(), "config.bias = true"},
        {("forward --input " + plain + " --train").c_str(), "config.train = false"},
    });

    // A hand-made file: x [1, 3, 2] and only a mask tensor (lower triangle), no config.
    const std::string tri = dir + "/tri.json";
    std::ofstream(tri) << R"({"format": "attn-dump", "version": 1, "tensors": {
        "x": {"shape": [1, 3, 2], "data": [1, 2, 3, 4, 5, 6]},
        "mask": {"shape": [1, 3, 3], "data": [1, 0, 0, 1, 1, 0, 1, 1, 1]}}})";
    const std::string tri_out = dir + "/tri-out.json";
    REQUIRE(test::run_attn("forward --input " + tri + " --dump " + tri_out).code == 0);
    const Dump t = read_dump_file(tri_out);
    CHECK(t.config["mask"] == "custom");
    const Tensor& w = t.tensors.at("weights");  // [1, 1, 3, 3]
    CHECK(w.at({0, 0, 0, 1}) == 0.0f);
    CHECK(w.at({0, 0, 1, 2}) == 0.0f);
    CHECK(w.at({0, 0, 2, 1}) > 0.0f);
    CHECK(test::run_attn("forward --input " + tri + " --mask causal").code == 0);  // the same pattern
    CHECK(test::run_attn("forward --input " + tri_out).code == 0);                   // "custom" reads back

    // Broken configs and masks name the file and the key.
    auto write = [&](const std::string& name, const std::string& config, const std::string& mask) {
        std::ofstream(dir + "/" + name) << R"({"format": "attn-dump", "version": 1, "config": )" << config
                                        << R"(, "tensors": {"x": {"shape": [1, 3, 2], "data": [1, 2, 3, 4, 5, 6]})"
                                        << mask << "}}";
        return dir + "/" + name;
    };
    const std::string mask01 = R"(, "mask": {"shape": [1, 3, 3], "data": [1, 0, 0, 1, 1, 0, 1, 1, 2]})";
    check_refused({
        {("forward --input " + write("heads.json", R"({"heads": "two"})", "")).c_str(), "heads.json': config.heads"},
        {("forward --input " + write("h3.json", R"({"heads": 3})", "")).c_str(), "h3.json': config.heads"},  // 2 % 3
        {("forward --input " + write("seq.json", R"({"seq": 4})", "")).c_str(), "seq.json': config.seq says 4"},
        {("forward --input " + write("scale.json", R"({"scale": "fast"})", "")).c_str(), "scale.json': config.scale"},
        {("forward --input " + write("maskspec.json", R"({"mask": "pad:9"})", "")).c_str(),
         "maskspec.json': config.mask"},
        {("forward --input " + write("mask2.json", "{}", mask01)).c_str(), "mask[0, 2, 2] = 2"},
        {("forward --input " + write("disagree.json", R"({"mask": "none"})",
                                     R"(, "mask": {"shape": [1, 3, 3], "data": [1, 0, 0, 1, 1, 0, 1, 1, 1]})"))
             .c_str(),
         "disagrees with its tensor mask"},
        {("forward --input " + write("custom.json", R"({"mask": "custom"})", "")).c_str(), "no tensor mask"},
        {("forward --input " + write("train.json", R"({"train": 1})", "")).c_str(), "config.train"},
    });
    std::filesystem::remove_all(dir);
}

bool xml_well_formed(const std::string& s, std::string* why);  // tests/test_heatmap.cpp

namespace {
struct Split {
    int code = -1;
    std::string out, err;
};
// Runs `attn ARGS` with stdout and stderr apart.
Split run_split(const std::string& args, const std::string& dir) {
    const std::string err = dir + "/stderr.txt";
    std::string cmd = "'";
    cmd.append(ATTN_BINARY).append("' ").append(args).append(" 2>'").append(err).append("'");
    const auto r = test::run_shell(cmd);
    return {r.code, r.out, read_file(err)};
}
}  // namespace

TEST_CASE("cli: a machine format on stdout has it alone: the text goes to stderr, and two formats cannot share it") {
    const std::string dir = test::temp_dir("stdout");
    const std::string dump = dir + "/d.json";
    REQUIRE(test::run_attn("forward --heads 2 --dump " + dump).code == 0);
    struct Case {
        std::string args;
        bool json;             // stdout is JSON (else SVG)
        const char* on_stderr;  // a line of the text, now on stderr
    };
    const std::vector<Case> cases = {
        {"forward --trace --mask causal --dump -", true, "softmax(masked, dim=-1)"},
        {"forward --dump -", true, "check: every attention row"},
        {"view " + dump + " --svg -", false, "mean entropy"},
        {"variance --samples 64 --svg -", false, "std"},
        {"variance --samples 64 --json --svg " + dir + "/v.svg", true, ""},
        {"lesson 9 --svg -", false, "mask"},
        {"lesson 9 --json --svg " + dir + "/l.svg", true, ""},
        {"lessons --json", true, ""},
    };
    for (const Case& c : cases) {
        INFO(c.args);
        const Split r = run_split(c.args, dir);
        INFO(r.err);
        REQUIRE(r.code == 0);
        if (c.json) {
            CHECK_NOTHROW((void)parse_json_relaxed(r.out, "stdout"));  // -Infinity of a causal mask included
        } else {
            std::string why;
            CHECK_MESSAGE(xml_well_formed(r.out, &why), why);
        }
        CHECK(r.err.find(c.on_stderr) != std::string::npos);
    }
    // The dump on stdout reads back as a dump.
    CHECK(dump_from_string(run_split("forward --trace --dump -", dir).out, "stdout").tensors.count("weights") == 1);
    check_refused({
        {"variance --samples 64 --json --svg -", "--json and --svg -: both would write to standard output"},
        {"variance --samples 64 --csv --svg -", "--csv and --svg -"},
        {"lesson 9 --json --svg -", "--json and --svg -"},
        {"model attention --text hi --svg - --dump -", "--svg - and --dump -"},  // refused before the model is read
    });
    // Refused up front: nothing on stdout, no file.
    auto files = [&] {
        return std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator{});
    };
    const auto before = files();
    CHECK(run_split("variance --samples 64 --json --svg -", dir).out.empty());
    CHECK(run_split("lesson 9 --json --svg - --json-nonfinite string", dir).code == 2);
    CHECK(files() == before);
    std::filesystem::remove_all(dir);
}

TEST_CASE("cli: model attention --dump - is JSON alone on stdout (skipped without the model)") {
    if (!test::model_or_skip()) return;
    const std::string dir = test::temp_dir("stdout-model");
    for (const char* args : {"model attention --text 'the cat sat' --layer 1 --dump -",
                             "model attention --text 'the cat sat' --layer 1 --head 2 --svg -"}) {
        INFO(args);
        const Split r = run_split(args, dir);
        INFO(r.err);
        REQUIRE(r.code == 0);
        CHECK(r.err.find("share of all attention weight") != std::string::npos);
        if (std::string(args).find("--dump") != std::string::npos) {
            CHECK(nlohmann::json::parse(r.out)["tensors"]["attention"]["shape"] == std::vector<int>{6, 1, 12, 5, 5});
        } else {
            std::string why;
            CHECK_MESSAGE(xml_well_formed(r.out, &why), why);
        }
    }
    std::filesystem::remove_all(dir);
}
