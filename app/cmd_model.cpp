// `attn model`: real attention heads of a pretrained BERT encoder
// (all-MiniLM-L6-v2, fetched by scripts/fetch-model.sh), run entirely in C++.
//   attn model attention --text T [--layer L] [--head H] [--svg F] [--dump F]
//   attn model entropy   --text T [--json]       trained vs random-init heads (C32)
//   attn model probe     --text T --from W --to A,B   which heads link "it" to "animal" (C34)
//   attn model bench     [--batch 1,32] [--threads N] [--json]   encoder latency
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <sys/stat.h>

#include <fmt/format.h>

#include "attn/attn.hpp"
#include "attn/core/utf8.hpp"
#include "attn/model/bert.hpp"
#include "attn/model/heads.hpp"
#include "attn/viz/heatmap.hpp"
#include "attn/model/tokenizer.hpp"
#include "command.hpp"
#include "memory.hpp"
#include "options.hpp"
#include "parse.hpp"

namespace attn::cli {
namespace {

struct CommonOpts {
    std::string model, text;
    bool truncate = false;
};
struct AttentionCmd {
    int64_t layer = -1, head = -1;
    std::string svg, dump;
    JsonNonFinite json_nonfinite = JsonNonFinite::literal;
    bool no_color = false;
};
struct EntropyCmd {
    bool json = false;
    JsonNonFinite json_nonfinite = JsonNonFinite::literal;
    uint64_t seed = 0;
    double dup = kNearDuplicateJs;
};
struct BenchCmd {
    JsonNonFinite json_nonfinite = JsonNonFinite::literal;
    std::string batches = "1,32";
    int64_t repeat = 20;
    int threads = 1;
    bool json = false;
};
struct ProbeCmd {
    JsonNonFinite json_nonfinite = JsonNonFinite::literal;
    std::string from, to;
    int64_t top = 0;
    bool json = false;
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

// A label of at most `w` code points, padded on the left to w columns.
std::string label(const std::string& s, size_t w) {
    std::u32string u = utf8_decode(s);
    if (u.size() > w) u = u.substr(0, w - 1) + U"…";
    return std::string(w - u.size(), ' ') + utf8_encode(u);
}

int run_attention(const CommonOpts& co, const AttentionCmd& o) {
    // --dump - or --svg - has stdout; the tables and heatmaps then go to stderr.
    const TextOut text({{"--svg -", o.svg == "-"}, {"--dump -", o.dump == "-"}});
    const Prepared p = prepare(co);
    check_index("--layer", o.layer, p.config.layers, "layers");
    check_index("--head", o.head, p.config.heads, "heads");
    if (o.head >= 0 && o.layer < 0) throw InputError("--head: needs --layer too (a head belongs to a layer)");
    if (!o.svg.empty()) require_writable("--svg", o.svg);
    if (!o.dump.empty()) require_writable("--dump", o.dump);
    // Memory (app/memory.hpp): the weights, the attention, and what --dump and --svg add.
    require_fits_in_memory(!o.svg.empty() ? "--svg" : !o.dump.empty() ? "--dump" : "--text",
                           model_attention_bytes(file_size(p.files.weights), p.config.layers, p.config.heads,
                                                 p.config.hidden, static_cast<int64_t>(p.enc.ids.size()), !o.dump.empty(),
                                                 !o.svg.empty()),
                           fmt::format("the attention of {} tokens in {} layers x {} heads", p.enc.ids.size(),
                                       p.config.layers, p.config.heads));
    const BertModel m = BertModel::load(p.files);
    const BertOutput out = m.forward({p.enc.ids});
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
        so.title = "all-MiniLM-L6-v2 attention weights (rows: queries, columns: keys)";
        so.subtitle = co.text;
        with_option("--svg", [&] { write_file_atomic(o.svg, heatmap_svg(panels, so)); });
        if (o.svg != "-") text.print("wrote {} ({} heatmaps)\n", o.svg, panels.size());
    }
    if (!o.dump.empty()) {
        Dump d;
        d.config = {{"model", "all-MiniLM-L6-v2"}, {"text", co.text}, {"tokens", tokens}, {"ids", p.enc.ids},
                    {"layers", L}, {"heads", H},
                    {"layout", "attention is [layers, B, H, T, T]: row i of a head = query token i"}};
        Tensor all({L, 1, H, T, T});
        for (int64_t l = 0; l < L; ++l)
            std::copy(out.attentions[static_cast<size_t>(l)].data.begin(), out.attentions[static_cast<size_t>(l)].data.end(),
                      all.ptr() + l * H * T * T);
        d.tensors["attention"] = std::move(all);
        d.order.push_back("attention");
        with_option("--dump", [&] { write_file_atomic(o.dump, dump_to_string(d, o.json_nonfinite)); });
        if (o.dump != "-") text.print("wrote {} (attention [{}, 1, {}, {}, {}] and the tokens)\n", o.dump, L, H, T, T);
    }
    return 0;
}

int run_entropy(const CommonOpts& co, const EntropyCmd& o) {
    if (!(o.dup > 0.0 && o.dup <= std::log(2.0)))
        throw InputError(fmt::format("--dup-threshold: must be in (0, ln 2 = 0.693] nats, got {}", o.dup));
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

    if (o.json) {
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
        fmt::print("{}\n", json_text(j, 1, o.json_nonfinite));
        return 0;
    }

    fmt::print("attn model entropy: {} tokens: {}\n", p.enc.tokens.size(), fmt::join(p.enc.tokens, " "));
    fmt::print("mean normalised entropy of each head's rows, x100 (100 = uniform over the tokens, 0 = all on one token)\n\n");
    std::string hdr;
    for (int64_t h = 0; h < H; ++h) hdr += fmt::format(" h{:<2}", h);
    fmt::print("{:<6}|{:<{}}|{:<{}}|\n", "", " trained all-MiniLM-L6-v2", 4 * H + 6,
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
    const Occurrence from_word = parse_occurrence("--from", o.from);
    const std::vector<std::string> to = parse_word_list("--to", o.to);
    std::vector<Occurrence> to_words;
    for (const std::string& t : to) to_words.push_back(parse_occurrence("--to", t));
    const Prepared p = prepare(co);
    const std::vector<int64_t> from = find_occurrence("--from", p.enc, from_word);
    std::vector<std::vector<int64_t>> groups;
    for (const Occurrence& w : to_words) groups.push_back(find_occurrence("--to", p.enc, w));
    const BertModel m = BertModel::load(p.files);
    const BertOutput out = m.forward({p.enc.ids});
    std::vector<ProbeRow> rows = probe_heads(out.attentions, 0, from, groups);
    std::stable_sort(rows.begin(), rows.end(), [](const ProbeRow& a, const ProbeRow& b) { return a.weight[0] > b.weight[0]; });
    const size_t C = to.size();
    std::vector<size_t> prefer(C, 0);
    std::vector<double> mean(C, 0.0);
    for (const ProbeRow& r : rows) {
        const size_t best = static_cast<size_t>(std::max_element(r.weight.begin(), r.weight.end()) - r.weight.begin());
        ++prefer[best];
        for (size_t c = 0; c < C; ++c) mean[c] += r.weight[c] / static_cast<double>(rows.size());
    }
    auto positions = [&](const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); };
    if (o.json) {
        nlohmann::json j = {{"text", co.text}, {"tokens", p.enc.tokens}, {"from", o.from}, {"from_tokens", from},
                            {"to", to}, {"to_tokens", groups}};
        nlohmann::json hr = nlohmann::json::array();
        for (const ProbeRow& r : rows) hr.push_back({{"layer", r.layer}, {"head", r.head}, {"weight", r.weight}});
        j["heads"] = hr;
        j["mean_weight"] = mean;
        j["heads_preferring"] = prefer;
        fmt::print("{}\n", json_text(j, 1, o.json_nonfinite));
        return 0;
    }
    fmt::print("attn model probe: {} tokens: {}\n", p.enc.tokens.size(), fmt::join(p.enc.tokens, " "));
    fmt::print("query '{}' (token {}); candidates:", o.from, positions(from));
    for (size_t c = 0; c < C; ++c) fmt::print(" '{}' (token {})", to[c], positions(groups[c]));
    fmt::print("\nweight = attention from the query to the candidate's tokens; heads ranked by the weight on '{}'\n\n", to[0]);
    fmt::print("{:>4} {:>5} {:>4}", "rank", "layer", "head");
    for (const auto& t : to) fmt::print(" {}", label(t, 9));
    fmt::print("   prefers\n");
    const size_t shown = o.top > 0 ? std::min<size_t>(rows.size(), static_cast<size_t>(o.top)) : rows.size();
    for (size_t k = 0; k < shown; ++k) {
        const ProbeRow& r = rows[k];
        fmt::print("{:>4} {:>5} {:>4}", k + 1, r.layer, r.head);
        for (double v : r.weight) fmt::print(" {:9.3f}", v);
        const size_t best = static_cast<size_t>(std::max_element(r.weight.begin(), r.weight.end()) - r.weight.begin());
        fmt::print("   {}\n", to[best]);
    }
    if (shown < rows.size()) fmt::print(" ... {} more heads (--top 0 shows all)\n", rows.size() - shown);
    fmt::print("\n");
    for (size_t c = 0; c < C; ++c)
        fmt::print("'{}': mean weight {:.3f} over all {} heads; the preferred candidate of {} heads\n", to[c], mean[c],
                   rows.size(), prefer[c]);
    return 0;
}

// Sentences the benchmark encodes (cycled to fill a batch). The first one is
// 16 tokens with [CLS] and [SEP]: the batch-1 case. scripts/bench-model-torch.py
// reads them from --json, so both sides encode the same ids.
const char* const kBenchTexts[] = {
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "A man is playing a guitar on the stage tonight.",
    "Attention weights tell us where each token looks.",
    "The animal didn't cross the street because it was too tired.",
    "Transformers replaced recurrent networks for most language tasks in a few years.",
    "It rained all day.",
    "Mean pooling over the real tokens gives one vector per sentence, ready for cosine similarity.",
    "She sells sea shells by the sea shore.",
};

int run_bench(const CommonOpts& co, const BenchCmd& o) {
    const std::vector<int64_t> batches = parse_int_list("--batch", o.batches, 1, 4096);
    CommonOpts c = co;
    c.text = kBenchTexts[0];
    const Prepared p = prepare(c);
    const WordPieceTokenizer tok = load_tokenizer(p.files, p.config);
    const BertModel m = BertModel::load(p.files);
    BertOptions bo;
    bo.record_attention = false;  // as a plain model(input) call in PyTorch
    bo.threads = o.threads;
    nlohmann::json runs = nlohmann::json::array();
    if (!o.json)
        fmt::print("attn model bench: encoder forward + pooling, {} thread(s), median of {} runs (after 2 warm-up)\n",
                   o.threads, o.repeat);
    for (int64_t B : batches) {
        std::vector<std::vector<int32_t>> ids;
        std::vector<std::string> texts;
        for (int64_t b = 0; b < B; ++b) {
            texts.push_back(kBenchTexts[static_cast<size_t>(b) % std::size(kBenchTexts)]);
            ids.push_back(tok.encode(texts.back()).ids);
        }
        for (int w = 0; w < 2; ++w) (void)m.forward(ids, bo);
        std::vector<double> ms;
        for (int64_t r = 0; r < o.repeat; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            const BertOutput out = m.forward(ids, bo);
            const auto t1 = std::chrono::steady_clock::now();
            ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
            if (out.sentence.empty()) return 1;
        }
        std::sort(ms.begin(), ms.end());
        const double med = ms[ms.size() / 2];
        int64_t T = 0;
        for (const auto& s : ids) T = std::max<int64_t>(T, static_cast<int64_t>(s.size()));
        runs.push_back({{"batch", B}, {"tokens_padded", T}, {"median_ms", med}, {"min_ms", ms.front()},
                        {"texts", texts}, {"ids", ids}});
        if (!o.json)
            fmt::print("  batch {:>4}  T {:>3}: median {:8.2f} ms  (min {:.2f} ms, {:.0f} sentences/s)\n", B, T, med,
                       ms.front(), 1000.0 * static_cast<double>(B) / med);
    }
    if (o.json)
        fmt::print("{}\n", json_text(nlohmann::json({{"threads", o.threads}, {"repeat", o.repeat}, {"runs", runs}}), -1,
                                      o.json_nonfinite));
    return 0;
}

const Command reg{
    "model", "Real heads: run the pretrained all-MiniLM-L6-v2 encoder in C++ and read its attention (C32, C34)", 50,
    [](CLI::App& sub) -> Runner {
        auto co = std::make_shared<CommonOpts>();
        auto ao = std::make_shared<AttentionCmd>();
        auto eo = std::make_shared<EntropyCmd>();
        auto po = std::make_shared<ProbeCmd>();
        sub.require_subcommand(1);
        sub.footer("The model lives in data/models/all-MiniLM-L6-v2 (fetch it once: scripts/fetch-model.sh).");
        auto common = [co](CLI::App* s, const char* default_text) {
            allow_empty(s->add_option("--text", co->text,
                                      "the sentence to run (bytes that are not UTF-8 read as U+FFFD; empty: [CLS] [SEP])")
                            ->required(default_text == nullptr)
                            ->transform(valid_utf8()));
            if (default_text != nullptr) co->text = default_text;
            s->add_option("--model", co->model,
                          "model folder (default: $ATTN_MODEL_DIR, else data/models/all-MiniLM-L6-v2)");
            s->add_flag("--truncate", co->truncate, "cut a text longer than the model's maximum instead of refusing it");
        };
        CLI::App* a = sub.add_subcommand("attention", "every layer's and head's attention weights, as tables, SVG or JSON");
        common(a, nullptr);
        a->add_option("--layer", ao->layer, "layer to show (0-based)");
        a->add_option("--head", ao->head, "head to show (0-based; needs --layer)");
        a->add_option("--svg", ao->svg, "draw the heatmaps (all, the layer's, or one) to FILE (- for stdout: the text goes to stderr)");
        a->add_flag("--no-color", ao->no_color, "no ANSI colour (also off when stdout is not a TTY or NO_COLOR is set)");
        add_json_nonfinite(*a, ao->json_nonfinite,
                           a->add_option("--dump", ao->dump,
                                         "write every layer and head ([layers, 1, H, T, T]) and the tokens as JSON to "
                                         "FILE (- for stdout: the text goes to stderr; attn view reads it)"));
        CLI::App* e = sub.add_subcommand("entropy", "per-head entropy and head-to-head similarity, trained vs random weights");
        common(e, nullptr);
        add_json_nonfinite(*e, eo->json_nonfinite, e->add_flag("--json", eo->json, "machine-readable output"));
        e->add_option("--seed", eo->seed, "seed of the random-weight model")
            ->capture_default_str()
            ->check(seed_validator());
        e->add_option("--dup-threshold", eo->dup, "JS divergence (nats) under which two heads count as near-duplicates")
            ->capture_default_str();
        CLI::App* pr = sub.add_subcommand("probe", "rank every head by how much one word attends to candidate words");
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
        add_json_nonfinite(*pr, po->json_nonfinite, pr->add_flag("--json", po->json, "machine-readable output"));
        auto bo = std::make_shared<BenchCmd>();
        CLI::App* bn = sub.add_subcommand("bench", "time the encoder (no attention recording) at batch sizes; --json for scripts");
        bn->add_option("--model", co->model, "model folder (default: $ATTN_MODEL_DIR, else data/models/all-MiniLM-L6-v2)");
        bn->add_option("--batch", bo->batches, "batch sizes, comma-separated")->capture_default_str();
        bn->add_option("--repeat", bo->repeat, "timed runs per batch size (the median is reported)")
            ->capture_default_str()
            ->check(integer_in(1));
        bn->add_option("--threads", bo->threads, "threads (sentences of a batch run in parallel)")
            ->capture_default_str()
            ->check(integer_in(1));
        add_json_nonfinite(*bn, bo->json_nonfinite,
                           bn->add_flag("--json", bo->json, "machine-readable output, with the token ids used"));
        return [co, ao, eo, po, bo, a, e, pr, bn] {
            if (bn->parsed()) return run_bench(*co, *bo);
            if (a->parsed()) return run_attention(*co, *ao);
            if (e->parsed()) return run_entropy(*co, *eo);
            if (pr->parsed()) return run_probe(*co, *po);
            throw InputError("model: name a subcommand: attention, entropy or probe");
        };
    }};

}  // namespace
}  // namespace attn::cli
