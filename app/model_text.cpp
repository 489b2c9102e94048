// app/model_text.cpp: the encoder and the decoder as ModelText (app/model_text.hpp), and the
// decoder's loader that its own verbs share.
#include "model_text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sys/stat.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn/core/errors.hpp"
#include "attn/core/stats.hpp"
#include "attn/model/bert.hpp"
#include "attn/model/tokenizer.hpp"
#include "html_page.hpp"
#include "memory.hpp"
#include "model_fetch.hpp"

namespace attn::cli {

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

std::string quoted_tokens(const std::vector<std::string>& tokens) {
    std::string shown;
    for (const std::string& t : tokens) shown += (shown.empty() ? "" : " ") + quoted(t);
    return shown;
}

bool is_decoder_folder(const std::string& dir) { return folder_model_type(dir) == "gpt2"; }

std::vector<std::string> LoadedDecoder::tokens() const {
    std::vector<std::string> out;
    for (int32_t id : ids) out.push_back(tok.token_text(id));
    return out;
}

std::string LoadedDecoder::describe() const {
    const Gpt2Config& c = model.config;
    return fmt::format("{} (GPT-2: {} layers x {} heads, d_model {}, vocabulary {}, {} positions)", files.dir,
                       c.n_layer, c.n_head, c.n_embd, c.vocab_size, c.n_positions);
}

LoadedDecoder load_decoder(const DecoderLoad& o) {
    const std::string dir = o.model.empty() ? default_decoder_dir(o.shipped) : o.model;
    const Gpt2Files files = with_option("--model", [&] { return locate_gpt2(dir); });
    const Gpt2Config config = o.config ? *o.config : with_option("--model", [&] { return read_gpt2_config(files); });
    BpeTokenizer tok = with_option("--model", [&] { return load_gpt2_tokenizer(files, config); });
    std::vector<int32_t> ids;
    if (o.probe) {
        if (tok.eos_id() >= 0) ids.push_back(tok.eos_id());
    } else if (o.bos) {
        if (tok.eos_id() < 0) throw InputError("--bos: the vocabulary has no <|endoftext|> token");
        ids.push_back(tok.eos_id());
    }
    // a text too long to fit is refused before the merges run (their cost grows with a word's length)
    const int64_t most = config.n_positions * tok.max_token_bytes();
    if (static_cast<int64_t>(o.text.size()) > most)
        throw InputError(fmt::format("--text: is {} bytes long, more than the model's {} positions can hold (a token "
                                     "stands for at most {} bytes)",
                                     o.text.size(), config.n_positions, tok.max_token_bytes()));
    const BpeEncoding enc = with_option("--text", [&] { return tok.encode(o.text); });
    ids.insert(ids.end(), enc.ids.begin(), enc.ids.end());
    if (ids.empty() && !o.probe)
        throw InputError("--text: gives no tokens; the model needs at least one (or pass --bos)");
    if (static_cast<int64_t>(ids.size()) > config.n_positions)
        throw InputError(fmt::format("--text: is {} tokens long, more than the model's {} positions (n_positions)",
                                     ids.size(), config.n_positions));
    Gpt2Model model = with_option("--model", [&] { return Gpt2Model::load(files, config); });
    return {files, std::move(model), std::move(tok), std::move(ids)};
}

HeadShares head_shares(const Tensor& w, int64_t h) {
    const int64_t T = w.dim(3);
    const float* p = w.ptr() + h * T * T;
    HeadShares s;
    for (int64_t i = 1; i < T; ++i) {
        s.first += p[i * T];
        s.prev += p[i * T + i - 1];
        s.self += p[i * T + i];
    }
    const double n = static_cast<double>(T - 1);
    return {s.first / n, s.prev / n, s.self / n};
}


namespace {

// Bytes of a file, 0 when it cannot be read (the loader then names the problem).
double file_size(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_size) : 0.0;
}

// The encoder: a BERT folder (all-MiniLM-L6-v2 by default), its WordPiece tokens with [CLS] and
// [SEP], the key-padding mask; the weights load on the first run.
class EncoderText final : public ModelText {
public:
    EncoderText(const std::string& model, const std::string& text, bool truncate) {
        files_ = with_option("--model", [&] { return locate_model(model.empty() ? default_model_dir() : model); });
        config_ = read_bert_config(files_);
        const WordPieceTokenizer tok = load_tokenizer(files_, config_);
        enc_ = tok.encode(text);
        if (enc_.truncated) {
            if (!truncate)
                throw InputError(fmt::format("--text: is {} tokens long, more than the model's maximum of {} ([CLS] "
                                             "and [SEP] included); shorten it or pass --truncate",
                                             enc_.full_length, config_.max_len));
            std::fflush(stdout);
            fmt::print(stderr, "attn: warning: --text: cut from {} to {} tokens (the model's maximum)\n",
                       enc_.full_length, config_.max_len);
        }
        tokens_ = enc_.tokens;
        ids_ = enc_.ids;
    }
    std::string name() const override { return model_name(files_); }
    const char* architecture() const override { return "bert"; }
    bool causal() const override { return false; }
    int64_t layers() const override { return config_.layers; }
    int64_t heads() const override { return config_.heads; }
    std::string header(std::string_view verb) const override {
        return fmt::format("attn model {}: {} tokens: {}\n", verb, tokens_.size(), fmt::join(tokens_, " "));
    }
    void check_attention_memory(bool dump, bool svg) const override {
        // the weights, the attention, and what --dump and --svg add (app/memory.hpp)
        require_fits_in_memory(svg ? "--svg" : dump ? "--dump" : "--text",
                               model_attention_bytes(file_size(files_.weights), config_.layers, config_.heads,
                                                     config_.hidden, size(), dump, svg),
                               fmt::format("the attention of {} tokens in {} layers x {} heads", size(),
                                           config_.layers, config_.heads));
    }
    HeadsPass run(bool values) const override {
        if (!model_) model_ = BertModel::load(files_);
        BertOptions o;
        o.record_qkv = values;
        return pass(model_->forward({ids_}, o));
    }
    HeadsPass run_random(uint64_t seed) const override {
        return pass(BertModel::random(config_, seed).forward({ids_}));
    }
    std::vector<int64_t> find(std::string_view opt, const std::string& word, int n) const override {
        return with_option(opt, [&] { return find_word(enc_, word, n); });
    }

