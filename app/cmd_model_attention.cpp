// `attn model attention`, `entropy` and `probe`: reading a pretrained model's heads, written once over
// ModelText (app/model_text.hpp), which the encoder (all-MiniLM-L6-v2 or any BERT folder) and a
// GPT-2-family decoder (--model DIR) both implement.
//   attn model attention --text T [--layer L] [--head H] [--svg F] [--dump F] [--json [F]] [--html F]
//   attn model entropy   --text T [--seed S] [--dup-threshold X] [--json]   trained vs random heads (C32)
//   attn model probe     --text T --from W --to A,B [--top N] [--json]      which heads link "it" to "animal" (C34)
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn/core/utf8.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/model/heads.hpp"
#include "attn/viz/heatmap.hpp"
#include "cmd_model.hpp"
#include "command.hpp"
#include "html_page.hpp"
#include "model_text.hpp"
#include "options.hpp"
#include "parse.hpp"

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

void add_probe_json(nlohmann::ordered_json& j, const ProbeRanking& r) {
    nlohmann::ordered_json hr = nlohmann::ordered_json::array();
    for (const ProbeRow& row : r.rows) hr.push_back({{"layer", row.layer}, {"head", row.head}, {"weight", row.weight}});
    j["heads"] = hr;
    j["mean_weight"] = r.mean_weight;
    j["heads_preferring"] = r.heads_preferring;
}

namespace {
// A label of at most `w` code points, padded on the left to w columns.
std::string label(const std::string& s, size_t w) {
    std::u32string u = utf8_decode(s);
    if (u.size() > w) u = u.substr(0, w - 1) + U"…";
    return std::string(w - u.size(), ' ') + utf8_encode(u);
}
}  // namespace

void print_probe_ranking(const TextOut& text, const std::vector<std::string>& to, const ProbeRanking& r, int64_t top,
                         const std::vector<bool>& after) {
    text.print("{:>4} {:>5} {:>4}", "rank", "layer", "head");
    for (const std::string& t : to) text.print(" {}", label(t, 9));
    text.print("   prefers\n");
    const size_t n_shown = top > 0 ? std::min<size_t>(r.rows.size(), static_cast<size_t>(top)) : r.rows.size();
    for (size_t k = 0; k < n_shown; ++k) {
        const ProbeRow& row = r.rows[k];
        text.print("{:>4} {:>5} {:>4}", k + 1, row.layer, row.head);
        for (double v : row.weight) text.print(" {:9.3f}", v);
        text.print("   {}\n", to[preferred_candidate(row)]);
    }
    if (n_shown < r.rows.size()) text.print(" ... {} more heads (--top 0 shows all)\n", r.rows.size() - n_shown);
    text.print("\n");
    for (size_t k = 0; k < to.size(); ++k) {
        text.print("'{}': mean weight {:.3f} over all {} heads; the preferred candidate of {} heads\n", to[k],
                   r.mean_weight[k], r.rows.size(), r.heads_preferring[k]);
        if (k < after.size() && after[k])
            text.print("  note: '{}' comes after the query, so the causal mask gives it no weight\n", to[k]);
    }
}

