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

#include <Eigen/Core>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "attn/core/attention.hpp"
#include "attn/io/dump.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "attn/cpu/features.hpp"
#include "attn/cpu/gemm.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/nn/backend.hpp"
#include "attn/nn/fast_ops.hpp"
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
        if (!fs::is_regular_file(*p, ec))
            throw InputError(fmt::format("the model folder '{}' is incomplete: {} is missing ({})", dir,
                                         fs::path(*p).filename().string(), kFetchHint));
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

BertModel BertModel::load(const ModelFiles& files) {
    BertModel m;
    m.files = files;
    m.config = read_bert_config(files);
    const BertConfig& c = m.config;
    const SafeTensors st = SafeTensors::load(files.weights);
    const std::string pre = st.has("bert.embeddings.word_embeddings.weight") ? "bert." : "";
    const int64_t D = c.hidden, I = c.intermediate;
    // A NaN or infinite weight would run silently (NaN attention rows read as fully masked).
    auto get = [&](const std::string& name, const Shape& shape) {
        Tensor t = st.to_float(pre + name, shape);
        const auto bad = std::find_if(t.data.begin(), t.data.end(), [](float v) { return !std::isfinite(v); });
        if (bad != t.data.end())
            throw InputError(fmt::format("{}: tensor '{}' holds the non-finite value {} at flat index {}", files.weights,
                                         pre + name, *bad, bad - t.data.begin()));
        return t;
    };
    m.word_emb = get("embeddings.word_embeddings.weight", {c.vocab_size, D});
    m.pos_emb = get("embeddings.position_embeddings.weight", {c.max_position, D});
    m.type_emb = get("embeddings.token_type_embeddings.weight", {c.type_vocab, D});
    m.emb_ln_gamma = get("embeddings.LayerNorm.weight", {D});
    m.emb_ln_beta = get("embeddings.LayerNorm.bias", {D});
    for (int64_t l = 0; l < c.layers; ++l) {
        const std::string p = fmt::format("encoder.layer.{}.", l);
        BertLayer L;
        L.attention = MultiHeadAttention(MhaConfig{D, c.heads, 0, 0, true});
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
        L.ffn_in.W = get(p + "intermediate.dense.weight", {I, D});
        L.ffn_in.b = get(p + "intermediate.dense.bias", {I});
        L.ffn_out.W = get(p + "output.dense.weight", {D, I});
        L.ffn_out.b = get(p + "output.dense.bias", {D});
        L.ln2_gamma = get(p + "output.LayerNorm.weight", {D});
        L.ln2_beta = get(p + "output.LayerNorm.bias", {D});
        m.layers.push_back(std::move(L));
    }
    m.prepare();
    return m;
}

BertModel BertModel::random(const BertConfig& c, uint64_t seed) {
    // Every weight tensor gets its own Rng stream, so the values do not depend on the fill order.
    BertModel m;
    m.config = c;
    const int64_t D = c.hidden, I = c.intermediate;
    uint64_t stream = 0;
    auto normal = [&](Shape s) {
        Tensor t(std::move(s));
        Rng rng(seed, ++stream);
        for (float& v : t.data) v = 0.02f * rng.normal();
        return t;
    };
    m.word_emb = normal({c.vocab_size, D});
    m.pos_emb = normal({c.max_position, D});
    m.type_emb = normal({c.type_vocab, D});
    m.emb_ln_gamma = Tensor({D}, 1.0f);
    m.emb_ln_beta = Tensor({D});
    for (int64_t l = 0; l < c.layers; ++l) {
        BertLayer L;
        L.attention = MultiHeadAttention(MhaConfig{D, c.heads, 0, 0, true});
        for (Linear* lin : {&L.attention.q_proj, &L.attention.k_proj, &L.attention.v_proj, &L.attention.o_proj}) {
            lin->W = normal({D, D});
            lin->b = Tensor({D});
        }
        L.ln1_gamma = Tensor({D}, 1.0f);
        L.ln1_beta = Tensor({D});
        L.ffn_in.W = normal({I, D});
        L.ffn_in.b = Tensor({I});
        L.ffn_out.W = normal({D, I});
        L.ffn_out.b = Tensor({D});
        L.ln2_gamma = Tensor({D}, 1.0f);
        L.ln2_beta = Tensor({D});
        m.layers.push_back(std::move(L));
    }
    m.prepare();
    return m;
}