    void print_where_weight_goes(const TextOut& text, const HeadsPass& p) const override {
        // the "attention sinks" [CLS], [SEP], punctuation, per layer
        text.print("\nshare of all attention weight (mean over heads and query tokens) received by:\n");
        text.print("{:>7} {:>7} {:>7} {:>7} {:>7}   {}\n", "layer", "[CLS]", "[SEP]", "punct", "other",
                   "top receiver");
        for (int64_t l = 0; l < layers(); ++l) {
            const Sinks s = layer_sinks(p.attentions[static_cast<size_t>(l)], 0, tokens_);
            text.print("{:>7} {:>6.0f}% {:>6.0f}% {:>6.0f}% {:>6.0f}%   {} ({:.0f}%)\n", l, 100 * s.cls, 100 * s.sep,
                       100 * s.punct, 100 * s.other, tokens_[s.top], 100 * s.per_key[s.top]);
        }
    }
    void add_where_weight_goes(nlohmann::json& j, const HeadsPass& p) const override {
        nlohmann::json layers_json = nlohmann::json::array();
        for (int64_t l = 0; l < layers(); ++l) {
            const Sinks s = layer_sinks(p.attentions[static_cast<size_t>(l)], 0, tokens_);
            layers_json.push_back({{"layer", l}, {"cls", s.cls}, {"sep", s.sep}, {"punct", s.punct},
                                   {"other", s.other}, {"top_token", tokens_[s.top]}, {"top_position", s.top},
                                   {"top_share", s.per_key[s.top]}});
        }
        j["sinks"] = layers_json;
    }
    const char* heatmap_caption() const override {
        return "\nrows: query tokens; columns: the keys each row spreads its weight over (each row sums to 1)\n";
    }
    std::string svg_title() const override { return name() + " attention weights (rows: queries, columns: keys)"; }
    nlohmann::json dump_config(const std::string& text) const override {
        return {{"model", name()}, {"text", text}, {"tokens", tokens_}, {"ids", ids_}, {"layers", layers()},
                {"heads", heads()}, {"layout", "attention is [layers, B, H, T, T]: row i of a head = query token i"}};
    }
    AttentionPage page(const HeadsPass& p, const std::string& text) const override {
        AttentionPage page = page_from_model(p.attentions, p.values, tokens_, p.mask);
        page.subtitle = text;
        page.source = name();
        return page;
    }