namespace {

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
struct ProbeCmd {
    JsonOut json;
    std::string from, to;
    int64_t top = 0;
};

void check_index(const char* opt, int64_t v, int64_t n, const char* what) {
    if (v < -1 || v >= n)
        throw InputError(fmt::format("{}: must be in [0, {}] (the model has {} {}), got {}", opt, n - 1, n, what, v));
}

// --json of `attention`: the tokens, where each layer's (or head's) weight goes, and the picked weights.
void write_attention_json(const CommonOpts& co, const AttentionCmd& o, const ModelText& m, const HeadsPass& p,
                          const TextOut& text) {
    nlohmann::json j = {{"model", m.name()}, {"architecture", m.architecture()}, {"text", co.text},
                        {"tokens", m.tokens()}, {"ids", m.ids()}, {"layers", m.layers()}, {"heads", m.heads()},
                        {"weights", picked_weights_json(p.attentions, o.layer, o.head)}};
    m.add_where_weight_goes(j, p);
    write_json(o.json, j, "attn-model-attention", 1);
    if (!o.json.to_stdout()) text.print("wrote {} (attn-model-attention JSON)\n", o.json.path());
}

// The heatmaps of --layer (and --head) on the terminal, or the hint to pick one.
void print_heatmaps(const AttentionCmd& o, const ModelText& m, const HeadsPass& p, const TextOut& text) {
    const int64_t T = m.size(), H = m.heads();
    if (o.layer < 0) {
        text.print("\nPick a head for its heatmap: --layer L --head H (L in 0..{}, H in 0..{}); --svg FILE draws "
                   "them.\n",
                   m.layers() - 1, H - 1);
        return;
    }
    HeatmapStyle style;
    style.color = text.color(o.no_color);
    const Tensor& w = p.attentions[static_cast<size_t>(o.layer)];  // (1, H, T, T)
    text.print("{}", m.heatmap_caption());
    for (int64_t h = 0; h < H; ++h)
        if (o.head < 0 || o.head == h)
            text.print("\n{}", render_heatmap(make_panel(fmt::format("layer {}, head {}", o.layer, h),
                                                         w.ptr() + h * T * T, T, T, m.tokens(), m.tokens()),
                                              style));
}

void write_attention_svg(const CommonOpts& co, const AttentionCmd& o, const ModelText& m, const HeadsPass& p,
                         const TextOut& text) {
    const int64_t T = m.size();
    std::vector<HeatmapPanel> panels;
    for (int64_t l = 0; l < m.layers(); ++l)
        for (int64_t h = 0; h < m.heads(); ++h)
            if ((o.layer < 0 || o.layer == l) && (o.head < 0 || o.head == h))
                panels.push_back(make_panel(fmt::format("layer {} head {}", l, h),
                                            p.attentions[static_cast<size_t>(l)].ptr() + h * T * T, T, T, m.tokens(),
                                            m.tokens()));
    SvgOptions so;
    so.title = m.svg_title();
    so.subtitle = co.text;
    with_option("--svg", [&] { write_file_atomic(o.svg, heatmap_svg(panels, so)); });
    if (o.svg != "-") text.print("wrote {} ({} heatmaps)\n", o.svg, panels.size());
}

void write_attention_dump(const CommonOpts& co, const AttentionCmd& o, const ModelText& m, const HeadsPass& p,
                          const TextOut& text) {
    const int64_t L = m.layers(), H = m.heads(), T = m.size();
    Dump d;
    d.config = m.dump_config(co.text);
    Tensor all({L, 1, H, T, T});
    for (int64_t l = 0; l < L; ++l)
        std::copy(p.attentions[static_cast<size_t>(l)].data.begin(), p.attentions[static_cast<size_t>(l)].data.end(),
                  all.ptr() + l * H * T * T);
    d.tensors["attention"] = std::move(all);
    d.order.push_back("attention");
    with_option("--dump", [&] { write_dump_file(o.dump, d, o.json_nonfinite); });
    if (o.dump != "-") text.print("wrote {} (attention [{}, 1, {}, {}, {}] and the tokens)\n", o.dump, L, H, T, T);
}

int run_attention(const CommonOpts& co, const AttentionCmd& o) {
    // --dump - or --svg - has stdout; the tables and heatmaps then go to stderr.
    const TextOut text({{"--svg -", o.svg == "-"}, {"--dump -", o.dump == "-"}, o.json.claim()});
    require_json_writable(o.json);
    const std::unique_ptr<ModelText> m = open_model_text(co.model, co.text, co.truncate);
    check_index("--layer", o.layer, m->layers(), "layers");
    check_index("--head", o.head, m->heads(), "heads");
    if (o.head >= 0 && o.layer < 0) throw InputError("--head: needs --layer too (a head belongs to a layer)");
    if (!o.svg.empty()) require_writable("--svg", o.svg);
    if (!o.dump.empty()) {
        with_option("--dump", [&] { dump_format_of(o.dump); });
        require_writable("--dump", o.dump);
    }
    check_html(o.html);
    m->check_attention_memory(!o.dump.empty(), !o.svg.empty());
    const HeadsPass p = m->run(!o.html.file.empty());  // the values, for the page's norm-based view
    text.print("{}", m->header("attention"));
    m->print_where_weight_goes(text, p);
    if (o.json.given()) write_attention_json(co, o, *m, p, text);
    print_heatmaps(o, *m, p, text);
    if (!o.svg.empty()) write_attention_svg(co, o, *m, p, text);
    if (!o.dump.empty()) write_attention_dump(co, o, *m, p, text);
    if (!o.html.file.empty()) write_html_page(o.html, m->page(p, co.text), text);
    return 0;
}

// One model's side of `entropy --json`: its entropy per [layer][head], the head-to-head JS
// divergences and the near-duplicate pairs per layer.
nlohmann::ordered_json entropy_side(const HeadFigures& f, const char* name, int64_t H, double dup) {
    nlohmann::ordered_json j = {{"name", name}, {"entropy", f.entropy}};
    nlohmann::ordered_json sims = nlohmann::ordered_json::array(), dups = nlohmann::ordered_json::array();
    for (const Tensor& s : f.similarity) {
        std::vector<std::vector<float>> rows;  // (H, H)
        for (int64_t h = 0; h < H; ++h) rows.emplace_back(s.data.begin() + h * H, s.data.begin() + (h + 1) * H);
        sims.push_back(rows);
        nlohmann::ordered_json d = nlohmann::ordered_json::array();
        for (const HeadPair& q : near_duplicate_heads(s, dup)) d.push_back({{"a", q.a}, {"b", q.b}, {"js", q.js}});
        dups.push_back(d);
    }
    j["similarity_js"] = sims;
    j["near_duplicates"] = dups;
    return j;
}

void print_entropy(const ModelText& m, const EntropyCmd& o, const HeadsPass& trained, const HeadFigures& ft,
                   const HeadFigures& fr, const TextOut& text) {
    const int64_t L = m.layers(), H = m.heads();
    const double pairs = static_cast<double>(H * (H - 1) / 2);
    text.print("{}", m.header("entropy"));
    m.entropy_intro(text, o.seed);
    std::string hdr;
    for (int64_t h = 0; h < H; ++h) hdr += fmt::format(" h{:<2}", h);
    text.print("{:<6}|{} mean |{} mean |\n", "layer", hdr, hdr);
    auto row = [&](const std::vector<double>& e) {
        std::string s;
        for (double v : e) s += fmt::format(" {:3.0f}", 100 * v);
        return s + fmt::format("  {:3.0f} ",
                               100 * std::accumulate(e.begin(), e.end(), 0.0) / static_cast<double>(e.size()));
    };
    for (int64_t l = 0; l < L; ++l)
        text.print("{:<6}|{}|{}|\n", l, row(ft.entropy[static_cast<size_t>(l)]),
                   row(fr.entropy[static_cast<size_t>(l)]));
    m.entropy_rows(text, trained);
    text.print("\nhead-to-head similarity: mean Jensen-Shannon divergence between two heads' rows (nats, 0 = "
               "identical,\nln 2 = 0.69 = disjoint); pairs under --dup-threshold {} are flagged as near-duplicates\n\n",
               o.dup);
    text.print("{:<6} {:>10} {:>10}   {}\n", "layer", "trained", "random",
               "trained near-duplicate pairs (heads a~b: JS)");
    for (int64_t l = 0; l < L; ++l) {
        const auto dt = near_duplicate_heads(ft.similarity[static_cast<size_t>(l)], o.dup);
        const auto dr = near_duplicate_heads(fr.similarity[static_cast<size_t>(l)], o.dup);
        std::string list;
        for (size_t k = 0; k < dt.size() && k < 6; ++k)
            list += fmt::format("{}~{}: {:.3f}  ", dt[k].a, dt[k].b, dt[k].js);
        if (dt.size() > 6) list += fmt::format("(+{} more)", dt.size() - 6);
        text.print("{:<6} {:>4}/{:<5} {:>4}/{:<5}   {}\n", l, dt.size(), pairs, dr.size(), pairs, list);
    }
    text.print("{}", m.entropy_closing());
}

int run_entropy(const CommonOpts& co, const EntropyCmd& o) {
    if (!(o.dup > 0.0 && o.dup <= std::log(2.0)))
        throw InputError(fmt::format("--dup-threshold: must be in (0, ln 2 = 0.693] nats, got {}", o.dup));
    const TextOut text({o.json.claim()});
    require_json_writable(o.json);
    const std::unique_ptr<ModelText> m = open_model_text(co.model, co.text, co.truncate);
    const HeadsPass random = m->run_random(o.seed);
    const HeadsPass trained = m->run(false);
    const HeadFigures ft = head_figures(trained.attentions, trained.mask);
    const HeadFigures fr = head_figures(random.attentions, random.mask);
    if (o.json.given()) {
        nlohmann::ordered_json j = {{"format", "attn-model-entropy"}, {"version", 1}};  // the envelope's keys first
        m->add_source(j);
        j["text"] = co.text;
        j["tokens"] = m->tokens();
        m->add_entropy_json(j, trained);
        j["dup_threshold_nats"] = o.dup;
        j["random_seed"] = o.seed;
        j["models"] = {entropy_side(ft, "trained", m->heads(), o.dup), entropy_side(fr, "random", m->heads(), o.dup)};
        m->write_entropy_json(o.json, j);
        if (o.json.to_stdout()) return 0;
    }
    print_entropy(*m, o, trained, ft, fr, text);
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

int run_probe(const CommonOpts& co, const ProbeCmd& o) {
    if (o.from.empty()) throw InputError("--from: must name a word of --text, got ''");
    const TextOut text({o.json.claim()});
    require_json_writable(o.json);
    const Occurrence from_word = parse_occurrence("--from", o.from);
    const std::vector<std::string> to = parse_word_list("--to", o.to);
    std::vector<Occurrence> to_words;
    for (const std::string& t : to) to_words.push_back(parse_occurrence("--to", t));
    const std::unique_ptr<ModelText> m = open_model_text(co.model, co.text, co.truncate);
    const std::vector<int64_t> from = m->find("--from", from_word.word, from_word.n);
    std::vector<std::vector<int64_t>> groups;
    for (const Occurrence& w : to_words) groups.push_back(m->find("--to", w.word, w.n));
    const HeadsPass p = m->run(false);
    const ProbeRanking ranked = rank_probe(probe_heads(p.attentions, 0, from, groups));
    std::vector<bool> after;  // under the causal mask a query sees only the tokens up to itself
    for (size_t k = 0; m->causal() && k < to.size(); ++k) after.push_back(groups[k].front() > from.front());
    if (o.json.given()) {
        nlohmann::ordered_json j = {{"format", "attn-model-probe"}, {"version", 1}};  // the envelope's keys first
        m->add_source(j);
        j["text"] = co.text;
        j["tokens"] = m->tokens();
        j["from"] = o.from;
        j["from_tokens"] = from;
        j["to"] = to;
        j["to_tokens"] = groups;
        m->add_probe_note(j);
        add_probe_json(j, ranked);
        write_json(o.json, j, "attn-model-probe", 1);
        if (o.json.to_stdout()) return 0;
    }
    auto positions = [&](const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); };
    text.print("{}", m->header("probe"));
    text.print("query '{}' (token {}); candidates:", o.from, positions(from));
    for (size_t c = 0; c < to.size(); ++c) text.print(" '{}' (token {})", to[c], positions(groups[c]));
    text.print("{}", m->probe_weight_line(to[0]));
    print_probe_ranking(text, to, ranked, o.top, after);
    return 0;
}

}  // namespace

