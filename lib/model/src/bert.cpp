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

// What provides a missing file: the default folder is attn's own download (`attn model fetch`); a folder
// the user names was saved by a library, and its save call writes the piece.
static bool is_fetched_folder(const std::string& dir) {
    const char* env = std::getenv("ATTN_MODEL_DIR");
    return (env == nullptr || env[0] == '\0') && dir == default_model_dir();
}

std::string default_model_dir() {
    if (const char* env = std::getenv("ATTN_MODEL_DIR"); env != nullptr && env[0] != '\0') return env;
    // data/models/... in the working folder, the per-user data folder (`attn model fetch` puts it there),
    // an installed share/attn/data, or above the executable
    if (auto found = find_data("models/all-MiniLM-L6-v2")) return *found;
    const std::string user = user_data_dir();
    return user.empty() ? std::string("data/models/all-MiniLM-L6-v2") : user + "/models/all-MiniLM-L6-v2";
}

ModelFiles locate_model(const std::string& dir) {
    std::error_code ec;
    const bool fetched = is_fetched_folder(dir);
    if (!fs::is_directory(dir, ec))
        throw InputError(fetched ? fmt::format("no model folder at '{}' (run `attn model fetch` to download "
                                               "all-MiniLM-L6-v2 there, or give --model DIR)",
                                               dir)
                                 : fmt::format("no model folder at '{}'", dir));
    ModelFiles f;
    f.dir = dir;
    const fs::path d(dir);
    // a folder, a FIFO or a device where a file belongs is broken, not missing
    for (const char* name : {"config.json", "model.safetensors", "vocab.txt", "tokenizer.json"})
        if (const std::string why = file_kind_problem((d / name).string()); !why.empty() && why != "is missing")
            throw InputError(fmt::format("the model folder '{}' is broken: {} {}", dir, name, why));
    auto optional = [&](const fs::path& p) { return fs::is_regular_file(p, ec) ? p.string() : std::string(); };
    auto missing = [&](const char* name, const char* writer) {
        return InputError(fmt::format("the model folder '{}' is incomplete: {} is missing ({})", dir, name,
                                      fetched ? "run `attn model fetch` to download the model again" : writer));
    };
    f.config = (d / "config.json").string();
    f.weights = (d / "model.safetensors").string();
    if (optional(f.config).empty()) throw missing("config.json", "the model's save_pretrained(folder) writes it");
    if (optional(f.weights).empty())
        throw missing("model.safetensors",
                      optional(d / "pytorch_model.bin").empty()
                          ? "the model's save_pretrained(folder) writes it"
                          : "attn reads safetensors only: save_pretrained(folder, safe_serialization=True) writes it "
                            "instead of pytorch_model.bin");
    f.vocab = optional(d / "vocab.txt");
    f.tokenizer_json = optional(d / "tokenizer.json");
    if (f.vocab.empty() && f.tokenizer_json.empty())
        throw missing("the tokenizer (vocab.txt or tokenizer.json)",
                      "the tokenizer's save_pretrained(folder) writes it; SentenceTransformer.save does too");
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

// sentence-transformers' truncation length, as its Transformer module sets it: max_seq_length from
// sentence_bert_config.json when it is there, else min(max_position_embeddings, the tokenizer's
// model_max_length) (sentence-transformers 6 saves only the latter, in tokenizer_config.json), else
// the position table. Counts [CLS] and [SEP].
static int64_t read_max_len(const ModelFiles& files, int64_t max_position) {
    if (!files.st_config.empty()) {
        const nlohmann::json s = parse_json_relaxed(read_file(files.st_config), files.st_config);
        if (s.is_object() && s.contains("max_seq_length") && !s["max_seq_length"].is_null())
            return std::min(max_position, json_int(s, "max_seq_length", files.st_config, 2, max_position));
    }
    if (!files.tokenizer_config.empty()) {
        const nlohmann::json t = parse_json_relaxed(read_file(files.tokenizer_config), files.tokenizer_config);
        // transformers writes a huge number (1e30) for "no limit": the position table then decides
        if (t.is_object() && t.contains("model_max_length") && t["model_max_length"].is_number()) {
            const double m = t["model_max_length"].get<double>();
            if (!(m >= 2))
                throw InputError(fmt::format("{}: \"model_max_length\" must be at least 2 ([CLS] and [SEP]), got {}",
                                             files.tokenizer_config, t["model_max_length"].dump()));
            return m < static_cast<double>(max_position) ? static_cast<int64_t>(m) : max_position;
        }
    }
    return max_position;
}

// modules.json: the vector is L2-normalised when a Normalize module follows the pooling (any
// version's module path: sentence_transformers.models.Normalize, ...base.modules.normalize.Normalize)
static bool normalize_of(const ModelFiles& files) {
    if (files.modules.empty()) return true;
    const nlohmann::json m = parse_json_relaxed(read_file(files.modules), files.modules);
    if (!m.is_array()) throw InputError(files.modules + ": not a JSON list of modules");
    for (const auto& mod : m)
        if (mod.is_object() && mod.contains("type") && mod["type"].is_string() &&
            mod["type"].get<std::string>().find("Normalize") != std::string::npos)
            return true;
    return false;
}

// sentence-transformers 6's "pooling_mode": "mean" or "cls" (the two attn implements).
static BertPooling pooling_mode_of(const nlohmann::json& mode, const std::string& what) {
    const std::string m = mode.is_string() ? mode.get<std::string>() : mode.dump();
    if (m == "mean" || m == "mean_tokens") return BertPooling::Mean;
    if (m == "cls" || m == "cls_token") return BertPooling::Cls;
    throw InputError(fmt::format("{}: \"pooling_mode\" is {}; attn implements \"mean\" and \"cls\"", what,
                                 mode.dump()));
}

// The Pooling config of sentence-transformers before 6: one pooling_mode_* flag true.
static BertPooling pooling_flags_of(const nlohmann::json& p, const std::string& what) {
    std::vector<std::string> on;
    for (auto it = p.begin(); it != p.end(); ++it)
        if (it.key().rfind("pooling_mode_", 0) == 0 && it.value() == true) on.push_back(it.key());
    if (on.size() != 1 || (on[0] != "pooling_mode_mean_tokens" && on[0] != "pooling_mode_cls_token"))
        throw InputError(fmt::format("{}: the pooling is {}; attn implements one of pooling_mode_mean_tokens or "
                                     "pooling_mode_cls_token",
                                     what, on.empty() ? std::string("none") : fmt::format("{}", fmt::join(on, " + "))));
    return on[0] == "pooling_mode_cls_token" ? BertPooling::Cls : BertPooling::Mean;
}

static nlohmann::json read_tokenizer_json(const ModelFiles& files) {
    const nlohmann::json j = parse_json_relaxed(read_file(files.tokenizer_json), files.tokenizer_json);
    if (!j.is_object()) throw InputError(files.tokenizer_json + ": not a JSON object");
    return j;
}

// The case steps of tokenizer.json's normaliser, which must be BERT's (BertNormalizer, and
// BertPreTokenizer after it): what attn's WordPiece runs.
static BertCasing tokenizer_json_casing(const nlohmann::json& j, const std::string& what) {
    const nlohmann::json n = j.value("normalizer", nlohmann::json());
    if (!n.is_object() || n.value("type", "") != "BertNormalizer")
        throw InputError(fmt::format("{}: the normalizer is {}, not BertNormalizer (the BERT normalisation attn's "
                                     "WordPiece runs)",
                                     what, n.is_object() ? n.value("type", nlohmann::json("?")).dump() : n.dump()));
    const nlohmann::json pre = j.value("pre_tokenizer", nlohmann::json());
    if (!pre.is_object() || pre.value("type", "") != "BertPreTokenizer")
        throw InputError(fmt::format("{}: the pre_tokenizer is {}, not BertPreTokenizer (the split attn's WordPiece "
                                     "runs)",
                                     what,
                                     pre.is_object() ? pre.value("type", nlohmann::json("?")).dump() : pre.dump()));
    auto flag = [&](const char* key, bool dflt) {
        if (!n.contains(key) || n[key].is_null()) return dflt;
        if (!n[key].is_boolean())
            throw InputError(fmt::format("{}: normalizer.{} must be true, false or null", what, key));
        return n[key].get<bool>();
    };
    if (!flag("clean_text", true) || !flag("handle_chinese_chars", true))
        throw InputError(what + ": normalizer.clean_text and handle_chinese_chars must be true (attn's WordPiece "
                                "always runs both)");
    BertCasing c;
    c.lower_case = flag("lowercase", true);
    c.strip_accents = flag("strip_accents", c.lower_case);  // null: as lowercase, as BERT does
    return c;
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
            throw InputError(fmt::format(
                "{}: \"layer_norm_eps\" must be a positive number below 1 that a float can hold", files.config));
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
        throw InputError(
            fmt::format("{}: \"position_embedding_type\" {} is not one attn implements (only \"absolute\")",
                        files.config, j["position_embedding_type"].dump()));
    for (const char* key : {"is_decoder", "add_cross_attention"})
        if (j.contains(key) && j[key] == true)
            throw InputError(fmt::format("{}: \"{}\" is true; attn runs BERT as an encoder only", files.config, key));
    if (c.hidden % c.heads != 0)
        throw InputError(
            fmt::format("{}: hidden_size {} is not divisible by {} heads", files.config, c.hidden, c.heads));
    c.max_len = read_max_len(files, c.max_position);
    // tokenizer_config.json: do_lower_case (HF's default: true); strip_accents null follows it
    if (!files.tokenizer_config.empty()) {
        const std::string& what = files.tokenizer_config;
        const nlohmann::json t = parse_json_relaxed(read_file(what), what);
        if (!t.is_object()) throw InputError(what + ": not a JSON object");
        auto flag = [&](const char* key, bool dflt) {
            if (!t.contains(key) || t[key].is_null()) return dflt;
            if (!t[key].is_boolean())
                throw InputError(fmt::format("{}: \"{}\" must be true, false or null", what, key));
            return t[key].get<bool>();
        };
        c.casing.lower_case = flag("do_lower_case", true);
        c.casing.strip_accents = flag("strip_accents", c.casing.lower_case);
        if (!flag("tokenize_chinese_chars", true))
            throw InputError(what + ": \"tokenize_chinese_chars\" is false, which attn's WordPiece does not implement");
        if (!flag("do_basic_tokenize", true))
            throw InputError(what + ": \"do_basic_tokenize\" is false, which attn's WordPiece does not implement");
    }
    // tokenizer.json, what a fast tokenizer runs: its normaliser's settings win over tokenizer_config.json's
    if (!files.tokenizer_json.empty())
        c.casing = tokenizer_json_casing(read_tokenizer_json(files), files.tokenizer_json);
    // sentence-transformers' Pooling module: the mean (MiniLM's) or the [CLS] vector
    if (!files.pooling.empty()) {
        const std::string& what = files.pooling;
        const nlohmann::json p = parse_json_relaxed(read_file(what), what);
        if (!p.is_object()) throw InputError(what + ": not a JSON object");
        c.pooling = p.contains("pooling_mode") ? pooling_mode_of(p["pooling_mode"], what)  // sentence-transformers 6
                                               : pooling_flags_of(p, what);                 // its booleans before
    }
    c.normalize = normalize_of(files);
    return c;
}

// tokenizer.json's WordPiece vocabulary, token by id (the ids 0..n-1, each once).
static std::vector<std::string> tokenizer_json_vocab(const nlohmann::json& j, const std::string& what) {
    const nlohmann::json m = j.value("model", nlohmann::json());
    if (!m.is_object() || m.value("type", "") != "WordPiece")
        throw InputError(fmt::format("{}: the model is {}, not WordPiece (BERT's tokenizer)", what,
                                     m.is_object() ? m.value("type", nlohmann::json("?")).dump() : m.dump()));
    if (m.value("continuing_subword_prefix", "##") != "##" || m.value("max_input_chars_per_word", 100) != 100)
        throw InputError(what + ": model.continuing_subword_prefix must be \"##\" and max_input_chars_per_word 100 "
                                "(BERT's, which attn's WordPiece runs)");
    if (!m.contains("vocab") || !m["vocab"].is_object() || m["vocab"].empty())
        throw InputError(what + ": model.vocab must be an object of tokens and their ids");
    std::vector<std::string> vocab(m["vocab"].size());
    std::vector<bool> seen(vocab.size(), false);
    for (auto it = m["vocab"].begin(); it != m["vocab"].end(); ++it) {
        const int64_t id = it.value().is_number_integer() ? it.value().get<int64_t>() : -1;
        if (id < 0 || id >= static_cast<int64_t>(vocab.size()) || seen[static_cast<size_t>(id)])
            throw InputError(fmt::format("{}: model.vocab: the ids must be 0..{}, each once; '{}' has {}", what,
                                         vocab.size() - 1, it.key(), it.value().dump()));
        seen[static_cast<size_t>(id)] = true;
        vocab[static_cast<size_t>(id)] = it.key();
    }
    return vocab;
}

WordPieceTokenizer load_tokenizer(const ModelFiles& files, const BertConfig& config) {
    WordPieceTokenizer tok =
        !files.vocab.empty()
            ? WordPieceTokenizer::load(files.vocab, config.max_len)
            : WordPieceTokenizer(tokenizer_json_vocab(read_tokenizer_json(files), files.tokenizer_json), config.max_len,
                                 files.tokenizer_json);
    tok.set_casing(config.casing);
    // A vocabulary shifted by a line would run silently on the wrong embedding rows.
    if (tok.vocab_size() != config.vocab_size)
        throw InputError(fmt::format("{}: has {} tokens but {} says vocab_size is {}",
                                     files.vocab.empty() ? files.tokenizer_json : files.vocab, tok.vocab_size(),
                                     files.config, config.vocab_size));
    return tok;
}

StackConfig bert_stack_config(const BertConfig& c) {
    return StackConfig{.vocab = c.vocab_size,
                       .positions = c.max_position,
                       .d_model = c.hidden,
                       .heads = c.heads,
                       .layers = c.layers,
                       .d_ff = c.intermediate,
                       .token_types = c.type_vocab,
                       .causal = false,
                       .norm = NormPlace::Post,
                       .act = MlpActivation::GeluErf,
                       .eps = c.layer_norm_eps,
                       .lm_head = false};
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

std::string bert_gemm_path(const BertOptions& opt) {
    return gemm_kernel_name(opt.gemm, opt.bf16_weights, opt.amx, "bert");
}

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
    const std::vector<std::string> norm =
        special ? std::vector<std::string>{word} : bert_basic_tokenize(word, enc.casing);
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