// (out, in) row-major -> (in, out) row-major, written at column offset `col` of a (in, ld) matrix.
static void transpose_into(const Tensor& W, float* dst, int64_t ld, int64_t col) {
    const int64_t out = W.dim(0), in = W.dim(1);
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) dst[i * ld + col + o] = W.data[static_cast<size_t>(o * in + i)];
}

void BertModel::prepare() {
    const int64_t D = config.hidden, I = config.intermediate;
    const bool bf16 = bf16_prepared();  // rebuilt below from the new copies
    for (BertLayer& L : layers) {
        const MultiHeadAttention& a = L.attention;
        L.qkv_t = Tensor({D, 3 * D});
        transpose_into(a.q_proj.W, L.qkv_t.ptr(), 3 * D, 0);
        transpose_into(a.k_proj.W, L.qkv_t.ptr(), 3 * D, D);
        transpose_into(a.v_proj.W, L.qkv_t.ptr(), 3 * D, 2 * D);
        L.qkv_b = Tensor({3 * D});
        std::copy(a.q_proj.b.data.begin(), a.q_proj.b.data.end(), L.qkv_b.data.begin());
        std::copy(a.k_proj.b.data.begin(), a.k_proj.b.data.end(), L.qkv_b.data.begin() + D);
        std::copy(a.v_proj.b.data.begin(), a.v_proj.b.data.end(), L.qkv_b.data.begin() + 2 * D);
        L.o_t = Tensor({D, D});
        transpose_into(a.o_proj.W, L.o_t.ptr(), D, 0);
        L.ffn_in_t = Tensor({D, I});
        transpose_into(L.ffn_in.W, L.ffn_in_t.ptr(), I, 0);
        L.ffn_out_t = Tensor({I, D});
        transpose_into(L.ffn_out.W, L.ffn_out_t.ptr(), D, 0);
        // packed for every family's kernel (the generic one runs anywhere: --gemm generic on a
        // CPU where Best is Eigen must run it, not Eigen under its name)
        L.qkv_p = PackedWeight::pack(L.qkv_t);
        L.o_p = PackedWeight::pack(L.o_t);
        L.ffn_in_p = PackedWeight::pack(L.ffn_in_t);
        L.ffn_out_p = PackedWeight::pack(L.ffn_out_t);
    }
    if (bf16) prepare_bf16();
}

void BertModel::prepare_bf16() {
    for (BertLayer& L : layers) {
        L.qkv_h = PackedWeightBf16::pack(L.qkv_t);
        L.o_h = PackedWeightBf16::pack(L.o_t);
        L.ffn_in_h = PackedWeightBf16::pack(L.ffn_in_t);
        L.ffn_out_h = PackedWeightBf16::pack(L.ffn_out_t);
    }
}

bool BertModel::bf16_prepared() const { return !layers.empty() && !layers.front().qkv_h.pairs.empty(); }

// float -> bfloat16 bits, round to nearest even (what vcvtneps2bf16 does; weights are finite)
static uint32_t bf16_bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
}

PackedWeightBf16 PackedWeightBf16::pack(const Tensor& Wt) {
    PackedWeightBf16 p;
    p.n_in = Wt.dim(0);
    p.n_out = Wt.dim(1);
    p.kp = (p.n_in + 31) / 32 * 16;  // pairs, whole AMX tiles of 32 k (zeros past n_in)
    const int64_t strips = (p.n_out + 31) / 32;
    p.pairs.assign(static_cast<size_t>(strips * p.kp * 32), 0u);
    for (int64_t k = 0; k < p.n_in; ++k)
        for (int64_t j = 0; j < p.n_out; ++j)
            p.pairs[static_cast<size_t>(((j / 32) * p.kp + k / 2) * 32 + j % 32)] |=
                bf16_bits(Wt.data[static_cast<size_t>(k * p.n_out + j)]) << (16 * (k % 2));
    return p;
}

bool gemm_bf16_available() { return true; }  // the widened pairs run on every family, generic included

