// gpt2_save.cpp: a Gpt2Model written as a Hugging Face GPT-2 folder (attn/model/gpt2.hpp).
// The inverse of Gpt2Model::load: nn.Linear's [out, in] weights go back to Conv1D's
// [in, out], and W_q | W_k | W_v side by side into c_attn.
#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/core/utf8.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/guards.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/model/bpe.hpp"
#include "attn/model/gpt2.hpp"

namespace attn {

namespace {

// Linear weights (out_i, in) stacked side by side as one Conv1D weight (in, sum out_i).
Tensor linear_to_conv1d(const std::vector<const Tensor*>& ws) {
    const int64_t in = ws.front()->dim(1);
    int64_t total = 0;
    for (const Tensor* w : ws) total += w->dim(0);
    Tensor t({in, total});
    int64_t c0 = 0;
    for (const Tensor* w : ws) {
        const int64_t out = w->dim(0);
        for (int64_t o = 0; o < out; ++o)
            for (int64_t i = 0; i < in; ++i)
                t.data[static_cast<size_t>(i * total + c0 + o)] = w->data[static_cast<size_t>(o * in + i)];
        c0 += out;
    }
    return t;
}

Tensor concat(const std::vector<const Tensor*>& bs) {
    int64_t n = 0;
    for (const Tensor* b : bs) n += b->numel();
    Tensor t({n});
    auto it = t.data.begin();
    for (const Tensor* b : bs) it = std::copy(b->data.begin(), b->data.end(), it);
    return t;
}

}  // namespace

void save_gpt2_folder(const std::string& dir, const Gpt2Model& m, const std::vector<std::string>& tokens,
                      const std::map<std::string, std::string>& provenance) {
    const Gpt2Config& c = m.config;
    if (static_cast<int64_t>(tokens.size()) != c.vocab_size)
        throw InputError(fmt::format("a GPT-2 folder needs one token per row of the embedding: {} tokens for "
                                     "vocab_size {}",
                                     tokens.size(), c.vocab_size));
    // vocab.json: each token's bytes in GPT-2's printable byte alphabet
    nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
    for (size_t id = 0; id < tokens.size(); ++id) {
        if (tokens[id].empty()) throw InputError(fmt::format("token {} of the vocabulary is empty", id));
        std::string sym;
        for (unsigned char b : tokens[id]) utf8_append(sym, bpe_byte_to_unicode(b));
        if (vocab.contains(sym)) throw InputError(fmt::format("token {} of the vocabulary repeats an earlier one", id));
        vocab[sym] = id;
    }
    nlohmann::ordered_json config = {
        {"model_type", "gpt2"},
        {"architectures", {"GPT2LMHeadModel"}},
        {"vocab_size", c.vocab_size},
        {"n_positions", c.n_positions},
        {"n_ctx", c.n_positions},
        {"n_embd", c.n_embd},
        {"n_layer", c.n_layer},
        {"n_head", c.n_head},
        {"n_inner", c.n_inner},
        {"layer_norm_epsilon", std::stod(fmt::format("{}", c.layer_norm_epsilon))},  // 1e-05, not 9.99999974e-06
        {"activation_function", c.activation},
        {"scale_attn_weights", c.scale_attn_weights},
        {"tie_word_embeddings", m.stack.config.tied_head},
        {"resid_pdrop", 0.0},
        {"embd_pdrop", 0.0},
        {"attn_pdrop", 0.0},
        {"bos_token_id", nullptr},
        {"eos_token_id", nullptr},
        {"torch_dtype", "float32"}};
    if (!provenance.empty()) config["attn"] = provenance;

    const std::string p = "transformer.";
    std::vector<std::pair<std::string, Tensor>> t;
    t.emplace_back(p + "wte.weight", m.stack.tok_emb);
    t.emplace_back(p + "wpe.weight", m.stack.pos_emb);
    for (size_t l = 0; l < m.stack.layers.size(); ++l) {
        const StackLayer& L = m.stack.layers[l];
        const MultiHeadAttention& a = L.attention;
        const std::string h = fmt::format("{}h.{}.", p, l);
        t.emplace_back(h + "ln_1.weight", L.ln1_gamma);
        t.emplace_back(h + "ln_1.bias", L.ln1_beta);
        t.emplace_back(h + "attn.c_attn.weight", linear_to_conv1d({&a.q_proj.W, &a.k_proj.W, &a.v_proj.W}));
        t.emplace_back(h + "attn.c_attn.bias", concat({&a.q_proj.b, &a.k_proj.b, &a.v_proj.b}));
        t.emplace_back(h + "attn.c_proj.weight", linear_to_conv1d({&a.o_proj.W}));
        t.emplace_back(h + "attn.c_proj.bias", a.o_proj.b);
        t.emplace_back(h + "ln_2.weight", L.ln2_gamma);
        t.emplace_back(h + "ln_2.bias", L.ln2_beta);
        t.emplace_back(h + "mlp.c_fc.weight", linear_to_conv1d({&L.fc.W}));
        t.emplace_back(h + "mlp.c_fc.bias", L.fc.b);
        t.emplace_back(h + "mlp.c_proj.weight", linear_to_conv1d({&L.proj.W}));
        t.emplace_back(h + "mlp.c_proj.bias", L.proj.b);
    }
    t.emplace_back(p + "ln_f.weight", m.stack.lnf_gamma);
    t.emplace_back(p + "ln_f.bias", m.stack.lnf_beta);
    if (!m.stack.config.tied_head) t.emplace_back("lm_head.weight", m.stack.lm_head);
    std::map<std::string, std::string> meta = provenance;
    meta["format"] = "pt";  // transformers refuses a safetensors file without it
    const std::string weights = safetensors_to_string(t, meta);

    create_folders(dir);  // an open OutputBatch removes the folders it made if the run fails
    const std::filesystem::path d(dir);
    write_file_atomic((d / "model.safetensors").string(), weights);
    write_file_atomic((d / "vocab.json").string(), vocab.dump() + "\n");
    write_file_atomic((d / "merges.txt").string(), "#version: 0.2\n");
    // config.json last: a folder is complete when it has one
    write_file_atomic((d / "config.json").string(), config.dump(2) + "\n");
}

}  // namespace attn
