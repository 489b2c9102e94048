// The golden fixtures (tests/fixtures/golden/*.json, made by scripts/make-golden.py
// with PyTorch): each is one multi-head attention layer, its input and every
// tensor PyTorch computed. test_golden.cpp checks the reference against them,
// test_parity.cpp every backend.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "parse.hpp"
#include "test_util.hpp"

namespace attn::test {

struct Golden {
    std::string name;  // file name without .json
    Dump dump;         // x, the weights, and PyTorch's Q, K, V, weights, head_out, merged, out
    MultiHeadAttention mha;
    Mask mask;
    AttentionOptions opt;
};

// Every fixture in the folder, sorted, so a new fixture is checked without a code change.
inline std::vector<std::string> golden_names() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(source_path("tests/fixtures/golden")))
        if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

// The layer a fixture describes: its config's sizes and its W_*, b_* tensors.
inline MultiHeadAttention golden_layer(const Dump& d) {
    const auto& c = d.config;
    MultiHeadAttention mha(MhaConfig{c["d_model"].get<int64_t>(), c["heads"].get<int64_t>(), c["d_k"].get<int64_t>(),
                                     c["d_v"].get<int64_t>(), c["bias"].get<bool>()});
    mha.q_proj.W = d.tensors.at("W_q");
    mha.k_proj.W = d.tensors.at("W_k");
    mha.v_proj.W = d.tensors.at("W_v");
    mha.o_proj.W = d.tensors.at("W_o");
    if (mha.config().bias) {
        mha.q_proj.b = d.tensors.at("b_q");
        mha.k_proj.b = d.tensors.at("b_k");
        mha.v_proj.b = d.tensors.at("b_v");
        mha.o_proj.b = d.tensors.at("b_o");
    }
    return mha;
}

inline Golden load_golden(const std::string& name) {
    Dump d = read_dump_file(source_path("tests/fixtures/golden/" + name + ".json"));
    const auto& c = d.config;
    MultiHeadAttention mha = golden_layer(d);
    // the fixture's options, written as `attn forward` takes them
    AttentionOptions opt;
    opt.scale = cli::parse_scale(c["scale"].get<std::string>());
    opt.fill = cli::parse_fill(c["fill"].get<std::string>());
    Mask mask = cli::parse_mask(c["mask"].get<std::string>(), c["batch"].get<int64_t>(), c["seq"].get<int64_t>());
    return Golden{name, std::move(d), std::move(mha), std::move(mask), opt};
}

}  // namespace attn::test