// The projections' work split: pieces of 96 rows x 128 columns of out (N, n_out), shared by
// the threads; fn(r0, r1, c0, c1) computes one, then the GELU runs on it while it is in
// cache. Each element is computed the same way whatever piece holds it, so any split and
// thread count give the same numbers. Pieces go down a column first: consecutive pieces use
// the same 128 columns of the weight (192 KiB at 384 inputs, 768 KiB at 1536), which stay in
// L2 while the rows go by; across a row first, the whole weight (2.4 MB for the feed-forward)
// came in again for every 96 rows. At batch 32 (736 rows) that was 8% of the encoder's time.
template <class Fn>
static void gemm_pieces(float* out, int64_t N, int64_t n_out, int threads, bool gelu, Fn&& fn) {
    constexpr int64_t kRowPiece = 96, kColPiece = 128;
    const int64_t rp = (N + kRowPiece - 1) / kRowPiece, cp = (n_out + kColPiece - 1) / kColPiece;
    parallel_for(rp * cp, threads, [&](int64_t t, int) {
        const int64_t r0 = (t % rp) * kRowPiece, r1 = std::min(N, r0 + kRowPiece);
        const int64_t c0 = (t / rp) * kColPiece, c1 = std::min(n_out, c0 + kColPiece);
        fn(r0, r1, c0, c1);
        if (gelu)
            for (int64_t r = r0; r < r1; ++r) {
                float* row = out + r * n_out + c0;
                nn::gelu_erf_forward_fast(row, row, c1 - c0, 1);
            }
    });
}

const char* bert_gemm_name(BertGemm g) {
    switch (g) {
        case BertGemm::Best: return "best";
        case BertGemm::Avx512: return "avx512";
        case BertGemm::Avx2: return "avx2";
        case BertGemm::Neon: return "neon";
        case BertGemm::Generic: return "generic";
        case BertGemm::Eigen: return "eigen";
    }
    return "?";
}

// BertGemm::Best's family: the widest SIMD one; none (Eigen) on a CPU without one, where
// Eigen's GEMM outruns the plain C++ kernel.
static std::optional<Isa> best_family() {
    const Isa b = gemm::best();
    return b == Isa::generic ? std::nullopt : std::optional<Isa>(b);
}

// The kernel family of a float32 GEMM choice (nullopt: Eigen); InputError when a forced
// kernel does not run here.
static std::optional<Isa> gemm_family(BertGemm which) {
    Isa isa = Isa::generic;
    switch (which) {
        case BertGemm::Best: return best_family();
        case BertGemm::Eigen: return std::nullopt;
        case BertGemm::Avx512: isa = Isa::avx512; break;
        case BertGemm::Avx2: isa = Isa::avx2; break;
        case BertGemm::Neon: isa = Isa::neon; break;
        case BertGemm::Generic: break;
    }
    if (!gemm::available(isa))
        throw InputError(fmt::format("bert: the {} GEMM does not run on this CPU{} (use best or eigen)",
                                     bert_gemm_name(which),
                                     isa_cap() < isa ? fmt::format(" under ATTN_ISA={}", isa_name(isa_cap())) : ""));
    return isa;
}

std::string bert_gemm_path(const BertOptions& opt) {
    if (opt.bf16_weights)
        return opt.amx && cpu_amx_bf16_usable() ? "amx-bf16"
               : gemm::bf16_dot_available()     ? "avx512-bf16"
                                                : fmt::format("{}-widened-bf16", isa_name(gemm::best()));
    const std::optional<Isa> isa = gemm_family(opt.gemm);
    return isa ? std::string(isa_name(*isa)) : "eigen";
}

