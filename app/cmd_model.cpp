// `attn model`: real attention heads of a pretrained BERT encoder
// (all-MiniLM-L6-v2, fetched by scripts/fetch-model.sh), run entirely in C++.
//   attn model attention --text T [--layer L] [--head H] [--svg F] [--dump F]
//   attn model entropy   --text T [--json]       trained vs random-init heads (C32)
//   attn model probe     --text T --from W --to A,B   which heads link "it" to "animal" (C34)
//   attn model bench     [--batch 1,32] [--file F] [--threads N] [--json]   encoder latency
//   attn model embed     --text T... | --file F [--json F] [--npy F]   sentence embeddings
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <iterator>
#include <memory>
#include <numeric>
#include <sys/stat.h>

#include <fmt/format.h>

#include <time.h>

#include "attn/attn.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/bench/bench.hpp"
#include "attn/bench/model_bench.hpp"
#include "attn/core/utf8.hpp"
#include "attn/model/bert.hpp"
#include "attn/model/heads.hpp"
#include "attn/viz/heatmap.hpp"
#include "attn/model/tokenizer.hpp"
#include "attn/io/npy.hpp"
#include "cmd_model_decoder.hpp"
#include "attn/io/dump_file.hpp"
#include "command.hpp"
#include "html_page.hpp"
#include "memory.hpp"
#include "model_fetch.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "progress.hpp"