    void entropy_intro(const TextOut& text, uint64_t seed) const override {
        text.print("mean normalised entropy of each head's rows, x100 (100 = uniform over the tokens, 0 = all on one "
                   "token)\n\n");
        const int w = static_cast<int>(4 * heads() + 6);
        text.print("{:<6}|{:<{}}|{:<{}}|\n", "", " trained " + name(), w,
                   fmt::format(" random init N(0, 0.02^2), seed {}", seed), w);
    }
    void entropy_rows(const TextOut&, const HeadsPass&) const override {}
    const char* entropy_closing() const override {
        return "\nRandom heads are all near-uniform, so they are 'similar' only because they all say nothing;\n"
               "trained heads are sharper (lower entropy) and mostly distinct, with a few look-alike pairs (C32).\n";
    }
    void add_entropy_json(nlohmann::ordered_json& j, const HeadsPass&) const override {
        j["entropy"] = "mean normalised entropy per [layer][head]: 1 uniform, 0 one-hot";
    }
    void add_source(nlohmann::ordered_json&) const override {}
    void write_entropy_json(const JsonOut& out, const nlohmann::ordered_json& j) const override {
        write_json(out, nlohmann::json(j), "attn-model-entropy", 1);  // keys sorted
    }

    std::string probe_weight_line(const std::string& first) const override {
        return fmt::format("\nweight = attention from the query to the candidate's tokens; heads ranked by the weight "
                           "on '{}'\n\n",
                           first);
    }
    void add_probe_note(nlohmann::ordered_json&) const override {}

private:
    static HeadsPass pass(BertOutput&& out) {
        return {std::move(out.attentions), std::move(out.values), out.mask};
    }
    ModelFiles files_;
    BertConfig config_;
    Encoding enc_;
    mutable std::optional<BertModel> model_;
};

// The positions of the tokens that spell the n-th whole-word occurrence of `word` in the text the
// tokens decode to (a word boundary: a byte that is not an ASCII letter or digit, nor part of a
// multi-byte character, or either end). Errors name no option.
std::vector<int64_t> find_bpe_word(const std::vector<std::string>& tokens, const std::string& word, int n) {
    if (word.empty()) throw InputError("names no word");
    std::string all;
    std::vector<size_t> start;
    for (const std::string& t : tokens) {
        start.push_back(all.size());
        all += t;
    }
    auto word_byte = [](unsigned char ch) { return std::isalnum(ch) != 0 || ch >= 0x80; };
    int seen = 0;
    for (size_t at = all.find(word); at != std::string::npos; at = all.find(word, at + 1)) {
        const size_t end = at + word.size();
        const bool left = at == 0 || !word_byte(static_cast<unsigned char>(all[at - 1])) ||
                          !word_byte(static_cast<unsigned char>(word.front()));
        const bool right = end == all.size() || !word_byte(static_cast<unsigned char>(all[end])) ||
                           !word_byte(static_cast<unsigned char>(word.back()));
        if (!left || !right || ++seen != n) continue;
        std::vector<int64_t> pos;
        for (size_t t = 0; t < tokens.size(); ++t)
            if (start[t] < end && start[t] + tokens[t].size() > at) pos.push_back(static_cast<int64_t>(t));
        return pos;
    }
    if (seen > 0) throw InputError(fmt::format("'{}' occurs {} time(s) in the text, not {}", word, seen, n));
    std::string list;
    for (size_t t = 0; t < tokens.size() && t < 30; ++t) list += (t ? " " : "") + quoted(tokens[t]);
    throw InputError(fmt::format("'{}' is not a word of the text (its tokens: {})", word, list));
}

// The decoder: a GPT-2-family folder, its byte-level BPE tokens, the causal mask.
class DecoderText final : public ModelText {
public:
    DecoderText(const std::string& model, const std::string& text, const Gpt2Config& config)
        : l_(load_decoder({model, text, false, false, kMacbethDecoder, config})) {
        tokens_ = l_.tokens();
        ids_ = l_.ids;
    }
    std::string name() const override { return l_.files.dir; }
    const char* architecture() const override { return "gpt2"; }
    bool causal() const override { return true; }
    int64_t layers() const override { return l_.model.config.n_layer; }
    int64_t heads() const override { return l_.model.config.n_head; }
    std::string header(std::string_view verb) const override {
        return fmt::format("attn model {}: {}\n{} tokens: {}\n", verb, l_.describe(), size(), quoted_tokens(tokens_));
    }
    void check_attention_memory(bool, bool) const override {}
    HeadsPass run(bool values) const override {
        ActivationCache cache;  // with values: hook_v, for the page's norm-based view
        StackOptions fo;
        if (values) fo.cache = &cache;
        HeadsPass p{l_.model.forward(l_.ids, fo).attentions, {}, Mask::make_causal()};
        for (int64_t l = 0; values && l < layers(); ++l)
            p.values.push_back(cache.at(fmt::format("blocks.{}.attn.hook_v", l)));
        return p;
    }
    HeadsPass run_random(uint64_t seed) const override {
        if (size() < 2)
            throw InputError("--text: gives 1 token; under the causal mask its only row has one key and no entropy");
        return {Gpt2Model::random(l_.model.config, seed).forward(l_.ids).attentions, {}, Mask::make_causal()};
    }
    std::vector<int64_t> find(std::string_view opt, const std::string& word, int n) const override {
        return with_option(opt, [&] { return find_bpe_word(tokens_, word, n); });
    }

