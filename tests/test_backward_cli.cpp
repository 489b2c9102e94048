// `attn forward --backward`: the gradient table, the trace formula by formula,
// the dump fields, dout from --input, and bad input refused in one line, exit 2.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "test_util.hpp"

using namespace attn;

namespace {
int count_lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

void check_refused_line(const std::string& args, const std::string& must_mention) {
    INFO(args);
    const auto r = test::run_attn(args);
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find(must_mention) != std::string::npos);
    CHECK(r.out.rfind("attn: error: ", 0) == 0);
    CHECK(count_lines(r.out) == 1);
}
}  // namespace

TEST_CASE("backward cli: the table lists every gradient with its shape") {
    const auto r = test::run_attn("forward --backward --heads 2 --d-v 4 --mask causal");
    REQUIRE(r.code == 0);
    for (const char* s : {"dout         [2, 6, 16]", "d_out_heads  [2, 2, 6, 4]", "d_weights    [2, 2, 6, 6]",
                          "d_scores     [2, 2, 6, 6]", "dQ           [2, 2, 6, 8]", "dV           [2, 2, 6, 4]",
                          "dx           [2, 6, 16]", "dW_q         [16, 16]", "dW_v         [8, 16]",
                          "dW_o         [16, 8]", "db_o         [16]"})
        CHECK_MESSAGE(r.out.find(s) != std::string::npos, s);
    // without bias there is no bias gradient
    const auto nb = test::run_attn("forward --backward --no-bias");
    REQUIRE(nb.code == 0);
    CHECK(nb.out.find("db_q") == std::string::npos);
}

TEST_CASE("backward cli: --trace prints every backward step with its formula, shape and norm") {
    const auto r = test::run_attn("forward --backward --trace --train --dropout 0.2 --scale cosine:0.5");
    REQUIRE(r.code == 0);
    for (const char* s : {"dout·W_o", "doutᵀ·merged", "Pdᵀ·d_head_out", "d_head_out·Vᵀ", "keep / (1 - p)",
                          "rowsum(P ∘ d_weights)", "(dq̂ − q̂(q̂·dq̂))/|q|", "dQᵀ·x", "dQ·W_q + dK·W_k + dV·W_v",
                          "|.| = "})
        CHECK_MESSAGE(r.out.find(s) != std::string::npos, s);
}

TEST_CASE("backward cli: --dump holds every gradient, and dout from --input gives the same gradients") {
    const std::string dir = test::temp_dir("bwd");
    const std::string a = dir + "/a.json", b = dir + "/b.json";
    REQUIRE(test::run_attn("forward --backward --heads 2 --d-v 5 --mask causal+pad:5,6 --dump " + a).code == 0);
    const Dump d = read_dump_file(a);
    CHECK(d.config["backward"] == true);
    const std::pair<const char*, Shape> want[] = {
        {"dout", {2, 6, 16}},      {"d_out_heads", {2, 2, 6, 5}}, {"d_weights", {2, 2, 6, 6}},
        {"d_scores", {2, 2, 6, 6}}, {"dQ", {2, 2, 6, 8}},         {"dK", {2, 2, 6, 8}},
        {"dV", {2, 2, 6, 5}},      {"dx", {2, 6, 16}},           {"dW_q", {16, 16}},
        {"db_q", {16}},            {"dW_k", {16, 16}},           {"db_k", {16}},
        {"dW_v", {10, 16}},        {"db_v", {10}},               {"dW_o", {16, 10}},
        {"db_o", {16}}};
    for (const auto& entry : want) {
        const auto& name = entry.first;  // clang 14: no structured binding inside INFO
        const auto& shape = entry.second;
        INFO(name);
        REQUIRE(d.tensors.count(name) == 1);
        CHECK(d.tensors.at(name).shape == shape);
    }
    // masked scores get exactly zero gradient: key 5 is padding in batch row 0 (length 5)
    for (int64_t i = 0; i < 6; ++i) CHECK(d.tensors.at("d_scores").at({0, 1, i, 5}) == 0.0f);
    // the dumped gradients are what the library computes for the dumped tensors
    MultiHeadAttention mha(MhaConfig{16, 2, 8, 5, true});
    mha.q_proj.W = d.tensors.at("W_q");
    mha.q_proj.b = d.tensors.at("b_q");
    mha.k_proj.W = d.tensors.at("W_k");
    mha.k_proj.b = d.tensors.at("b_k");
    mha.v_proj.W = d.tensors.at("W_v");
    mha.v_proj.b = d.tensors.at("b_v");
    mha.o_proj.W = d.tensors.at("W_o");
    mha.o_proj.b = d.tensors.at("b_o");
    const Mask mask = Mask::make_causal().combined(Mask::key_padding({5, 6}));
    ForwardRecord fwd;
    mha.forward(d.tensors.at("x"), mask, AttentionOptions{}, &fwd);
    const MhaGrads g = mha.backward(fwd, d.tensors.at("dout"), mask, AttentionOptions{});
    CHECK(max_abs_diff(g.dx, d.tensors.at("dx")) == 0.0);
    CHECK(max_abs_diff(g.dW_o, d.tensors.at("dW_o")) == 0.0);
    // feeding the dump back (another --seed: x, the weights and dout all come from the file)
    REQUIRE(test::run_attn("forward --backward --heads 2 --d-v 5 --mask causal+pad:5,6 --seed 7 --input " + a +
                           " --dump " + b)
                .code == 0);
    const Dump e = read_dump_file(b);
    for (const char* n : {"dout", "dx", "dW_q", "db_v", "dW_o"})
        CHECK(max_abs_diff(e.tensors.at(n), d.tensors.at(n)) == 0.0);
    std::filesystem::remove_all(dir);
}

