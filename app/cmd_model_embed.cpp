// `attn model embed` and `bench`: the encoder's own verbs (all-MiniLM-L6-v2 or any BERT folder),
// sentence embeddings as sentence-transformers' encode gives them, and the encoder's speed.
//   attn model embed     --text T... | --file F [--json F] [--npy F]   sentence embeddings
//   attn model bench     [--batch 1,32] [--file F] [--threads N] [--json]   encoder latency
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sys/stat.h>

#include <fmt/format.h>

#include "attn/attn.hpp"
#include "attn/bench/bench.hpp"
#include "attn/bench/model_bench.hpp"
#include "attn/core/utf8.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/io/npy.hpp"
#include "attn/model/bert.hpp"
#include "attn/nn/gemm_choice.hpp"
#include "attn/model/tokenizer.hpp"
#include "cmd_model.hpp"
#include "command.hpp"
#include "memory.hpp"
#include "model_fetch.hpp"
#include "model_text.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "progress.hpp"

namespace attn::cli {
namespace {

// --weights: true for bf16, false for fp32; InputError for anything else.
bool bf16_weights(const std::string& weights) {
    if (weights != "fp32" && weights != "bf16")
        throw InputError(fmt::format("--weights: must be fp32 or bf16, got '{}'", weights));
    return weights == "bf16";
}

struct BenchCmd {
    JsonOut json;
    std::string batches = "1,32", text_file, attention = "flash", gemm = "best", padding = "skip", weights = "fp32";
    int64_t repeat = 20, warmup = 2;
    int threads = 0;  // every core
};
struct EmbedCmd {
    std::vector<std::string> texts;
    std::string file, npy, weights = "fp32";
    JsonOut json;
    int64_t batch = 32, max_tokens = 0;  // 0: the model's max_seq_length
    int threads = 0;  // every core
    bool no_truncate = false;  // refuse a longer text instead of cutting it
    bool truncate = false;     // --truncate: the default, said aloud
};

// Bytes of a file, 0 when it cannot be read (the loader then names the problem).
double file_size(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_size) : 0.0;
}

// At most `w` code points of `s`, on one line (line breaks shown as spaces).
std::string clip(const std::string& s, size_t w) {
    std::u32string u = utf8_decode(s);
    for (char32_t& c : u)
        if (c == U'\n' || c == U'\r' || c == U'\t') c = U' ';
        else if (c < 0x20 || (c >= 0x7f && c < 0xa0)) c = U'?';  // no control character reaches the terminal
    if (u.size() > w) u = u.substr(0, w - 1) + U"…";
    return utf8_encode(u);
}

// The benchmark's sentences: kModelBenchTexts, or the non-blank lines of --file.
std::vector<std::string> bench_texts(const BenchCmd& o) {
    if (o.text_file.empty()) return kModelBenchTexts;
    const std::string all = with_option("--file", [&] { return read_file(o.text_file); });
    std::vector<std::string> lines;  // (bytes that are not UTF-8 read as U+FFFD, as everywhere)
    size_t start = 0;
    while (start < all.size()) {
        size_t end = all.find('\n', start);
        if (end == std::string::npos) end = all.size();
        std::string s = all.substr(start, end - start);
        if (!s.empty() && s.back() == '\r') s.pop_back();
        if (s.find_first_not_of(" \t") != std::string::npos) lines.push_back(utf8_encode(utf8_decode(s)));
        start = end + 1;
    }
    if (lines.empty()) throw InputError(fmt::format("--file: {} has no non-blank line", o.text_file));
    return lines;
}

// --gemm's word: one of GemmChoice's, and (the library's rule, bert_gemm_path) a kernel this CPU
// runs under ATTN_ISA.
GemmChoice bench_gemm(const std::string& word) {
    const std::optional<GemmChoice> g = find_gemm_choice(word);
    if (!g) throw InputError(fmt::format("--gemm: must be {}, got '{}'", gemm_choice_names(), word));
    BertOptions probe;
    probe.gemm = *g;
    with_option("--gemm", [&] { return bert_gemm_path(probe); });
    return *g;
}

// The encoder's options for `model bench`, its option words checked.
BertOptions bench_options(const BenchCmd& o) {
    BertOptions bo;
    bo.record_attention = false;  // as a plain model(input) call in PyTorch
    bo.threads = resolve_threads(o.threads);
    if (o.attention == "reference") bo.attention = BatchAttention::Reference;
    else if (o.attention != "flash")
        throw InputError(fmt::format("--attention: must be flash or reference, got '{}'", o.attention));
    bo.gemm = bench_gemm(o.gemm);
    if (o.padding != "skip" && o.padding != "compute")
        throw InputError(fmt::format("--padding: must be skip or compute, got '{}'", o.padding));
    bo.skip_padding = o.padding == "skip";
    bo.bf16_weights = bf16_weights(o.weights);
    return bo;
}

// The encoder's folder and config (--model, else the default), checked before the weights load.
struct EncoderFolder {
    ModelFiles files;
    BertConfig config;
};
EncoderFolder encoder_folder(const std::string& model) {
    EncoderFolder f;
    f.files = with_option("--model", [&] { return locate_model(model.empty() ? default_model_dir() : model); });
    f.config = read_bert_config(f.files);
    return f;
}

int run_bench(const std::string& model, const BenchCmd& o) {
    const std::vector<int64_t> batches = parse_int_list("--batch", o.batches, 1, 4096);
    const BertOptions bo = bench_options(o);
    const std::string gemm = bert_gemm_path(bo);
    const std::vector<std::string> pool = bench_texts(o);
    const EncoderFolder p = encoder_folder(model);
    // a long line of --file is cut to the model's maximum, as sentence-transformers does
    const WordPieceTokenizer tok = load_tokenizer(p.files, p.config);
    // memory, before any work: the largest batch of the longest texts (at most the model's maximum), fp32 and bf16
    // outputs side by side with --weights bf16 (app/memory.hpp)
    int64_t longest = 0;
    for (const std::string& s : pool)
        longest = std::max<int64_t>(longest, static_cast<int64_t>(tok.encode(s).ids.size()));
    const int64_t most = *std::max_element(batches.begin(), batches.end());
    const double weights = file_size(p.files.weights);
    require_fits_in_memory("--batch",
                           (bo.bf16_weights ? 2.0 : 1.0) *
                               model_embed_bytes(weights, p.config.heads, p.config.hidden, most, longest),
                           fmt::format("a batch of {} sentences of up to {} tokens", most, longest));
    BertModel m = BertModel::load(p.files);
    if (bo.bf16_weights) m.prepare_bf16();
    const std::string path = backend_name(BertModel::attention_backend(bo));
    const std::string kernel = path == "flash" ? flash_kernels().front() : "-";
    const CpuInfo cpu = cpu_info();
    nlohmann::json runs = nlohmann::json::array();
    require_json_writable(o.json);
    if (!o.json.to_stdout())
        fmt::print("attn model bench: encoder forward + pooling, {} thread(s), median of {} runs after {} warm-up; "
                   "attention {}{}, GEMM {}, padding {}; {}\n",
                   bo.threads, o.repeat, o.warmup, path, path == "flash" ? " (" + kernel + ")" : "", gemm,
                   bo.skip_padding ? "skipped" : "computed", cpu.model);
    for (int64_t B : batches) {
        const ModelBenchRun r = bench_model_batch(m, tok, pool, B, bo, o.repeat, o.warmup);
        runs.push_back({{"batch", B},
                        {"tokens_padded", r.tokens_padded},
                        {"tokens_real", r.tokens_real},
                        {"median_ms", r.median_ms},
                        {"min_ms", r.min_ms},
                        {"max_ms", r.max_ms},
                        {"times_ms", r.times_ms},
                        {"sentences_per_s", r.sentences_per_s},
                        {"cpu_seconds", r.cpu_seconds},
                        {"sentences_per_cpu_s", r.sentences_per_cpu_s},
                        {"texts", r.texts},
                        {"ids", r.ids}});
        if (bo.bf16_weights)
            runs.back()["bf16_vs_fp32"] = {{"max_abs_diff", r.bf16_max_abs_diff}, {"min_cosine", r.bf16_min_cosine}};
        if (o.json.to_stdout()) continue;
        fmt::print(
            "  batch {:>4}  T {:>3} ({:>3.0f}% real tokens): median {:8.2f} ms (min {:.2f}, max {:.2f}), "
            "{:.0f} sentences/s, {:.0f} per CPU-second\n",
            B, r.tokens_padded, 100.0 * static_cast<double>(r.tokens_real) / static_cast<double>(B * r.tokens_padded),
            r.median_ms, r.min_ms, r.max_ms, r.sentences_per_s, r.sentences_per_cpu_s);
        if (bo.bf16_weights)
            fmt::print("             bf16 weights against float32: sentence embeddings differ by at most {:.2e}, "
                       "cosine at least {:.6f}\n",
                       r.bf16_max_abs_diff, r.bf16_min_cosine);
    }
    if (o.json.given()) {
        const nlohmann::json doc = {{"format", "attn-model-bench"},
                                    {"version", 1},
                                    {"machine",
                                     {{"threads", bo.threads},
                                      {"cpu_model", cpu.model},
                                      {"cpu_flags", cpu.flags},
                                      {"flash_kernel", flash_kernels().front()}}},
                                    {"model", p.files.dir},
                                    {"attention_path", path},
                                    {"attention_kernel", kernel},
                                    {"gemm_path", gemm},
                                    {"padding", o.padding},
                                    {"weights", o.weights},
                                    {"threads", bo.threads},
                                    {"repeat", o.repeat},
                                    {"warmup", o.warmup},
                                    {"texts_from", o.text_file.empty() ? "built-in sentences" : o.text_file},
                                    {"runs", runs}};
        write_json(o.json, doc, "attn-model-bench", 1);
    }
    return 0;
}

// The texts of `attn model embed`: each --text, or each line of --file (the
// newline that ends the last line ends the file; "\r\n" line ends read as "\n").
// `where` names a text in messages: "--text 2", "--file notes.txt: line 3".
struct Texts {
    std::vector<std::string> text, where;
};

Texts embed_texts(const EmbedCmd& o) {
    Texts t;
    if (!o.texts.empty() && !o.file.empty()) throw InputError("--file: give either --text or --file, not both");
    if (o.texts.empty() && o.file.empty())
        throw InputError("embed: give the sentences with --text T (repeatable) or --file F");
    for (size_t k = 0; k < o.texts.size(); ++k) {
        t.text.push_back(o.texts[k]);
        t.where.push_back(o.texts.size() == 1 ? "--text" : fmt::format("--text {}", k + 1));
    }
    if (!o.file.empty()) {
        std::string all;
        if (o.file == "-") {
            all.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        } else {
            // the file, read and split in lines, must fit before it is read (app/memory.hpp)
            require_fits_in_memory("--file", kProgramBytes + 3.0 * file_size(o.file),
                                   fmt::format("reading {}", o.file));
            all = with_option("--file", [&] { return read_file(o.file); });
        }
        size_t start = 0, line = 1;
        while (start < all.size()) {
            size_t end = all.find('\n', start);
            if (end == std::string::npos) end = all.size();
            std::string s = all.substr(start, end - start);
            if (!s.empty() && s.back() == '\r') s.pop_back();
            t.text.push_back(std::move(s));
            t.where.push_back(fmt::format("--file {}: line {}", o.file == "-" ? "(stdin)" : o.file, line));
            start = end + 1;
            ++line;
        }
        if (t.text.empty()) throw InputError(fmt::format("--file: {} has no lines", o.file));
    }
    return t;
}

// What the sentences of `model embed` take beside the batches, refused (naming --file or --text)
// before any is tokenized when it does not fit with the weights (app/memory.hpp).
double embed_texts_memory(const EmbedCmd& o, const Texts& t, const ModelFiles& files, const BertConfig& config) {
    double text_bytes = 0;
    for (const std::string& s : t.text) text_bytes += static_cast<double>(s.size());
    const double bytes = model_embed_texts_bytes(text_bytes, static_cast<int64_t>(t.text.size()), config.hidden,
                                                 o.json.given());
    require_fits_in_memory(o.file.empty() ? "--text" : "--file", kProgramBytes + 3.0 * file_size(files.weights) + bytes,
                           fmt::format("{} sentences ({:.0f} bytes), {}-dimensional embeddings{}", t.text.size(),
                                       text_bytes, config.hidden, o.json.given() ? " and their --json" : ""));
    return bytes;
}

// One line on stderr (never stdout) when texts were cut: how many, to what length, and which (the first few).
void note_truncated(const Texts& t, const std::vector<int64_t>& cut, int64_t n, int64_t max_len, bool max_tokens) {
    std::string which;
    for (size_t k = 0; k < cut.size() && k < 3; ++k) which += (k ? "; " : "") + t.where[static_cast<size_t>(cut[k])];
    if (cut.size() > 3) which += fmt::format("; {} more", cut.size() - 3);
    std::fflush(stdout);
    fmt::print(stderr, "attn: note: {} of {} text(s) cut to {} tokens ({}), as sentence-transformers cuts them: {} "
               "(--no-truncate refuses them instead)\n",
               cut.size(), n, max_len, max_tokens ? "--max-tokens" : "the model's max_seq_length", which);
}

int run_embed(const std::string& model, const EmbedCmd& o) {
    if (o.truncate && o.no_truncate)
        throw InputError("--no-truncate: not with --truncate (one cuts, the other refuses)");
    const TextOut text({o.json.claim(), {"--npy -", o.npy == "-"}});
    require_json_writable(o.json);
    if (!o.npy.empty() && o.npy != "-") require_writable("--npy", o.npy);
    bf16_weights(o.weights);  // refuses anything but fp32 or bf16 before the model is read
    const ModelFiles files =
        with_option("--model", [&] { return locate_model(model.empty() ? default_model_dir() : model); });
    BertConfig config = read_bert_config(files);
    const int64_t st_max = config.max_len;  // sentence-transformers' max_seq_length (or the position table)
    if (o.max_tokens != 0) {
        if (o.max_tokens < 2 || o.max_tokens > config.max_position)
            throw InputError(
                fmt::format("--max-tokens: must be in [2, {}] (the model's position table, [CLS] and [SEP] "
                            "included), got {}",
                            config.max_position, o.max_tokens));
        config.max_len = o.max_tokens;
    }
    const Texts t = embed_texts(o);
    const double texts_bytes = embed_texts_memory(o, t, files, config);
    const WordPieceTokenizer tok = load_tokenizer(files, config);
    std::vector<std::vector<int32_t>> ids;
    std::vector<int64_t> cut;  // the texts cut to config.max_len, as sentence-transformers cuts them
    int64_t longest = 0;
    for (size_t k = 0; k < t.text.size(); ++k) {
        const Encoding enc = tok.encode(t.text[k]);
        if (enc.truncated) {
            if (o.no_truncate)
                throw InputError(
                    fmt::format("{}: is {} tokens long, more than the limit of {} ([CLS] and [SEP] included; "
                                "--max-tokens, at most {}); without --no-truncate the first {} are kept, "
                                "as sentence-transformers keeps them",
                                t.where[k], enc.full_length, config.max_len, config.max_position, config.max_len));
            cut.push_back(static_cast<int64_t>(k));
        }
        longest = std::max<int64_t>(longest, static_cast<int64_t>(enc.ids.size()));
        ids.push_back(enc.ids);
    }
    const int64_t N = static_cast<int64_t>(ids.size()), B = std::min<int64_t>(o.batch, N);
    require_fits_in_memory("--batch",
                           model_embed_bytes(file_size(files.weights), config.heads, config.hidden, B, longest) +
                               texts_bytes,
                           fmt::format("a batch of {} sentences of up to {} tokens", B, longest));
    if (!cut.empty()) note_truncated(t, cut, N, config.max_len, o.max_tokens != 0);
    BertModel m = BertModel::load(files);
    BertOptions bo;
    bo.record_attention = false;
    bo.bf16_weights = bf16_weights(o.weights);
    if (bo.bf16_weights) m.prepare_bf16();
    bo.skip_padding = true;  // only the sentence embeddings are kept: padded rows need no work
    bo.threads = resolve_threads(o.threads);
    const int64_t D = config.hidden;
    Tensor emb({N, D});
    ProgressLine line({stderr_is_tty(), std::chrono::milliseconds(500)});  // only when it takes a while
    for (int64_t s = 0; s < N; s += B) {  // one padded batch per group of --batch texts, in order
        line.show("attn model embed", s, N, "sentences");
        const std::vector<std::vector<int32_t>> group(ids.begin() + s, ids.begin() + std::min(N, s + B));
        const BertOutput out = m.forward(group, bo, tok.pad_id());
        std::copy(out.sentence.data.begin(), out.sentence.data.end(), emb.ptr() + s * D);
    }
    line.clear();

    if (!o.npy.empty()) with_option("--npy", [&] { save_npy(o.npy, emb); });
    if (o.json.given()) {
        nlohmann::ordered_json j;
        j["format"] = "attn-model-embed";
        j["version"] = 1;
        j["model"] = files.dir;
        j["dimension"] = D;
        j["pooling"] =
            std::string(config.pooling == BertPooling::Cls ? "the [CLS] token's vector of the last layer"
                                                           : "mean over the real tokens of the last layer") +
            (config.normalize ? ", then L2-normalised (sentence-transformers' encode(normalize_embeddings=True))"
                              : ", not normalised (the folder's modules.json has no Normalize)");
        j["max_tokens"] = config.max_len;
        j["truncated"] = cut;  // the indices of the texts cut to max_tokens, as sentence-transformers cuts them
        nlohmann::ordered_json rows = nlohmann::ordered_json::array();
        for (int64_t k = 0; k < N; ++k)
            rows.push_back({{"where", t.where[static_cast<size_t>(k)]},
                            {"text", utf8_encode(utf8_decode(t.text[static_cast<size_t>(k)]))},
                            {"tokens", ids[static_cast<size_t>(k)].size()},
                            {"truncated", std::find(cut.begin(), cut.end(), k) != cut.end()},
                            {"embedding", std::vector<float>(emb.ptr() + k * D, emb.ptr() + (k + 1) * D)}});
        j["sentences"] = rows;
        write_json(o.json, j, "attn-model-embed", 1);
    }
    text.print("attn model embed: {} sentence(s), {}-dimensional, {} pooling{}, batches of up to {}, "
               "at most {} tokens ({} the model's max_seq_length)\n",
               N, D, config.pooling == BertPooling::Cls ? "[CLS]" : "mean", config.normalize ? " + L2 norm" : "", B,
               config.max_len, config.max_len == st_max ? "=" : "!=");
    for (int64_t k = 0; k < N; ++k) {
        const float* e = emb.ptr() + k * D;
        text.print("{:>4}  {:>3} tokens  [{:+.4f} {:+.4f} {:+.4f} {:+.4f} ... {:+.4f}]  {}\n", k + 1,
                   ids[static_cast<size_t>(k)].size(), e[0], e[1], e[2], e[3], e[D - 1],
                   clip(t.text[static_cast<size_t>(k)], 50));
    }
    if (N >= 2 && N <= 12) {  // the embeddings are unit vectors: a dot product is the cosine
        text.print("\ncosine similarity (dot product of the normalised embeddings):\n{:>6}", "");
        for (int64_t b = 0; b < N; ++b) text.print(" {:>6}", b + 1);
        text.print("\n");
        for (int64_t a = 0; a < N; ++a) {
            text.print("{:>6}", a + 1);
            for (int64_t b = 0; b < N; ++b) {
                double dot = 0;
                for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(emb.ptr()[a * D + d]) * emb.ptr()[b * D + d];
                text.print(" {:>6.3f}", dot);
            }
            text.print("\n");
        }
    }
    if (!o.npy.empty() && o.npy != "-") text.print("wrote {} (float32 [{}, {}])\n", o.npy, N, D);
    if (o.json.given() && !o.json.to_stdout()) text.print("wrote {}\n", o.json.path());
    return 0;
}

// `attn model bench`'s options (the encoder timed at batch sizes).
CLI::App* add_model_bench(CLI::App& sub, std::string& model, BenchCmd* bo) {
    CLI::App* bn =
        sub.add_subcommand("bench", "time the encoder (no attention recording) at batch sizes; --json for scripts");
    bn->add_option("--model", model, kModelDirHelp);
    bn->add_option("--batch", bo->batches, "batch sizes, comma-separated")->capture_default_str();
    deprecated_alias(*bn, "--text-file", "--file", bo->text_file);
    bn->add_option("--file", bo->text_file,
                   "sentences, one per line (blank lines skipped; a batch of B takes the first B, cycled; a line "
                   "longer than the model's maximum is cut to it); default: 8 built-in sentences")
        ->type_name("FILE");
    deprecated_alias(*bn, "--repeat", "--reps", bo->repeat)->check(integer_in(1, 10000));
    bn->add_option("--reps", bo->repeat, "timed runs per batch size (the median is reported)")
        ->capture_default_str()
        ->check(integer_in(1, 10000));
    bn->add_option("--warmup", bo->warmup, "untimed runs before them")
        ->capture_default_str()
        ->check(integer_in(0, 100));
    bn->add_option("--attention", bo->attention,
                   "attention kernel: flash (tiled, key-padding mask; the default) or reference (forms the "
                   "(B, H, T, T) weights)")
        ->capture_default_str();
    bn->add_option("--gemm", bo->gemm,
                   "projection GEMM: best (the widest packed kernel this CPU runs under ATTN_ISA), avx512, avx2, "
                   "neon or generic (packed weights; refused where the CPU lacks it), or eigen (the readable path)")
        ->capture_default_str();
    bn->add_option("--padding", bo->padding,
                   "skip: the projections and feed-forward run over the real tokens only (as model embed); "
                   "compute: over every padded position too, as transformers' BertModel does")
        ->capture_default_str();
    bn->add_option("--weights", bo->weights,
                   "fp32, or bf16: the projections on bfloat16 weights and inputs (any AVX-512 CPU), with the "
                   "sentence embeddings' difference from fp32 reported")
        ->capture_default_str();
    bn->add_option("--threads", bo->threads, "threads (GEMM column blocks, (batch, head) pairs, rows; 0: every core)")
        ->capture_default_str()
        ->check(integer_in(0, 1024));
    add_json(*bn, bo->json, "attn-model-bench, with the token ids used");
    return bn;
}

}  // namespace