    void print_where_weight_goes(const TextOut& text, const HeadsPass& p) const override {
        if (size() < 2) return;  // mean over queries i >= 1 (query 0 sees only itself under the causal mask)
        text.print("\nweight each head puts on the first token (a common 'sink'), the previous token and the query "
                   "itself,\nmean over the queries after the first (the causal mask leaves query 0 only itself):\n");
        text.print("{:>6} {:>5} {:>7} {:>7} {:>7}\n", "layer", "head", "first", "prev", "self");
        for (int64_t l = 0; l < layers(); ++l)
            for (int64_t h = 0; h < heads(); ++h) {
                const HeadShares sh = head_shares(p.attentions[static_cast<size_t>(l)], h);
                text.print("{:>6} {:>5} {:>6.0f}% {:>6.0f}% {:>6.0f}%\n", l, h, 100 * sh.first, 100 * sh.prev,
                           100 * sh.self);
            }
    }
    void add_where_weight_goes(nlohmann::json& j, const HeadsPass& p) const override {
        // each head's shares (first token, previous token, itself; none for a one-token text)
        nlohmann::json rows = nlohmann::json::array();
        for (int64_t l = 0; l < layers(); ++l)
            for (int64_t h = 0; h < heads(); ++h) {
                nlohmann::json row = {{"layer", l}, {"head", h}};
                if (size() >= 2) {
                    const HeadShares sh = head_shares(p.attentions[static_cast<size_t>(l)], h);
                    row.update({{"first", sh.first}, {"prev", sh.prev}, {"self", sh.self}});
                }
                rows.push_back(row);
            }
        j["head_shares"] = rows;
    }
    const char* heatmap_caption() const override {
        return "\nrows: query tokens; columns: the keys each row spreads its weight over (each row sums to 1; "
               "above the diagonal the causal mask leaves 0)\n";
    }
    std::string svg_title() const override {
        return "GPT-2 decoder attention weights (rows: queries, columns: keys; causal)";
    }
    nlohmann::json dump_config(const std::string& text) const override {
        return {{"model", name()}, {"architecture", "gpt2"}, {"text", text}, {"tokens", tokens_}, {"ids", ids_},
                {"layers", layers()}, {"heads", heads()},
                {"layout", "attention is [layers, B, H, T, T]: row i of a head = query token i (causal)"}};
    }
    AttentionPage page(const HeadsPass& p, const std::string& text) const override;

    void entropy_intro(const TextOut& text, uint64_t seed) const override {
        text.print("\nThe causal mask lets query i see only the i + 1 tokens up to itself, so row i's entropy is at "
                   "most\nln(i + 1) nats: a later row can spread further. Each row's entropy is divided by its own "
                   "ln(i + 1)\n(row 0, one token and no choice, is left out), then averaged over the rows: x100 "
                   "below,\n100 = uniform over the tokens a row may see, 0 = all on one token.\n\n");
        text.print("random: a GPT-2 of the same config as transformers initialises it (N(0, 0.02^2) weights, seed "
                   "{})\n\n",
                   seed);
        const int w = static_cast<int>(4 * heads() + 6);
        text.print("{:<6}|{:<{}}|{:<{}}|\n", "", " trained", w, " random", w);
    }
    void entropy_rows(const TextOut& text, const HeadsPass& trained) const override;
    const char* entropy_closing() const override {
        return "\nA random decoder's heads spread near-uniformly over what the mask lets them see; trained heads are\n"
               "sharper where they have learned to look (the previous token, the first token, a matching one).\n";
    }
    void add_entropy_json(nlohmann::ordered_json& j, const HeadsPass& trained) const override {
        j["entropy"] = "mean over the rows i >= 1 of entropy(row i) / ln(i + 1), per [layer][head]: the causal mask "
                       "lets row i see i + 1 tokens; 1 uniform over them, 0 one-hot";
        j["row_entropy_nats"] = row_nats(trained);
        std::vector<double> bound;
        for (int64_t i = 0; i < size(); ++i) bound.push_back(std::log(static_cast<double>(i + 1)));
        j["row_bound_nats"] = bound;
    }
    void add_source(nlohmann::ordered_json& j) const override { j["model"] = name(); }
    void write_entropy_json(const JsonOut& out, const nlohmann::ordered_json& j) const override {
        write_json(out, j, "attn-model-entropy", 1);
    }

