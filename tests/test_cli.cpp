// The CLI: bad input exits 2 with one line naming the option; nothing is
// written on error; --trace and --dump do what they say.
#include <doctest/doctest.h>

#include <filesystem>

#include "attn/cuda/cuda.hpp"
#include "test_util.hpp"

using namespace attn;

static int count_lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

TEST_CASE("cli: every bad input of attn forward exits 2 with a one-line message naming the option") {
    struct Case {
        const char* args;
        const char* must_mention;
    };
    const Case cases[] = {
        {"forward --heads 3", "--heads"},                     // 16 % 3 without --d-k
        {"forward --batch 0", "--batch"},
        {"forward --seq -4", "--seq"},
        {"forward --d-model 0", "--d-model"},
        {"forward --heads 0", "--heads"},
        {"forward --mask pad:4", "--mask"},                   // count != B
        {"forward --mask pad:4,9", "--mask"},                 // 9 > T
        {"forward --mask pad:a,b", "--mask"},
        {"forward --mask diagonal", "--mask"},
        {"forward --dropout 1", "--dropout"},
        {"forward --dropout -0.1", "--dropout"},
        {"forward --scale fast", "--scale"},
        {"forward --fill nope", "--fill"},
        {"forward --init glorot", "--init"},
        {"forward --impl quantum", "--impl"},
        {"forward --seq 2000000 --heads 16 --d-model 64", "--seq"},   // (B, H, T, T) would not fit
        {"forward --dump /nonexistent-dir/x.json", "--dump"},
        {"forward --dump /tmp", "--dump"},                        // a folder
        {"forward --heads 100000 --d-k 100000 --d-model 100000", "--heads"},  // weights would not fit
        {"forward --d-k 0 --d-v -3", "--d-v"},
        {"forward --seq 99999999999", "--seq"},
        {"forward --seed -1", "--seed"},
        {"forward --device tpu", "--device"},
        {"forward --impl cuda-flash", "--impl"},                  // a GPU kernel without --device cuda
        {"forward --batch x", "--batch"},
        {"forward --input /nonexistent.json", "nonexistent"},
        {"forward --no-such-flag", "--no-such-flag"},
        {"", "command"},
    };
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

TEST_CASE("cli: --device cuda without a GPU is one line and exit 2") {
    if (cuda_available()) {
        test::skip("a GPU is usable here: nothing to refuse");
        return;
    }
    const auto r = test::run_attn("forward --device cuda");
    CHECK(r.code == 2);
    CHECK(r.out.find("--device cuda") != std::string::npos);
    CHECK(count_lines(r.out) == 1);
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
    for (const char* line : {"x·W_qᵀ + b_q", "[2, 6, 16]", "softmax(masked, dim=-1)", "[2, 1, 6, 6]", "merged·W_oᵀ + b_o"})
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
    REQUIRE(test::run_attn("forward --heads 2 --d-v 5 --mask causal+pad:5,6 --seed 999 --input " + path + " --dump " + path3)
                .code == 0);
    CHECK(max_abs_diff(read_dump_file(path3).tensors.at("out"), d.tensors.at("out")) == 0.0);
    std::filesystem::remove_all(dir);
}

TEST_CASE("cli: Python's json module reads the dump, -Infinity included") {
    if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0) {
        test::skip("no python3 with its json module");
        return;
    }
    const std::string dir = test::temp_dir("py");
    REQUIRE(test::run_attn("forward --mask causal --dump " + dir + "/d.json").code == 0);
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
    if (cuda_available()) {
        test::skip("a GPU is usable here: the bench's no-GPU path is not exercised");
        return;
    }
    const auto r = test::run_attn("bench --seq 64 --reps 1 --warmup 0 --impl flash,cuda-flash --json");
    CHECK(r.code == 0);
    CHECK(r.out.find("cuda-flash") != std::string::npos);  // listed among the skipped cases, with the reason
    CHECK(r.out.find("CUDA") != std::string::npos);
}