ModelRunner add_embed_subcommands(CLI::App& model) {
    auto model_dir = std::make_shared<std::string>();  // --model of either
    auto bo = std::make_shared<BenchCmd>();
    CLI::App* bn = add_model_bench(model, *model_dir, bo.get());
    auto emo = std::make_shared<EmbedCmd>();
    CLI::App* em = model.add_subcommand("embed",
                                        "sentence embeddings (mean pooling, L2-normalised, or as the folder's pooling "
                                        "files say), as sentence-transformers' encode(normalize_embeddings=True)");
    allow_empty(
        em->add_option("--text", emo->texts,
                       "a sentence (repeat for more; not with --file; empty: [CLS] [SEP], as an empty line of --file)")
            ->transform(valid_utf8()));
    em->add_option("--file", emo->file, "one sentence per line (- for stdin); an empty line is an empty sentence");
    em->add_option("--model", *model_dir, kModelDirHelp);
    em->add_option("--max-tokens", emo->max_tokens,
                   "longest sentence in tokens, [CLS] and [SEP] included (default: the model's max_seq_length, 256 "
                   "for all-MiniLM-L6-v2; at most its max_position_embeddings, 512 there)")
        ->check(integer_in(2));
    em->add_flag("--truncate", emo->truncate,
                 "cut a sentence longer than --max-tokens to it, as sentence-transformers does, with one note on "
                 "stderr (the default)");
    em->add_flag("--no-truncate", emo->no_truncate, "refuse a sentence longer than --max-tokens instead");
    em->add_option("--batch", emo->batch, "sentences per padded batch (in input order)")
        ->capture_default_str()
        ->check(integer_in(1, 4096));
    em->add_option("--weights", emo->weights,
                   "fp32, or bf16: the projections on bfloat16 weights and inputs (any AVX-512 CPU; AMX tiles where "
                   "usable); attn model bench --weights bf16 reports the difference")
        ->capture_default_str();
    em->add_option("--threads", emo->threads,
                   "threads (sentences of a batch run in parallel; same numbers; 0: every core)")
        ->capture_default_str()
        ->check(integer_in(0, 1024));
    em->add_option("--npy,-o,--output", emo->npy,
                   "write the embeddings as a float32 [N, D] .npy file (D: the model's hidden_size, 384 for "
                   "all-MiniLM-L6-v2; - for stdout)");
    add_json(*em, emo->json, "attn-model-embed: the embeddings, texts and token counts");
    return [model_dir, bo, emo, bn, em]() -> std::optional<int> {
        if (em->parsed()) return run_embed(*model_dir, *emo);
        if (bn->parsed()) return run_bench(*model_dir, *bo);
        return std::nullopt;
    };
}

}  // namespace attn::cli