    std::string probe_weight_line(const std::string& first) const override {
        return fmt::format("\nweight = attention from the query to the candidate's tokens (a decoder: each query sees "
                           "only the tokens up to itself);\nheads ranked by the weight on '{}'\n\n",
                           first);
    }
    void add_probe_note(nlohmann::ordered_json& j) const override {
        j["causal"] = "a query attends only to the tokens up to itself: a candidate after it gets 0";
    }

private:
    // the trained model's rows, mean over every head, in nats (their bound is ln(i + 1))
    std::vector<double> row_nats(const HeadsPass& trained) const {
        const int64_t T = size(), H = heads();
        std::vector<double> nats(static_cast<size_t>(T), 0.0);
        for (const Tensor& w : trained.attentions)
            for (int64_t h = 0; h < H; ++h)
                for (int64_t i = 0; i < T; ++i) {
                    const RowStats r = row_stats(w.ptr() + (h * T + i) * T, T, i + 1);
                    nats[static_cast<size_t>(i)] += r.entropy_nats / static_cast<double>(layers() * H);
                }
        return nats;
    }
    LoadedDecoder l_;
};

// --html on a decoder: every layer's weights, the values' norms (hook_v) for the norm-based view,
// and each head's note in the decoder's words (first token, previous, itself).
AttentionPage DecoderText::page(const HeadsPass& p, const std::string& text) const {
    const int64_t L = layers(), H = heads(), T = size();
    AttentionPage page = page_from_model(p.attentions, p.values, tokens_, p.mask);
    for (int64_t l = 0; l < L && T >= 2; ++l)
        for (int64_t h = 0; h < H; ++h) {
            std::string& note = page.head_notes[static_cast<size_t>(l * H + h)];
            const size_t like = note.find("; like head");  // the near-duplicate heads stay; [CLS] and [SEP] go
            const HeadShares sh = head_shares(p.attentions[static_cast<size_t>(l)], h);
            note = fmt::format("first {:.0f}% prev {:.0f}% self {:.0f}%", 100 * sh.first, 100 * sh.prev,
                               100 * sh.self) +
                   (like == std::string::npos ? std::string() : note.substr(like));
        }
    page.title = fmt::format("GPT-2 decoder attention weights (causal): {} layers x {} heads", L, H);
    page.subtitle = text;
    page.source = name();
    return page;
}

void DecoderText::entropy_rows(const TextOut& text, const HeadsPass& trained) const {
    const int64_t T = size();
    const std::vector<double> nats = row_nats(trained);
    text.print("\nthe trained model's rows, mean over all {} heads: entropy in nats against the bound ln(i + 1)\n",
               layers() * heads());
    text.print("{:>6} {:>9} {:>9} {:>7}\n", "query", "entropy", "ln(i+1)", "ratio");
    const int64_t shown_rows = std::min<int64_t>(T, 12);
    for (int64_t k = 0; k < shown_rows; ++k) {
        const int64_t i = shown_rows == T ? k : k * (T - 1) / (shown_rows - 1);  // spread over the text when long
        const double b = std::log(static_cast<double>(i + 1));
        text.print("{:>6} {:>9.3f} {:>9.3f} {:>7}\n", i, nats[static_cast<size_t>(i)], b,
                   i == 0 ? std::string("-") : fmt::format("{:.2f}", nats[static_cast<size_t>(i)] / b));
    }
}

}  // namespace

std::unique_ptr<ModelText> open_model_text(const std::string& model, const std::string& text, bool truncate) {
    // config.json read once: its model_type picks the model, and a decoder's config is kept
    if (!model.empty()) {
        const FolderConfig folder = with_option("--model", [&] { return read_folder_config(model); });
        if (folder.gpt2) return std::make_unique<DecoderText>(model, text, *folder.gpt2);
    }
    return std::make_unique<EncoderText>(model, text, truncate);
}

}  // namespace attn::cli