std::function<std::optional<int>()> add_attention_subcommands(CLI::App& model) {
    auto co = std::make_shared<CommonOpts>();
    auto ao = std::make_shared<AttentionCmd>();
    auto eo = std::make_shared<EntropyCmd>();
    auto po = std::make_shared<ProbeCmd>();
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
    CLI::App* a =
        model.add_subcommand("attention", "every layer's and head's attention weights, as tables, SVG or JSON");
    common(a, nullptr);
    a->add_option("--layer", ao->layer, "layer to show (0-based)");
    a->add_option("--head", ao->head, "head to show (0-based; needs --layer)");
    a->add_option("--svg", ao->svg,
                  "draw the heatmaps (all, the layer's, or one) to FILE (- for stdout: the text goes to stderr)");
    a->add_flag("--no-color", ao->no_color, "no ANSI colour (also off when stdout is not a TTY or NO_COLOR is set)");
    add_json_nonfinite(*a, ao->json_nonfinite,
                       a->add_option("--dump,-o,--output", ao->dump,
                                     "write every layer and head ([layers, 1, H, T, T]) and the tokens to FILE: "
                                     ".safetensors, .npz or .json (- for JSON on stdout: the text goes to "
                                     "stderr; attn view reads it)"));
    add_json_result(*a, ao->json, "attn-model-attention: the tokens, each layer's sinks or each head's shares, "
                                  "and the weights --layer and --head pick; --dump has every head");
    add_html_options(*a, ao->html);
    CLI::App* e = model.add_subcommand(
        "entropy", "per-head entropy and head-to-head similarity, trained vs random weights (encoder or GPT-2 folder)");
    common(e, nullptr);
    add_json(*e, eo->json, "attn-model-entropy");
    e->add_option("--seed", eo->seed, "seed of the random-weight model")
        ->capture_default_str()
        ->check(seed_validator());
    e->add_option("--dup-threshold", eo->dup, "JS divergence (nats) under which two heads count as near-duplicates")
        ->capture_default_str();
    CLI::App* pr = model.add_subcommand(
        "probe", "rank every head by how much one word attends to candidate words (encoder or GPT-2 folder)");
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
    return [co, ao, eo, po, a, e, pr]() -> std::optional<int> {
        if (a->parsed()) return run_attention(*co, *ao);
        if (e->parsed()) return run_entropy(*co, *eo);
        if (pr->parsed()) return run_probe(*co, *po);
        return std::nullopt;
    };
}

}  // namespace attn::cli