TEST_CASE("backward cli: the same seed gives the same gradients, another seed another dout") {
    const auto a = test::run_attn("forward --backward --train --dropout 0.3");
    const auto b = test::run_attn("forward --backward --train --dropout 0.3");
    const auto c = test::run_attn("forward --backward --train --dropout 0.3 --seed 43");
    REQUIRE(a.code == 0);
    CHECK(a.out == b.out);
    CHECK(a.out != c.out);
}

TEST_CASE("backward cli: bad input is one line, exit 2, before any work") {
    int without = 0;
    for (const BackendInfo& row : backends()) {
        if (row.backward != nullptr || !row.available(nullptr)) continue;
        ++without;
        check_refused_line(
            std::string("forward --backward --impl ") + row.name,
            std::string("--backward: ") + row.name + " has no backward pass (backends with one: reference");
    }
    if (without == 0) MESSAGE("every backend that runs here has a backward pass: no refusal to check");
    const std::string dir = test::temp_dir("bwdin");
    auto write =
        [&](const std::string& name, const std::string& dout) {
            std::ofstream(dir + "/" + name)
                << R"({"format": "attn-dump", "version": 1, "tensors": {"x": {"shape": [1, 2, 2], )"
                << R"("data": [1, 2, 3, 4]}, "dout": )" << dout << "}}";
            return dir + "/" + name;
        };
    const std::string ok = write("ok.json", R"({"shape": [1, 2, 2], "data": [1, 0, 0, 1]})");
    REQUIRE(test::run_attn("forward --backward --input " + ok).code == 0);
    check_refused_line(
        "forward --backward --input " + write("shape.json", R"({"shape": [1, 2, 3], "data": [1, 0, 0, 1, 0, 0]})"),
        "tensor dout has shape [1, 2, 3], expected [1, 2, 2]");
    check_refused_line(
        "forward --backward --input " + write("nan.json", R"({"shape": [1, 2, 2], "data": [1, "NaN", 0, 1]})"),
        "dout[0, 0, 1] = nan");
    check_refused_line(
        "forward --backward --input " + write("big.json", R"({"shape": [1, 2, 2], "data": [1, 1e39, 0, 1]})"),
        "--input");
    check_refused_line(
        "forward --backward --input " + write("huge.json", R"({"shape": [1, 2, 2], "data": [1, 3e38, 3e38, 1]})"),
        "overflow float32 in the backward pass");
    std::filesystem::remove_all(dir);
}

TEST_CASE("backward cli: the forward page's trace excerpt is what the command prints") {
    // docs/commands/forward.md: "An excerpt of `attn forward --backward --trace ...` (the output of that
    // command):" then a ``` block
    const std::string readme = read_file(test::source_path("docs/commands/forward.md"));
    const std::string intro = "An excerpt of\n`attn forward --backward --trace";
    const size_t at = readme.find(intro);
    REQUIRE(at != std::string::npos);
    const size_t cmd_end = readme.find('`', at + intro.size());
    const std::string args =
        readme.substr(at + intro.size() - std::string("forward --backward --trace").size(),
                      cmd_end - (at + intro.size()) + std::string("forward --backward --trace").size());
    const size_t open = readme.find("```\n", cmd_end), close = readme.find("\n```", open + 4);
    REQUIRE(open != std::string::npos);
    REQUIRE(close != std::string::npos);
    const auto r = test::run_attn(args);
    REQUIRE(r.code == 0);
    int lines = 0;
    size_t p = open + 4;
    while (p < close) {
        const size_t e = std::min(readme.find('\n', p), close);
        const std::string line = readme.substr(p, e - p);
        INFO(args << ": " << line);
        CHECK(r.out.find(line) != std::string::npos);
        ++lines;
        p = e + 1;
    }
    CHECK(lines >= 10);
}