namespace attn::cli {

nlohmann::json picked_weights_json(const std::vector<Tensor>& attentions, int64_t layer, int64_t head) {
    nlohmann::json picked = nlohmann::json::array();
    if (layer < 0) return picked;
    const Tensor& w = attentions[static_cast<size_t>(layer)];  // (1, H, T, T)
    const int64_t H = w.dim(1), T = w.dim(2);
    for (int64_t h = 0; h < H; ++h) {
        if (head >= 0 && head != h) continue;
        std::vector<std::vector<float>> rows;
        for (int64_t i = 0; i < T; ++i) rows.emplace_back(w.ptr() + (h * T + i) * T, w.ptr() + (h * T + i + 1) * T);
        picked.push_back({{"layer", layer}, {"head", h}, {"weights", rows}});
    }
    return picked;
}

namespace {

constexpr const char* kModelDirHelp =
    "model folder (default: $ATTN_MODEL_DIR, else where `attn model fetch` puts all-MiniLM-L6-v2: "
    "~/.local/share/attn/models, or data/models in a checkout)";

struct CommonOpts {
    std::string model, text;
    bool truncate = false;
};
struct AttentionCmd {
    int64_t layer = -1, head = -1;
    std::string svg, dump;
    JsonOut json;  // --json [FILE]: the result object (attn-model-attention)
    JsonNonFinite json_nonfinite = JsonNonFinite::literal;
    bool no_color = false;
    HtmlOpts html;
};
struct EntropyCmd {
    JsonOut json;
    uint64_t seed = 0;
    double dup = kNearDuplicateJs;
};
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
struct ProbeCmd {
    JsonOut json;
    std::string from, to;
    int64_t top = 0;
};

// The model folder, tokenizer and encoded text, all validated before the weights load.
struct Prepared {
    ModelFiles files;
    BertConfig config;
    Encoding enc;
};

Prepared prepare(const CommonOpts& o) {
    Prepared p;
    p.files = with_option("--model", [&] { return locate_model(o.model.empty() ? default_model_dir() : o.model); });
    p.config = read_bert_config(p.files);
    const WordPieceTokenizer tok = load_tokenizer(p.files, p.config);
    p.enc = tok.encode(o.text);
    if (p.enc.truncated) {
        if (!o.truncate)
            throw InputError(fmt::format("--text: is {} tokens long, more than the model's maximum of {} ([CLS] and [SEP] "
                                         "included); shorten it or pass --truncate",
                                         p.enc.full_length, p.config.max_len));
        std::fflush(stdout);
        fmt::print(stderr, "attn: warning: --text: cut from {} to {} tokens (the model's maximum)\n", p.enc.full_length,
                   p.config.max_len);
    }
    return p;
}

// Bytes of a file, 0 when it cannot be read (the loader then names the problem).
double file_size(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_size) : 0.0;
}

void check_index(const char* opt, int64_t v, int64_t n, const char* what) {
    if (v < -1 || v >= n)
        throw InputError(fmt::format("{}: must be in [0, {}] (the model has {} {}), got {}", opt, n - 1, n, what, v));
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

// --json of `attn model attention` on the encoder: the tokens, each layer's share of weight on
// [CLS], [SEP], punctuation and the rest with its top receiver, and the picked weights.
void write_attention_json(const CommonOpts& co, const AttentionCmd& o, const Prepared& p, const BertOutput& out,
                          const TextOut& text) {
    const auto& tokens = p.enc.tokens;
    nlohmann::json layers = nlohmann::json::array();
    for (int64_t l = 0; l < p.config.layers; ++l) {
        const Sinks s = layer_sinks(out.attentions[static_cast<size_t>(l)], 0, tokens);
        layers.push_back({{"layer", l}, {"cls", s.cls}, {"sep", s.sep}, {"punct", s.punct}, {"other", s.other},
                          {"top_token", tokens[s.top]}, {"top_position", s.top}, {"top_share", s.per_key[s.top]}});
    }
    const nlohmann::json j = {{"model", model_name(p.files)}, {"architecture", "bert"}, {"text", co.text},
                              {"tokens", tokens}, {"ids", p.enc.ids}, {"layers", p.config.layers},
                              {"heads", p.config.heads}, {"sinks", layers},
                              {"weights", picked_weights_json(out.attentions, o.layer, o.head)}};
    write_json(o.json, j, "attn-model-attention", 1);
    if (!o.json.to_stdout()) text.print("wrote {} (attn-model-attention JSON)\n", o.json.path());
}

int run_attention(const CommonOpts& co, const AttentionCmd& o) {
    // --dump - or --svg - has stdout; the tables and heatmaps then go to stderr.
    if (!co.model.empty() && with_option("--model", [&] { return is_decoder_folder(co.model); }))
        return run_decoder_attention(
            {co.model, co.text, o.svg, o.dump, o.layer, o.head, o.no_color, o.json_nonfinite, o.json, o.html});
    const TextOut text({{"--svg -", o.svg == "-"}, {"--dump -", o.dump == "-"}, o.json.claim()});
    require_json_writable(o.json);
    const Prepared p = prepare(co);
    check_index("--layer", o.layer, p.config.layers, "layers");
    check_index("--head", o.head, p.config.heads, "heads");
    if (o.head >= 0 && o.layer < 0) throw InputError("--head: needs --layer too (a head belongs to a layer)");
    if (!o.svg.empty()) require_writable("--svg", o.svg);
    if (!o.dump.empty()) {
        with_option("--dump", [&] { dump_format_of(o.dump); });
        require_writable("--dump", o.dump);
    }
    check_html(o.html);
    // Memory (app/memory.hpp): the weights, the attention, and what --dump and --svg add.
    require_fits_in_memory(!o.svg.empty() ? "--svg" : !o.dump.empty() ? "--dump" : "--text",
                           model_attention_bytes(file_size(p.files.weights), p.config.layers, p.config.heads,
                                                 p.config.hidden, static_cast<int64_t>(p.enc.ids.size()), !o.dump.empty(),
                                                 !o.svg.empty()),
                           fmt::format("the attention of {} tokens in {} layers x {} heads", p.enc.ids.size(),
                                       p.config.layers, p.config.heads));
    const BertModel m = BertModel::load(p.files);
    BertOptions fopt;
    fopt.record_qkv = !o.html.file.empty();  // the values, for the page's norm-based view
    const BertOutput out = m.forward({p.enc.ids}, fopt);
    const auto& tokens = p.enc.tokens;
    const int64_t T = static_cast<int64_t>(tokens.size()), H = p.config.heads, L = p.config.layers;

    text.print("attn model attention: {} tokens: {}\n", T, fmt::join(tokens, " "));
    // Where the weight goes, per layer: the "attention sinks" [CLS], [SEP], punctuation.
    text.print("\nshare of all attention weight (mean over heads and query tokens) received by:\n");
    text.print("{:>7} {:>7} {:>7} {:>7} {:>7}   {}\n", "layer", "[CLS]", "[SEP]", "punct", "other", "top receiver");
    for (int64_t l = 0; l < L; ++l) {
        const Sinks s = layer_sinks(out.attentions[static_cast<size_t>(l)], 0, tokens);
        text.print("{:>7} {:>6.0f}% {:>6.0f}% {:>6.0f}% {:>6.0f}%   {} ({:.0f}%)\n", l, 100 * s.cls, 100 * s.sep,
                   100 * s.punct, 100 * s.other, tokens[s.top], 100 * s.per_key[s.top]);
    }
    if (o.json.given()) write_attention_json(co, o, p, out, text);
    if (o.layer >= 0) {
        HeatmapStyle style;
        style.color = text.color(o.no_color);
        const Tensor& w = out.attentions[static_cast<size_t>(o.layer)];  // (1, H, T, T)
        text.print("\nrows: query tokens; columns: the keys each row spreads its weight over (each row sums to 1)\n");
        for (int64_t h = 0; h < H; ++h)
            if (o.head < 0 || o.head == h)
                text.print("\n{}", render_heatmap(make_panel(fmt::format("layer {}, head {}", o.layer, h),
                                                             w.ptr() + h * T * T, T, T, tokens, tokens),
                                                  style));
    } else {
        text.print("\nPick a head for its heatmap: --layer L --head H (L in 0..{}, H in 0..{}); --svg FILE draws them.\n",
                   L - 1, H - 1);
    }
    if (!o.svg.empty()) {
        std::vector<HeatmapPanel> panels;
        for (int64_t l = 0; l < L; ++l)
            for (int64_t h = 0; h < H; ++h)
                if ((o.layer < 0 || o.layer == l) && (o.head < 0 || o.head == h))
                    panels.push_back(make_panel(fmt::format("layer {} head {}", l, h),
                                                out.attentions[static_cast<size_t>(l)].ptr() + h * T * T, T, T, tokens,
                                                tokens));
        SvgOptions so;
        so.title = model_name(p.files) + " attention weights (rows: queries, columns: keys)";
        so.subtitle = co.text;
        with_option("--svg", [&] { write_file_atomic(o.svg, heatmap_svg(panels, so)); });
        if (o.svg != "-") text.print("wrote {} ({} heatmaps)\n", o.svg, panels.size());
    }
    if (!o.dump.empty()) {
        Dump d;
        d.config = {{"model", model_name(p.files)}, {"text", co.text}, {"tokens", tokens}, {"ids", p.enc.ids},
                    {"layers", L}, {"heads", H},
                    {"layout", "attention is [layers, B, H, T, T]: row i of a head = query token i"}};
        Tensor all({L, 1, H, T, T});
        for (int64_t l = 0; l < L; ++l)
            std::copy(out.attentions[static_cast<size_t>(l)].data.begin(), out.attentions[static_cast<size_t>(l)].data.end(),
                      all.ptr() + l * H * T * T);
        d.tensors["attention"] = std::move(all);
        d.order.push_back("attention");
        with_option("--dump", [&] { write_dump_file(o.dump, d, o.json_nonfinite); });
        if (o.dump != "-") text.print("wrote {} (attention [{}, 1, {}, {}, {}] and the tokens)\n", o.dump, L, H, T, T);
    }
    if (!o.html.file.empty()) {
        AttentionPage page = page_from_model(out.attentions, out.values, tokens, out.mask);
        page.subtitle = co.text;
        page.source = model_name(p.files);
        write_html_page(o.html, std::move(page), text);
    }
    return 0;
}

int run_entropy(const CommonOpts& co, const EntropyCmd& o) {
    if (!(o.dup > 0.0 && o.dup <= std::log(2.0)))
        throw InputError(fmt::format("--dup-threshold: must be in (0, ln 2 = 0.693] nats, got {}", o.dup));
    require_json_writable(o.json);
    if (!co.model.empty() && with_option("--model", [&] { return is_decoder_folder(co.model); }))
        return run_decoder_entropy({co.model, co.text, o.seed, o.dup, o.json});
    const Prepared p = prepare(co);
    const BertModel trained = BertModel::load(p.files);
    const BertModel random = BertModel::random(p.config, o.seed);
    auto figures = [&](const BertModel& m) {
        const BertOutput out = m.forward({p.enc.ids});
        return head_figures(out.attentions, out.mask);
    };
    const HeadFigures ft = figures(trained), fr = figures(random);
    const int64_t L = p.config.layers, H = p.config.heads;
    const double pairs = static_cast<double>(H * (H - 1) / 2);

    if (o.json.given()) {
        auto side = [&](const HeadFigures& f, const char* name) {
            nlohmann::json j = {{"name", name}, {"entropy", f.entropy}};
            nlohmann::json sims = nlohmann::json::array(), dups = nlohmann::json::array();
            for (const Tensor& s : f.similarity) {
                std::vector<std::vector<float>> rows;
                for (int64_t a = 0; a < H; ++a)
                    rows.emplace_back(s.data.begin() + a * H, s.data.begin() + (a + 1) * H);
                sims.push_back(rows);
                nlohmann::json d = nlohmann::json::array();
                for (const HeadPair& q : near_duplicate_heads(s, o.dup))
                    d.push_back({{"a", q.a}, {"b", q.b}, {"js", q.js}});
                dups.push_back(d);
            }
            j["similarity_js"] = sims;
            j["near_duplicates"] = dups;
            return j;
        };
        const nlohmann::json j = {{"text", co.text},
                                  {"tokens", p.enc.tokens},
                                  {"entropy", "mean normalised entropy per [layer][head]: 1 uniform, 0 one-hot"},
                                  {"dup_threshold_nats", o.dup},
                                  {"random_seed", o.seed},
                                  {"models", {side(ft, "trained"), side(fr, "random")}}};
        write_json(o.json, j, "attn-model-entropy", 1);
        if (o.json.to_stdout()) return 0;
    }

    fmt::print("attn model entropy: {} tokens: {}\n", p.enc.tokens.size(), fmt::join(p.enc.tokens, " "));
    fmt::print("mean normalised entropy of each head's rows, x100 (100 = uniform over the tokens, 0 = all on one token)\n\n");
    std::string hdr;
    for (int64_t h = 0; h < H; ++h) hdr += fmt::format(" h{:<2}", h);
    fmt::print("{:<6}|{:<{}}|{:<{}}|\n", "", " trained " + model_name(p.files), 4 * H + 6,
               fmt::format(" random init N(0, 0.02^2), seed {}", o.seed), 4 * H + 6);
    fmt::print("{:<6}|{} mean |{} mean |\n", "layer", hdr, hdr);
    auto row = [&](const std::vector<double>& e) {
        std::string s;
        for (double v : e) s += fmt::format(" {:3.0f}", 100 * v);
        return s + fmt::format("  {:3.0f} ", 100 * std::accumulate(e.begin(), e.end(), 0.0) / static_cast<double>(e.size()));
    };
    for (int64_t l = 0; l < L; ++l)
        fmt::print("{:<6}|{}|{}|\n", l, row(ft.entropy[static_cast<size_t>(l)]), row(fr.entropy[static_cast<size_t>(l)]));

    fmt::print("\nhead-to-head similarity: mean Jensen-Shannon divergence between two heads' rows (nats, 0 = identical,\n"
               "ln 2 = 0.69 = disjoint); pairs under --dup-threshold {} are flagged as near-duplicates\n\n", o.dup);
    fmt::print("{:<6} {:>10} {:>10}   {}\n", "layer", "trained", "random", "trained near-duplicate pairs (heads a~b: JS)");
    for (int64_t l = 0; l < L; ++l) {
        const auto dt = near_duplicate_heads(ft.similarity[static_cast<size_t>(l)], o.dup);
        const auto dr = near_duplicate_heads(fr.similarity[static_cast<size_t>(l)], o.dup);
        std::string list;
        for (size_t k = 0; k < dt.size() && k < 6; ++k) list += fmt::format("{}~{}: {:.3f}  ", dt[k].a, dt[k].b, dt[k].js);
        if (dt.size() > 6) list += fmt::format("(+{} more)", dt.size() - 6);
        fmt::print("{:<6} {:>4}/{:<5} {:>4}/{:<5}   {}\n", l, dt.size(), pairs, dr.size(), pairs, list);
    }
    fmt::print("\nRandom heads are all near-uniform, so they are 'similar' only because they all say nothing;\n"
               "trained heads are sharper (lower entropy) and mostly distinct, with a few look-alike pairs (C32).\n");
    return 0;
}

// A word of --text and which of its occurrences: "animal", or "it@2" for the second "it".
struct Occurrence {
    std::string word;
    int n = 1;
};

Occurrence parse_occurrence(std::string_view opt, const std::string& s) {
    const size_t at = s.rfind('@');
    if (at == std::string::npos || at == 0) return {s, 1};
    int64_t n = 0;
    if (const std::string why = read_integer(std::string_view(s).substr(at + 1), 1, kMaxSize, n); !why.empty())
        throw InputError(fmt::format("{}: the N of WORD@N {}", opt, why));
    return {s.substr(0, at), static_cast<int>(n)};
}

// The token positions of `w` in the text; errors name `opt`.
std::vector<int64_t> find_occurrence(std::string_view opt, const Encoding& enc, const Occurrence& w) {
    return with_option(opt, [&] { return find_word(enc, w.word, w.n); });
}

int run_probe(const CommonOpts& co, const ProbeCmd& o) {
    if (o.from.empty()) throw InputError("--from: must name a word of --text, got ''");
    require_json_writable(o.json);
    const Occurrence from_word = parse_occurrence("--from", o.from);
    const std::vector<std::string> to = parse_word_list("--to", o.to);
    std::vector<Occurrence> to_words;
    for (const std::string& t : to) to_words.push_back(parse_occurrence("--to", t));
    if (!co.model.empty() && with_option("--model", [&] { return is_decoder_folder(co.model); })) {
        std::vector<std::pair<std::string, int>> tw;
        for (const Occurrence& w : to_words) tw.emplace_back(w.word, w.n);
        return run_decoder_probe({co.model, co.text, from_word.word, from_word.n, to, tw, o.top, o.json});
    }
    const Prepared p = prepare(co);
    const std::vector<int64_t> from = find_occurrence("--from", p.enc, from_word);
    std::vector<std::vector<int64_t>> groups;
    for (const Occurrence& w : to_words) groups.push_back(find_occurrence("--to", p.enc, w));
    const BertModel m = BertModel::load(p.files);
    const BertOutput out = m.forward({p.enc.ids});
    const ProbeRanking ranked = rank_probe(probe_heads(out.attentions, 0, from, groups));
    const TextOut text({o.json.claim()});
    auto positions = [&](const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); };
    if (o.json.given()) {
        nlohmann::ordered_json j = {{"format", "attn-model-probe"}, {"version", 1}};  // the envelope's keys first
        j["text"] = co.text;
        j["tokens"] = p.enc.tokens;
        j["from"] = o.from;
        j["from_tokens"] = from;
        j["to"] = to;
        j["to_tokens"] = groups;
        add_probe_json(j, ranked);
        write_json(o.json, j, "attn-model-probe", 1);
        if (o.json.to_stdout()) return 0;
    }
    text.print("attn model probe: {} tokens: {}\n", p.enc.tokens.size(), fmt::join(p.enc.tokens, " "));
    text.print("query '{}' (token {}); candidates:", o.from, positions(from));
    for (size_t c = 0; c < to.size(); ++c) text.print(" '{}' (token {})", to[c], positions(groups[c]));
    text.print("\nweight = attention from the query to the candidate's tokens; heads ranked by the weight on '{}'\n\n",
               to[0]);
    print_probe_ranking(text, to, ranked, o.top, {});
    return 0;
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
    for (const GemmChoice g :
         {GemmChoice::Best, GemmChoice::Avx512, GemmChoice::Avx2, GemmChoice::Neon, GemmChoice::Generic, GemmChoice::Eigen}) {
        if (word != gemm_choice_name(g)) continue;
        BertOptions probe;
        probe.gemm = g;
        with_option("--gemm", [&] { return bert_gemm_path(probe); });
        return g;
    }
    throw InputError(fmt::format("--gemm: must be best, avx512, avx2, neon, generic or eigen, got '{}'", word));
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
    if (o.weights != "fp32" && o.weights != "bf16")
        throw InputError(fmt::format("--weights: must be fp32 or bf16, got '{}'", o.weights));
    bo.bf16_weights = o.weights == "bf16";
    return bo;
}

int run_bench(const CommonOpts& co, const BenchCmd& o) {
    const std::vector<int64_t> batches = parse_int_list("--batch", o.batches, 1, 4096);
    const BertOptions bo = bench_options(o);
    const std::string gemm = bert_gemm_path(bo);
    const std::vector<std::string> pool = bench_texts(o);
    CommonOpts c = co;
    c.text = pool.front();
    c.truncate = true;  // a long line of --file is cut to the model's maximum, as sentence-transformers does
    const Prepared p = prepare(c);
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
        fmt::print("  batch {:>4}  T {:>3} ({:>3.0f}% real tokens): median {:8.2f} ms (min {:.2f}, max {:.2f}), "
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
    if (o.texts.empty() && o.file.empty()) throw InputError("embed: give the sentences with --text T (repeatable) or --file F");
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

int run_embed(const CommonOpts& co, const EmbedCmd& o) {
    if (o.truncate && o.no_truncate) throw InputError("--no-truncate: not with --truncate (one cuts, the other refuses)");
    const TextOut text({o.json.claim(), {"--npy -", o.npy == "-"}});
    require_json_writable(o.json);
    if (!o.npy.empty() && o.npy != "-") require_writable("--npy", o.npy);
    if (o.weights != "fp32" && o.weights != "bf16")
        throw InputError(fmt::format("--weights: must be fp32 or bf16, got '{}'", o.weights));
    const ModelFiles files =
        with_option("--model", [&] { return locate_model(co.model.empty() ? default_model_dir() : co.model); });
    BertConfig config = read_bert_config(files);
    const int64_t st_max = config.max_len;  // sentence-transformers' max_seq_length (or the position table)
    if (o.max_tokens != 0) {
        if (o.max_tokens < 2 || o.max_tokens > config.max_position)
            throw InputError(fmt::format("--max-tokens: must be in [2, {}] (the model's position table, [CLS] and [SEP] "
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
                throw InputError(fmt::format("{}: is {} tokens long, more than the limit of {} ([CLS] and [SEP] included; "
                                             "--max-tokens, at most {}); without --no-truncate the first {} are kept, "
                                             "as sentence-transformers keeps them",
                                             t.where[k], enc.full_length, config.max_len, config.max_position,
                                             config.max_len));
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
    bo.bf16_weights = o.weights == "bf16";
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
        j["pooling"] = std::string(config.pooling == BertPooling::Cls ? "the [CLS] token's vector of the last layer"
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
    CLI::App* bn = sub.add_subcommand("bench", "time the encoder (no attention recording) at batch sizes; --json for scripts");
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

const Command reg{
    "model", "Real heads: run pretrained models in C++ and read their attention: the all-MiniLM-L6-v2 encoder and GPT-2-family decoders (C32, C34)", 50,
    [](CLI::App& sub) -> Runner {
        auto co = std::make_shared<CommonOpts>();
        auto ao = std::make_shared<AttentionCmd>();
        auto eo = std::make_shared<EntropyCmd>();
        auto po = std::make_shared<ProbeCmd>();
        sub.require_subcommand(1);
        sub.footer("The encoder is all-MiniLM-L6-v2: `attn model fetch` downloads it once to the per-user data folder "
                   "(~/.local/share/attn/models), where attn finds it from any folder. The decoder commands read "
                   "data/decoders/macbeth-char without --model (induction: data/decoders/induction-2l; attn ships both), or any GPT-2 folder given with --model.");
        auto common = [co](CLI::App* s, const char* default_text) {
            allow_empty(s->add_option("--text", co->text,
                                      "the sentence to run (bytes that are not UTF-8 read as U+FFFD; empty: [CLS] [SEP])")
                            ->required(default_text == nullptr)
                            ->transform(valid_utf8()));
            if (default_text != nullptr) co->text = default_text;
            s->add_option("--model", co->model,
                          std::string(kModelDirHelp) + "; a GPT-2-family "
                          "folder runs the decoder, with its causal mask (docs/decoder.md)");
            s->add_flag("--truncate", co->truncate, "cut a text longer than the model's maximum instead of refusing it");
        };
        CLI::App* a = sub.add_subcommand("attention", "every layer's and head's attention weights, as tables, SVG or JSON");
        common(a, nullptr);
        a->add_option("--layer", ao->layer, "layer to show (0-based)");
        a->add_option("--head", ao->head, "head to show (0-based; needs --layer)");
        a->add_option("--svg", ao->svg, "draw the heatmaps (all, the layer's, or one) to FILE (- for stdout: the text goes to stderr)");
        a->add_flag("--no-color", ao->no_color, "no ANSI colour (also off when stdout is not a TTY or NO_COLOR is set)");
        add_json_nonfinite(*a, ao->json_nonfinite,
                           a->add_option("--dump,-o,--output", ao->dump,
                                         "write every layer and head ([layers, 1, H, T, T]) and the tokens to FILE: "
                                         ".safetensors, .npz or .json (- for JSON on stdout: the text goes to "
                                         "stderr; attn view reads it)"));
        add_json_result(*a, ao->json, "attn-model-attention: the tokens, each layer's sinks or each head's shares, "
                                      "and the weights --layer and --head pick; --dump has every head");
        add_html_options(*a, ao->html);
        CLI::App* e = sub.add_subcommand("entropy", "per-head entropy and head-to-head similarity, trained vs random weights (encoder or GPT-2 folder)");
        common(e, nullptr);
        add_json(*e, eo->json, "attn-model-entropy");
        e->add_option("--seed", eo->seed, "seed of the random-weight model")
            ->capture_default_str()
            ->check(seed_validator());
        e->add_option("--dup-threshold", eo->dup, "JS divergence (nats) under which two heads count as near-duplicates")
            ->capture_default_str();
        CLI::App* pr = sub.add_subcommand("probe", "rank every head by how much one word attends to candidate words (encoder or GPT-2 folder)");
        common(pr, "The animal didn't cross the street because it was too tired");
        pr->add_option("--from", po->from, "the query word (WORD or WORD@N for its N-th occurrence)")
            ->required()
            ->transform(valid_utf8());
        pr->add_option("--to", po->to, "candidate words, comma-separated (WORD or WORD@N)")
            ->required()
            ->transform(valid_utf8());
        pr->add_option("--top", po->top, "show only the first N heads (0: all)")
            ->capture_default_str()
            ->check(integer_in(0));
        add_json(*pr, po->json, "attn-model-probe");
        auto bo = std::make_shared<BenchCmd>();
        CLI::App* bn = add_model_bench(sub, co->model, bo.get());
        auto emo = std::make_shared<EmbedCmd>();
        CLI::App* em = sub.add_subcommand(
            "embed", "sentence embeddings (mean pooling, L2-normalised, or as the folder's pooling files say), as sentence-transformers' encode(normalize_embeddings=True)");
        allow_empty(em->add_option("--text", emo->texts,
                                   "a sentence (repeat for more; not with --file; empty: [CLS] [SEP], as an empty line of --file)")
                        ->transform(valid_utf8()));
        em->add_option("--file", emo->file, "one sentence per line (- for stdin); an empty line is an empty sentence");
        em->add_option("--model", co->model, kModelDirHelp);
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
        em->add_option("--threads", emo->threads, "threads (sentences of a batch run in parallel; same numbers; 0: every core)")
            ->capture_default_str()
            ->check(integer_in(0, 1024));
        em->add_option("--npy,-o,--output", emo->npy, "write the embeddings as a float32 [N, D] .npy file (D: the model's hidden_size, 384 for all-MiniLM-L6-v2; - for stdout)");
        add_json(*em, emo->json, "attn-model-embed: the embeddings, texts and token counts");
        auto decoder = add_decoder_subcommands(sub);  // next, generate (app/cmd_model_decoder.cpp)
        auto fetch = add_model_fetch(sub);            // fetch (app/model_fetch.cpp)
        return [co, ao, eo, po, bo, emo, a, e, pr, bn, em, decoder, fetch] {
            if (const std::optional<int> rc = fetch()) return *rc;
            if (const std::optional<int> rc = decoder()) return *rc;
            if (em->parsed()) return run_embed(*co, *emo);
            if (bn->parsed()) return run_bench(*co, *bo);
            if (a->parsed()) return run_attention(*co, *ao);
            if (e->parsed()) return run_entropy(*co, *eo);
            if (pr->parsed()) return run_probe(*co, *po);
            throw InputError("model: name a subcommand: attention, entropy, probe, bench, embed, next, generate, "
                             "induction, cache, ablate, heads or fetch");
        };
    }};

}  // namespace
}  // namespace attn::cli