bool gemm_bf16(float* out, const float* x, const PackedWeightBf16& w, const float* b, int64_t N, int threads, bool gelu,
               bool amx, std::vector<uint16_t>* scratch) {
    if (w.pairs.empty()) return false;
    amx = amx && cpu_amx_bf16_usable();
    const bool dot = gemm::bf16_dot_available();  // vdpbf16ps; else the pairs widened by shifts
    const gemm::StripsPairsFn widened = gemm::strips_widened(gemm::best());
    // x rounded to bf16 pairs once (rows padded to whole 32-row AMX blocks: zeros past N,
    // the only rows not overwritten), then the pieces
    std::vector<uint16_t> own;
    std::vector<uint16_t>& xb = scratch != nullptr ? *scratch : own;
    const int64_t rows_padded = (N + 31) / 32 * 32, row = 2 * w.kp;
    xb.resize(static_cast<size_t>(rows_padded * row));
    std::fill(xb.begin() + N * row, xb.end(), uint16_t{0});
    constexpr int64_t kRowPiece = 96;
    parallel_for((N + kRowPiece - 1) / kRowPiece, threads, [&](int64_t t, int) {
        const int64_t r0 = t * kRowPiece, r1 = std::min(N, r0 + kRowPiece);
        if (dot)
            gemm::rows_to_bf16(xb.data() + r0 * row, x + r0 * w.n_in, r1 - r0, w.n_in, w.kp);
        else
            gemm::rows_to_bf16_widened(xb.data() + r0 * row, x + r0 * w.n_in, r1 - r0, w.n_in, w.kp);
    });
    const auto* xp = reinterpret_cast<const uint32_t*>(xb.data());
    gemm_pieces(out, N, w.n_out, threads, gelu, [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
        if (amx)
            gemm::strips_amx(out, xp, w.pairs.data(), b, w.kp, w.n_out, N, r0, r1, c0, c1);
        else if (dot)
            gemm::strips_bf16(out, xp, w.pairs.data(), b, w.kp, w.n_out, r0, r1, c0, c1);
        else
            widened(out, xp, w.pairs.data(), b, w.kp, w.n_out, r0, r1, c0, c1);
    });
    return true;
}

PackedWeight PackedWeight::pack(const Tensor& Wt) {
    PackedWeight p;
    p.n_in = Wt.dim(0);
    p.n_out = Wt.dim(1);
    p.strips = Tensor({(p.n_out + gemm::kStrip - 1) / gemm::kStrip, p.n_in, gemm::kStrip});
    gemm::pack_strips(p.strips.ptr(), Wt.ptr(), p.n_in, p.n_out);
    return p;
}

// The packed kernel of a choice, null where it does not run here (or for Eigen).
static gemm::StripsFn strips_kernel(BertGemm which) {
    switch (which) {
        case BertGemm::Best: {
            const std::optional<Isa> best = best_family();
            return best ? gemm::strips(*best) : nullptr;
        }
        case BertGemm::Avx512: return gemm::strips(Isa::avx512);
        case BertGemm::Avx2: return gemm::strips(Isa::avx2);
        case BertGemm::Neon: return gemm::strips(Isa::neon);
        case BertGemm::Generic: return gemm::strips(Isa::generic);
        case BertGemm::Eigen: break;
    }
    return nullptr;
}

bool gemm_packed_available(BertGemm which) { return strips_kernel(which) != nullptr; }

bool gemm_packed(float* out, const float* x, const PackedWeight& w, const float* b, int64_t N, int threads, bool gelu,
                 BertGemm which) {
    const gemm::StripsFn kernel = strips_kernel(which);
    if (w.strips.data.empty() || kernel == nullptr) return false;
    gemm_pieces(out, N, w.n_out, threads, gelu, [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
        kernel(out, x, w.strips.ptr(), b, w.n_in, w.n_out, r0, r1, c0, c1);
    });
    return true;
}

void gemm_wt(float* out, const float* x, const float* Wt, const float* b, int64_t N, int64_t n_in, int64_t n_out,
             int threads, bool gelu) {
    // out (N, n_out) = x (N, n_in) . Wt (n_in, n_out) + b, in blocks of 128 output columns;
    // with gelu, each block goes through the GELU right after its bias, while it is in cache
    using MatRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using Strided = Eigen::OuterStride<>;
    constexpr int64_t kBlock = 128;
    const int64_t blocks = (n_out + kBlock - 1) / kBlock;
    parallel_for(blocks, threads, [&](int64_t blk, int) {
        const int64_t c0 = blk * kBlock, cw = std::min(kBlock, n_out - c0);
        Eigen::Map<const MatRM> xm(x, N, n_in);
        Eigen::Map<const MatRM, 0, Strided> wm(Wt + c0, n_in, cw, Strided(n_out));
        Eigen::Map<MatRM, 0, Strided> ym(out + c0, N, cw, Strided(n_out));
        ym.noalias() = xm * wm;
        if (b != nullptr) ym.rowwise() += Eigen::Map<const Eigen::Matrix<float, 1, Eigen::Dynamic>>(b + c0, cw);
        if (gelu)
            for (int64_t r = 0; r < N; ++r) {
                float* row = out + r * n_out + c0;
                nn::gelu_erf_forward_fast(row, row, cw, 1);
            }
    });
}

