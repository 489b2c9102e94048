// export_gpt2.cpp: see export_gpt2.hpp.
#include "export_gpt2.hpp"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/model/gpt2.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {
constexpr const char* kOpt = "--export-gpt2";
}

void check_gpt2_export(const ModelConfig& config, const Task& task, const std::string& dir) {
    const ModelConfig c = config.resolved();
    auto refuse = [](const std::string& rule) { throw InputError(fmt::format("{}: {}", kOpt, rule)); };
    if (!c.causal) refuse("a GPT-2 is a decoder; --arch encoder cannot be written as one");
    if (c.pos != PosKind::Learned) refuse("a GPT-2 has learned positions; --pos sinusoidal cannot be written as one");
    if (c.act != Activation::Gelu) refuse("a GPT-2's MLP uses GELU; --act relu cannot be written as one");
    if (c.scale.kind != ScaleKind::InvSqrtDk || c.learn_temperature)
        refuse("a GPT-2 scales scores by 1/sqrt(Dk); give --scale sqrt");
    if (c.d_k * c.heads != c.d_model || c.d_v != c.d_k)
        refuse(fmt::format("a GPT-2 has Dk = Dv = D / H ({} / {}); leave --d-k and --d-v out", c.d_model, c.heads));
    if (c.pad_token >= 0 || c.bug != AttnBug::None || c.attention_variant())
        refuse("the model masks a pad token, carries a planted bug or runs an attention variant");
    for (int32_t id = 0; id < task.vocab(); ++id)
        if (task.token_byte(id) < 0)
            refuse(
                fmt::format("task {} has the token '{}', which no byte spells (a GPT-2 vocabulary here is one byte a "
                            "token: tasks chars, induction and distance with --symbols at most {})",
                            task.name(), task.token_text(id), kSymbolAlphabetSize));
    // the folder: an existing one, or one that can be made under a writable parent
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path p = fs::absolute(dir, ec).lexically_normal();
    if (fs::exists(p, ec) && !fs::is_directory(p, ec))
        refuse(fmt::format("'{}' is a file; give a folder (created if missing)", dir));
    while (!fs::exists(p, ec) && p.has_parent_path() && p.parent_path() != p) p = p.parent_path();
    if (!fs::is_directory(p, ec) || ::access(p.c_str(), W_OK) != 0)
        refuse(fmt::format("cannot write into '{}' (the folder '{}' is not writable)", dir, p.string()));
}

void check_outside_gpt2_export(const std::string& dir,
                               std::initializer_list<std::pair<std::string_view, const std::string*>> outputs) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path folder = fs::weakly_canonical(fs::absolute(dir, ec), ec);
    if (ec) return;  // check_gpt2_export names what is wrong with the folder
    if (!folder.has_filename()) folder = folder.parent_path();
    const std::string inside = folder.string() + "/";
    for (const auto& [opt, path] : outputs) {
        if (path->empty() || *path == "-") continue;
        const std::string target = with_option(opt, [p = path] { return write_target(*p); });
        const fs::path file = fs::weakly_canonical(fs::absolute(target), ec);
        if (ec) continue;
        if (file == folder || file.string().rfind(inside, 0) == 0)
            throw InputError(fmt::format("{}: '{}' lies inside the folder of {} ('{}'), which the export fills; "
                                         "give each output its own place",
                                         opt, *path, kOpt, dir));
    }
}

void export_gpt2(const std::string& dir, TrainableStack& model, const Task& task,
                 const std::map<std::string, std::string>& provenance) {
    check_gpt2_export(model.config(), task, dir);
    const ModelConfig& c = model.config();
    const int64_t D = c.d_model;
    Gpt2Model g;
    g.config.vocab_size = c.vocab;
    g.config.n_positions = c.max_seq;
    g.config.n_embd = D;
    g.config.n_layer = c.layers;
    g.config.n_head = c.heads;
    g.config.n_inner = c.mlp ? c.d_ff : 1;
    g.config.layer_norm_epsilon = 1e-5f;  // the tiny Transformer's LayerNorm
    g.config.activation = "gelu_new";     // its GELU is the tanh form
    g.config.tie_word_embeddings = false;
    g.stack = model.to_stack();  // the same stack: pre-norm, causal, its own head
    if (!c.mlp) {
        // a GPT-2 block has an MLP: one hidden unit with zero weights and biases adds W_2 gelu(0) + 0 = 0
        g.stack.config.mlp = true;
        g.stack.config.d_ff = 1;
        for (StackLayer& L : g.stack.layers) {
            L.ln2_gamma = Tensor({D}, 1.0f);
            L.ln2_beta = Tensor({D});
            L.fc = Linear(D, 1);
            L.proj = Linear(1, D);
        }
    }
    std::vector<std::string> tokens;
    for (int32_t id = 0; id < task.vocab(); ++id) tokens.emplace_back(1, static_cast<char>(task.token_byte(id)));
    with_option(kOpt, [&] { save_gpt2_folder(dir, g, tokens, provenance); });
}

}  // namespace attn::cli
