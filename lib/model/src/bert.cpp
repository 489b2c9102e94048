// bert.cpp: loading and running a BERT encoder (see attn/model/bert.hpp for the shapes).
#include "attn/model/bert.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "attn/core/attention.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/guards.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/io/data_files.hpp"

namespace attn {

namespace fs = std::filesystem;

static constexpr const char* kFetchHint = "run scripts/fetch-model.sh to fetch it";

std::string default_model_dir() {
    if (const char* env = std::getenv("ATTN_MODEL_DIR"); env != nullptr && env[0] != '\0') return env;
    // data/models/... in the working folder, an installed share/attn/data, or above the executable
    return find_data("models/all-MiniLM-L6-v2").value_or("data/models/all-MiniLM-L6-v2");
}

ModelFiles locate_model(const std::string& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw InputError(fmt::format("no model folder at '{}' ({})", dir, kFetchHint));
    ModelFiles f;
    f.dir = dir;
    const fs::path d(dir);
    f.config = (d / "config.json").string();
    f.vocab = (d / "vocab.txt").string();
    f.weights = (d / "model.safetensors").string();
    for (const std::string* p : {&f.config, &f.vocab, &f.weights})
        if (const std::string why = file_kind_problem(*p); !why.empty())  // missing, or a folder, a FIFO, a device
            throw InputError(fmt::format("the model folder '{}' {}: {} {} ({})", dir,
                                         why == "is missing" ? "is incomplete" : "is broken",
                                         fs::path(*p).filename().string(), why, kFetchHint));
    auto optional = [&](const fs::path& p) { return fs::is_regular_file(p, ec) ? p.string() : std::string(); };
    f.st_config = optional(d / "sentence_bert_config.json");
    f.tokenizer_config = optional(d / "tokenizer_config.json");
    f.modules = optional(d / "modules.json");
    f.pooling = optional(d / "1_Pooling" / "config.json");
    if (f.pooling.empty()) f.pooling = optional(d / "pooling_config.json");
    return f;
}

std::string model_name(const ModelFiles& files) {
    fs::path d = fs::path(files.dir).lexically_normal();
    if (!d.has_filename()) d = d.parent_path();  // "dir/" -> "dir"
    const std::string name = d.filename().string();
    return name.empty() || name == "." ? std::string("model") : name;
}

static int64_t json_int(const nlohmann::json& j, const char* key, const std::string& what, int64_t lo, int64_t hi) {
    if (!j.contains(key) || !j[key].is_number_integer())
        throw InputError(fmt::format("{}: needs an integer \"{}\"", what, key));
    const int64_t v = j[key].get<int64_t>();
    if (v < lo || v > hi) throw InputError(fmt::format("{}: \"{}\" = {} is outside [{}, {}]", what, key, v, lo, hi));
    return v;
}

BertConfig read_bert_config(const ModelFiles& files) {
    const nlohmann::json j = parse_json_relaxed(read_file(files.config), files.config);
    if (!j.is_object()) throw InputError(files.config + ": not a JSON object");
    BertConfig c;
    c.vocab_size = json_int(j, "vocab_size", files.config, 1, 10'000'000);
    c.hidden = json_int(j, "hidden_size", files.config, 1, 65536);
    c.layers = json_int(j, "num_hidden_layers", files.config, 1, 1000);
    c.heads = json_int(j, "num_attention_heads", files.config, 1, 1024);
    c.intermediate = json_int(j, "intermediate_size", files.config, 1, 1 << 20);
    c.max_position = json_int(j, "max_position_embeddings", files.config, 2, 1 << 20);
    c.type_vocab = json_int(j, "type_vocab_size", files.config, 1, 1024);
    if (j.contains("layer_norm_eps")) {
        // As a float, the type LayerNorm adds it in: 1e-300 would be 0, and eps <= 0
        // or NaN turns a constant row into NaN, which softmax then treats as masked.
        const float eps = j["layer_norm_eps"].is_number() ? j["layer_norm_eps"].get<float>() : NAN;
        if (!(eps > 0.0f && eps < 1.0f))
            throw InputError(fmt::format("{}: \"layer_norm_eps\" must be a positive number below 1 that a float can hold",
                                         files.config));
        c.layer_norm_eps = eps;
    }
    if (j.contains("model_type") && j["model_type"] != "bert")
        throw InputError(fmt::format("{}: model_type is {}, not \"bert\" (the encoder architecture attn reads)",
                                     files.config, j["model_type"].dump()));
    if (j.contains("hidden_act") && j["hidden_act"] != "gelu")
        throw InputError(fmt::format("{}: \"hidden_act\" {} is not one attn implements (only \"gelu\", the erf form)",
                                     files.config, j["hidden_act"].dump()));
    if (j.contains("position_embedding_type") && !j["position_embedding_type"].is_null() &&
        j["position_embedding_type"] != "absolute")
        throw InputError(fmt::format("{}: \"position_embedding_type\" {} is not one attn implements (only \"absolute\")",
                                     files.config, j["position_embedding_type"].dump()));
    for (const char* key : {"is_decoder", "add_cross_attention"})
        if (j.contains(key) && j[key] == true)
            throw InputError(fmt::format("{}: \"{}\" is true; attn runs BERT as an encoder only", files.config, key));
    if (c.hidden % c.heads != 0)
        throw InputError(fmt::format("{}: hidden_size {} is not divisible by {} heads", files.config, c.hidden, c.heads));
    c.max_len = c.max_position;
    if (!files.st_config.empty()) {
        const nlohmann::json s = parse_json_relaxed(read_file(files.st_config), files.st_config);
        if (s.is_object() && s.contains("max_seq_length"))
            c.max_len = std::min(c.max_position, json_int(s, "max_seq_length", files.st_config, 2, c.max_position));
    }
    // tokenizer_config.json: do_lower_case (HF's default: true); strip_accents null follows it
    if (!files.tokenizer_config.empty()) {
        const std::string& what = files.tokenizer_config;
        const nlohmann::json t = parse_json_relaxed(read_file(what), what);
        if (!t.is_object()) throw InputError(what + ": not a JSON object");
        auto flag = [&](const char* key, bool dflt) {
            if (!t.contains(key) || t[key].is_null()) return dflt;
            if (!t[key].is_boolean()) throw InputError(fmt::format("{}: \"{}\" must be true, false or null", what, key));
            return t[key].get<bool>();
        };
        c.casing.lower_case = flag("do_lower_case", true);
        c.casing.strip_accents = flag("strip_accents", c.casing.lower_case);
        if (!flag("tokenize_chinese_chars", true))
            throw InputError(what + ": \"tokenize_chinese_chars\" is false, which attn's WordPiece does not implement");
        if (!flag("do_basic_tokenize", true))
            throw InputError(what + ": \"do_basic_tokenize\" is false, which attn's WordPiece does not implement");
    }
    // sentence-transformers' Pooling module: the mean (MiniLM's) or the [CLS] vector
    if (!files.pooling.empty()) {
        const std::string& what = files.pooling;
        const nlohmann::json p = parse_json_relaxed(read_file(what), what);
        if (!p.is_object()) throw InputError(what + ": not a JSON object");
        std::vector<std::string> on;
        for (auto it = p.begin(); it != p.end(); ++it)
            if (it.key().rfind("pooling_mode_", 0) == 0 && it.value() == true) on.push_back(it.key());
        if (on.size() != 1 || (on[0] != "pooling_mode_mean_tokens" && on[0] != "pooling_mode_cls_token"))
            throw InputError(fmt::format("{}: the pooling is {}; attn implements one of pooling_mode_mean_tokens or "
                                         "pooling_mode_cls_token",
                                         what, on.empty() ? std::string("none") : fmt::format("{}", fmt::join(on, " + "))));
        c.pooling = on[0] == "pooling_mode_cls_token" ? BertPooling::Cls : BertPooling::Mean;
    }
    // modules.json: the vector is L2-normalised when a Normalize module follows the pooling
    if (!files.modules.empty()) {
        const nlohmann::json m = parse_json_relaxed(read_file(files.modules), files.modules);
        if (!m.is_array()) throw InputError(files.modules + ": not a JSON list of modules");
        c.normalize = false;
        for (const auto& mod : m)
            if (mod.is_object() && mod.contains("type") && mod["type"].is_string() &&
                mod["type"].get<std::string>().find("Normalize") != std::string::npos)
                c.normalize = true;
    }
    return c;
}

WordPieceTokenizer load_tokenizer(const ModelFiles& files, const BertConfig& config) {
    WordPieceTokenizer tok = WordPieceTokenizer::load(files.vocab, config.max_len);
    tok.set_casing(config.casing);
    // A vocabulary shifted by a line would run silently on the wrong embedding rows.
    if (tok.vocab_size() != config.vocab_size)
        throw InputError(fmt::format("{}: has {} tokens but {} says vocab_size is {}", files.vocab, tok.vocab_size(),
                                     files.config, config.vocab_size));
    return tok;
}

StackConfig bert_stack_config(const BertConfig& c) {
    return StackConfig{.vocab = c.vocab_size, .positions = c.max_position, .d_model = c.hidden, .heads = c.heads,
                       .layers = c.layers, .d_ff = c.intermediate, .token_types = c.type_vocab, .causal = false,
                       .norm = NormPlace::Post, .act = MlpActivation::GeluErf, .eps = c.layer_norm_eps, .lm_head = false};
}

BertModel BertModel::load(const ModelFiles& files) {
    BertModel m;
    m.files = files;
    m.config = read_bert_config(files);
    const BertConfig& c = m.config;
    m.stack = TransformerStack(bert_stack_config(c));
    TransformerStack& s = m.stack;
    const SafeTensors st = SafeTensors::load(files.weights);
    const std::string pre = st.has("bert.embeddings.word_embeddings.weight") ? "bert." : "";
    const int64_t D = c.hidden, I = c.intermediate;
    // A NaN, infinite or absurd weight would run silently (NaN attention rows read as fully masked):
    // check_weight_values refuses it, naming the tensor.
    auto get = [&](const std::string& name, const Shape& shape) {
        Tensor t = st.to_float(pre + name, shape);
        check_weight_values(t, files.weights, pre + name);
        return t;
    };
    s.tok_emb = get("embeddings.word_embeddings.weight", {c.vocab_size, D});
    s.pos_emb = get("embeddings.position_embeddings.weight", {c.max_position, D});
    s.type_emb = get("embeddings.token_type_embeddings.weight", {c.type_vocab, D});
    s.emb_ln_gamma = get("embeddings.LayerNorm.weight", {D});
    s.emb_ln_beta = get("embeddings.LayerNorm.bias", {D});
    for (int64_t l = 0; l < c.layers; ++l) {
        const std::string p = fmt::format("encoder.layer.{}.", l);
        StackLayer& L = s.layers[static_cast<size_t>(l)];
        L.attention.q_proj.W = get(p + "attention.self.query.weight", {D, D});
        L.attention.q_proj.b = get(p + "attention.self.query.bias", {D});
        L.attention.k_proj.W = get(p + "attention.self.key.weight", {D, D});
        L.attention.k_proj.b = get(p + "attention.self.key.bias", {D});
        L.attention.v_proj.W = get(p + "attention.self.value.weight", {D, D});
        L.attention.v_proj.b = get(p + "attention.self.value.bias", {D});
        L.attention.o_proj.W = get(p + "attention.output.dense.weight", {D, D});
        L.attention.o_proj.b = get(p + "attention.output.dense.bias", {D});
        L.ln1_gamma = get(p + "attention.output.LayerNorm.weight", {D});
        L.ln1_beta = get(p + "attention.output.LayerNorm.bias", {D});
        L.fc.W = get(p + "intermediate.dense.weight", {I, D});
        L.fc.b = get(p + "intermediate.dense.bias", {I});
        L.proj.W = get(p + "output.dense.weight", {D, I});
        L.proj.b = get(p + "output.dense.bias", {D});
        L.ln2_gamma = get(p + "output.LayerNorm.weight", {D});
        L.ln2_beta = get(p + "output.LayerNorm.bias", {D});
    }
    m.prepare();
    return m;
}

BertModel BertModel::random(const BertConfig& c, uint64_t seed) {
    // Every weight tensor gets its own Rng stream, so the values do not depend on the fill order.
    BertModel m;
    m.config = c;
    m.stack = TransformerStack(bert_stack_config(c));  // biases 0, LayerNorm gamma 1 beta 0
    TransformerStack& s = m.stack;
    uint64_t stream = 0;
    auto normal = [&](Tensor& t) {
        Rng rng(seed, ++stream);
        for (float& v : t.data) v = 0.02f * rng.normal();
    };
    normal(s.tok_emb);
    normal(s.pos_emb);
    normal(s.type_emb);
    for (StackLayer& L : s.layers) {
        for (Linear* lin : {&L.attention.q_proj, &L.attention.k_proj, &L.attention.v_proj, &L.attention.o_proj})
            normal(lin->W);
        normal(L.fc.W);
        normal(L.proj.W);
    }
    m.prepare();
    return m;
}

std::string bert_gemm_path(const BertOptions& opt) { return gemm_path(opt.gemm, opt.bf16_weights, opt.amx, "bert"); }

BertOutput BertModel::forward(const std::vector<std::vector<int32_t>>& ids, const BertOptions& opt,
                              int32_t pad_id) const {
    // ids: B lists, padded to T; the stack's hidden (B, T, D), then sentence (B, D)
    const BertConfig& c = config;
    const int64_t B = static_cast<int64_t>(ids.size()), D = c.hidden;
    if (B == 0) throw InputError("bert: the batch is empty");
    for (const auto& s : ids)
        if (s.empty()) throw InputError("bert: a sentence has no tokens (it needs at least [CLS] and [SEP])");
    (void)bert_gemm_path(opt);  // a forced kernel this CPU lacks: InputError naming bert
    const std::string vocab = files.vocab.empty() ? "bert (random weights)" : files.vocab;
    BertOutput out;
    static_cast<BatchOutput&>(out) = stack.forward_batch(ids, opt, pad_id, vocab);
    // mean over the real tokens (or the [CLS] row), then L2 normalisation (F.normalize, eps 1e-12)
    const int64_t T = out.hidden.dim(1);
    out.sentence = Tensor({B, D});
    for (int64_t b = 0; b < B; ++b) {
        const int64_t len = c.pooling == BertPooling::Cls ? 1 : out.lengths[static_cast<size_t>(b)];
        float* sv = out.sentence.ptr() + b * D;
        for (int64_t d = 0; d < D; ++d) {
            double acc = 0;
            for (int64_t t = 0; t < len; ++t) acc += out.hidden.data[static_cast<size_t>((b * T + t) * D + d)];
            sv[d] = static_cast<float>(acc / static_cast<double>(len));
        }
    }
    if (c.normalize) l2_normalize_rows(out.sentence.ptr(), B, D);
    return out;
}

std::vector<int64_t> find_word(const Encoding& enc, const std::string& word, int occurrence) {
    // A special token typed in the text is a word of its own (WordPieceTokenizer::encode).
    const bool special = std::find(std::begin(kBertSpecialTokens), std::end(kBertSpecialTokens), word) !=
                         std::end(kBertSpecialTokens);
    const std::vector<std::string> norm = special ? std::vector<std::string>{word} : bert_basic_tokenize(word, enc.casing);
    if (norm.size() != 1)
        throw InputError(fmt::format("'{}' is not one word (no spaces or punctuation around it)", word));
    if (occurrence < 1) throw InputError(fmt::format("the occurrence must be 1 or more, got {}", occurrence));
    // the basic words of the text, recovered from the token strings and word_of
    std::vector<std::string> words;
    for (size_t t = 0; t < enc.tokens.size(); ++t) {
        const int32_t w = enc.word_of[t];
        if (w < 0) continue;
        if (static_cast<size_t>(w) >= words.size()) words.resize(static_cast<size_t>(w) + 1);
        const std::string& piece = enc.tokens[t];
        words[static_cast<size_t>(w)] += piece.rfind("##", 0) == 0 ? piece.substr(2) : piece;
    }
    // (a word WordPiece could not cover reads "[UNK]" here and cannot be probed)
    std::vector<int64_t> pos;
    int seen = 0;
    int32_t hit = -1;
    for (size_t w = 0; w < words.size() && hit < 0; ++w)
        if (words[w] == norm[0] && ++seen == occurrence) hit = static_cast<int32_t>(w);
    if (hit < 0) {
        std::string list;
        for (size_t w = 0; w < words.size() && w < 30; ++w) list += (w ? ", " : "") + words[w];
        if (seen > 0)
            throw InputError(fmt::format("'{}' occurs {} time(s) in the text, not {}", word, seen, occurrence));
        if (words.empty()) throw InputError(fmt::format("'{}' is not a word of the text (it has none)", word));
        throw InputError(fmt::format("'{}' is not a word of the text (its words: {})", word, list));
    }
    for (size_t t = 0; t < enc.tokens.size(); ++t)
        if (enc.word_of[t] == hit) pos.push_back(static_cast<int64_t>(t));
    return pos;
}

}  // namespace attn