Backend BertModel::attention_backend(const BertOptions& opt) {
    if (opt.record_attention || opt.attention == BertAttention::Reference) return Backend::Reference;
    return Backend::Flash;
}

BertOutput BertModel::forward(const std::vector<std::vector<int32_t>>& ids, const BertOptions& opt,
                              int32_t pad_id) const {
    // ids: B lists, padded to T; out hidden (B, T, D), attentions L x (B, H, T, T), sentence (B, D)
    const BertConfig& c = config;
    const int64_t B = static_cast<int64_t>(ids.size()), D = c.hidden, H = c.heads, I = c.intermediate;
    if (B == 0) throw InputError("bert: the batch is empty");
    BertOutput out;
    int64_t T = 0;
    for (const auto& s : ids) {
        if (s.empty()) throw InputError("bert: a sentence has no tokens (it needs at least [CLS] and [SEP])");
        if (static_cast<int64_t>(s.size()) > c.max_position)
            throw InputError(fmt::format("bert: a sentence has {} tokens, more than the {} positions the model has",
                                         s.size(), c.max_position));
        for (int32_t id : s)
            if (id < 0 || id >= c.vocab_size)
                throw InputError(fmt::format("{}: token id {} is outside the vocabulary [0, {}) of the model{}",
                                             files.vocab.empty() ? "bert (random weights)" : files.vocab, id,
                                             c.vocab_size, files.weights.empty() ? "" : " in " + files.weights));
        out.lengths.push_back(static_cast<int64_t>(s.size()));
        T = std::max<int64_t>(T, static_cast<int64_t>(s.size()));
    }
    if (pad_id < 0 || pad_id >= c.vocab_size)
        throw InputError(fmt::format("{}: pad id {} is outside the vocabulary [0, {})",
                                     files.vocab.empty() ? "bert (random weights)" : files.vocab, pad_id, c.vocab_size));
    if (opt.bf16_weights && !bf16_prepared())
        throw InputError("bert: bf16 weights were asked for but not made (call BertModel::prepare_bf16() first)");
    out.mask = opt.key_padding_mask ? Mask::key_padding(out.lengths) : Mask::none();
    out.sentence = Tensor({B, D});
    AttentionOptions aopt;  // scale 1/sqrt(Dk), fill -inf, no dropout (eval)
    const int64_t Dk = D / H;
    // The rows every per-token step (projections, LayerNorms, feed-forward) runs over:
    // sentence b owns rows [first[b], first[b] + rows[b]) of x. Normally all T positions
    // (first[b] = b T); with skip_padding only its real tokens, packed one after another.
    const bool unpad = opt.skip_padding && opt.key_padding_mask && !opt.record_attention && !opt.record_qkv;
    std::vector<int64_t> rows(static_cast<size_t>(B)), first(static_cast<size_t>(B) + 1, 0);
    for (int64_t b = 0; b < B; ++b) {
        rows[static_cast<size_t>(b)] = unpad ? out.lengths[static_cast<size_t>(b)] : T;
        first[static_cast<size_t>(b) + 1] = first[static_cast<size_t>(b)] + rows[static_cast<size_t>(b)];
    }
    const int64_t N = first.back();
    // Threads: at most one per 32 rows. Below that a second thread's wake-up and the split
    // cost more than they save (MiniLM, one sentence of 16 tokens: 3.3 ms on 1 thread, 5.4 ms
    // on 2). Every result is the same for any thread count, so this only changes the time.
    const int th = static_cast<int>(std::clamp<int64_t>(N / 32, 1, resolve_threads(opt.threads)));

    // pass 1: embeddings, then LayerNorm                           x (N, D)
    // (the LayerNorm of lib/nn in place; ln_mean and ln_rstd hold what its backward would read)
    Tensor x({N, D});
    std::vector<float> ln_mean(static_cast<size_t>(N)), ln_rstd(static_cast<size_t>(N));
    parallel_for(B, th, [&](int64_t b, int) {
        const auto& s = ids[static_cast<size_t>(b)];
        const int64_t len = static_cast<int64_t>(s.size()), r0 = first[static_cast<size_t>(b)];
        for (int64_t t = 0; t < rows[static_cast<size_t>(b)]; ++t) {
            const int32_t id = t < len ? s[static_cast<size_t>(t)] : pad_id;
            const float* we = word_emb.ptr() + static_cast<int64_t>(id) * D;
            const float* pe = pos_emb.ptr() + t * D;
            const float* te = type_emb.ptr();  // token type 0 for a single sentence
            float* xr = x.ptr() + (r0 + t) * D;
            for (int64_t d = 0; d < D; ++d) xr[d] = we[d] + pe[d] + te[d];
        }
        float* xb = x.ptr() + r0 * D;
        nn::layernorm_forward_fast(xb, ln_mean.data() + r0, ln_rstd.data() + r0, xb, emb_ln_gamma.ptr(),
                                   emb_ln_beta.ptr(), rows[static_cast<size_t>(b)], D, 1, c.layer_norm_eps);
    });

    // pass 2: the layers. Element-wise work runs over fixed pieces of rows (each row computed
    // the same way whatever the thread count); the attention of the (b, h) pairs and query
    // blocks is spread over the threads by the kernel. The attention itself always runs on
    // the padded (B, H, T, Dk) layout with the key-padding mask; without rows of their own,
    // padded positions keep zero q, k and v (masked keys add exactly nothing).
    const Backend impl = attention_backend(opt);
    out.attention_path = backend_name(impl);
    Tensor qkv({N, 3 * D}), Q({B, H, T, Dk}), K({B, H, T, Dk}), V({B, H, T, Dk}), a({N, D}), merged({N, D});
    Tensor h({N, I});
    constexpr int64_t kRows = 16;  // rows per piece of the element-wise passes
    const int64_t pieces = (N + kRows - 1) / kRows;
    // x += a, then LayerNorm, row by row
    auto add_norm = [&](const float* ln_gamma, const float* ln_beta) {
        parallel_for(pieces, th, [&](int64_t p, int) {
            const int64_t r0 = p * kRows, r1 = std::min(N, r0 + kRows);
            float* xr = x.ptr() + r0 * D;
            const float* ar = a.ptr() + r0 * D;
            for (int64_t k = 0; k < (r1 - r0) * D; ++k) xr[k] += ar[k];
            nn::layernorm_forward_fast(xr, ln_mean.data() + r0, ln_rstd.data() + r0, xr, ln_gamma, ln_beta, r1 - r0, D,
                                       1, c.layer_norm_eps);
        });
    };
    // one projection: the bf16 GEMM when asked for, else the packed GEMM of gemm_path, else
    // (gemm_path "eigen") Eigen's
    out.gemm_path = bert_gemm_path(opt);  // InputError for a forced kernel this CPU lacks
    const bool packed = !opt.bf16_weights && out.gemm_path != "eigen";
    std::vector<uint16_t> xb;  // the bf16 GEMM's input, kept from one projection to the next
    auto linear_bf16 = [&](float* y, const float* in, const PackedWeightBf16& w, const float* bias, bool gelu) {
        gemm_bf16(y, in, w, bias, N, th, gelu, opt.amx, &xb);
    };
    auto linear = [&](float* y, const float* in, const Tensor& Wt, const PackedWeight& Wp, const PackedWeightBf16& Wh,
                      const float* bias, int64_t n_in, int64_t n_out, bool gelu) {
        if (opt.bf16_weights) return linear_bf16(y, in, Wh, bias, gelu);
        if (!packed) return gemm_wt(y, in, Wt.ptr(), bias, N, n_in, n_out, th, gelu);
        // the kernel named in gemm_path runs, or nothing does (never Eigen under its name)
        if (!gemm_packed(y, in, Wp, bias, N, th, gelu, opt.gemm))
            throw std::logic_error("bert: the " + out.gemm_path + " GEMM did not run (its packed weights are missing)");
    };
    for (int64_t l = 0; l < c.layers; ++l) {
        const BertLayer& L = layers[static_cast<size_t>(l)];
        // Q, K, V in one GEMM: (N, D) . (D, 3D), then split into heads   (B, H, T, Dk) each
        linear(qkv.ptr(), x.ptr(), L.qkv_t, L.qkv_p, L.qkv_h, L.qkv_b.ptr(), D, 3 * D, false);
        parallel_for(B * H, th, [&](int64_t bh, int) {
            const int64_t b = bh / H, hh = bh % H;
            for (int64_t t = 0; t < rows[static_cast<size_t>(b)]; ++t) {
                const float* src = qkv.ptr() + (first[static_cast<size_t>(b)] + t) * 3 * D + hh * Dk;
                const int64_t dst = ((b * H + hh) * T + t) * Dk;
                std::copy(src, src + Dk, Q.ptr() + dst);
                std::copy(src + D, src + D + Dk, K.ptr() + dst);
                std::copy(src + 2 * D, src + 2 * D + Dk, V.ptr() + dst);
            }
        });
        if (opt.record_qkv) {
            out.queries.push_back(Q);
            out.keys.push_back(K);
            out.values.push_back(V);
        }
        AttentionRecord rec;
        const Tensor heads = attention(impl, Q, K, V, out.mask, aopt, opt.record_attention ? &rec : nullptr, th);
        if (opt.record_attention) out.attentions.push_back(std::move(rec.weights));  // (B, H, T, T)
        // merge the heads back: (B, H, T, Dk) -> (N, D)
        parallel_for(B * H, th, [&](int64_t bh, int) {
            const int64_t b = bh / H, hh = bh % H;
            for (int64_t t = 0; t < rows[static_cast<size_t>(b)]; ++t) {
                const float* src = heads.ptr() + ((b * H + hh) * T + t) * Dk;
                std::copy(src, src + Dk, merged.ptr() + (first[static_cast<size_t>(b)] + t) * D + hh * Dk);
            }
        });
        linear(a.ptr(), merged.ptr(), L.o_t, L.o_p, L.o_h, L.attention.o_proj.b.ptr(), D, D, false);
        // add & LayerNorm, then the feed-forward: h = gelu(x W1^T + b1) (B, T, I); f = h W2^T + b2 (B, T, D)
        add_norm(L.ln1_gamma.ptr(), L.ln1_beta.ptr());
        linear(h.ptr(), x.ptr(), L.ffn_in_t, L.ffn_in_p, L.ffn_in_h, L.ffn_in.b.ptr(), D, I, /*gelu=*/true);
        linear(a.ptr(), h.ptr(), L.ffn_out_t, L.ffn_out_p, L.ffn_out_h, L.ffn_out.b.ptr(), I, D, false);
        add_norm(L.ln2_gamma.ptr(), L.ln2_beta.ptr());
    }

    // pass 3: mean over the real tokens (or the [CLS] row), then L2 normalisation (F.normalize, eps 1e-12)
    for (int64_t b = 0; b < B; ++b) {
        const int64_t len = c.pooling == BertPooling::Cls ? 1 : out.lengths[static_cast<size_t>(b)];
        float* sv = out.sentence.ptr() + b * D;
        for (int64_t d = 0; d < D; ++d) {
            double acc = 0;
            for (int64_t t = 0; t < len; ++t) acc += x.data[static_cast<size_t>((first[static_cast<size_t>(b)] + t) * D + d)];
            sv[d] = static_cast<float>(acc / static_cast<double>(len));
        }
    }
    if (c.normalize) l2_normalize_rows(out.sentence.ptr(), B, D);
    if (!unpad) {
        out.hidden = std::move(x);  // (N, D) is (B, T, D) here: N = B T
        out.hidden.shape = {B, T, D};
    } else {  // real rows back in place; padded positions stay zero
        out.hidden = Tensor({B, T, D});
        for (int64_t b = 0; b < B; ++b)
            std::copy(x.ptr() + first[static_cast<size_t>(b)] * D, x.ptr() + first[static_cast<size_t>(b) + 1] * D,
                      out.hidden.ptr() + b * T * D);
    }
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
