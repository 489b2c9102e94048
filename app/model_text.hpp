// app/model_text.hpp: a pretrained model with one text, as the shared verbs of `attn model`
// (attention, entropy, probe: app/cmd_model_attention.cpp) read it. The BERT encoder and a GPT-2-family
// decoder each implement ModelText, so what differs between them (how tokens are shown, the mask,
// where a head's weight goes, the words of the report) lives in the model and each verb is written
// once. The decoder's loader (LoadedDecoder) is shared with its own verbs (app/cmd_model_generate.cpp,
// app/cmd_model_circuits.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/core/mask.hpp"
#include "attn/core/tensor.hpp"
#include "attn/model/gpt2.hpp"
#include "attn/model/heads.hpp"
#include "attn/viz/html.hpp"
#include "options.hpp"

namespace attn::cli {

constexpr const char* kModelDirHelp =
    "model folder (default: $ATTN_MODEL_DIR, else where `attn model fetch` puts all-MiniLM-L6-v2: "
    "~/.local/share/attn/models, or data/models in a checkout)";

// A GPT-2-family folder, model and prompt, each checked (the folder and prompt before the weights).
struct DecoderLoad {
    std::string model, text;
    bool bos = false;    // <|endoftext|> first (--bos)
    bool probe = false;  // a probe of its own: no --text, <|endoftext|> first when the vocabulary has it
    const char* shipped = kMacbethDecoder;  // the shipped decoder read without --model
    std::optional<Gpt2Config> config;       // config.json already read (read_folder_config), else read here
};
struct LoadedDecoder {
    Gpt2Files files;
    Gpt2Model model;
    BpeTokenizer tok;
    std::vector<int32_t> ids;
    std::vector<std::string> tokens() const;  // each id's text
    // "DIR (GPT-2: L layers x H heads, d_model D, vocabulary V, N positions)"
    std::string describe() const;
};
LoadedDecoder load_decoder(const DecoderLoad& o);
// A token as a quoted, escaped string: "\n" and control characters visible, one line.
std::string quoted(const std::string& s);
// The tokens quoted and joined by spaces: "I" "s" " ".
std::string quoted_tokens(const std::vector<std::string>& tokens);
// True when `dir` holds a config.json with model_type "gpt2" (the shared verbs then run the decoder).
bool is_decoder_folder(const std::string& dir);

// Where one head of a causal layer puts its weight: on the first token (a common "sink"), the
// previous token and the query itself, each the mean over the queries i >= 1 (query 0 sees only
// itself). weights (1, H, T, T), T >= 2.
struct HeadShares {
    double first = 0, prev = 0, self = 0;
};
HeadShares head_shares(const Tensor& w, int64_t h);

// One forward pass as the shared verbs read it: per layer the (1, H, T, T) weights, with `values`
// per layer (1, H, T, Dk) when asked (the page's norm-based view), and the mask the model ran.
struct HeadsPass {
    std::vector<Tensor> attentions, values;
    Mask mask;
};

class ModelText {
public:
    virtual ~ModelText() = default;
    virtual std::string name() const = 0;          // "model" in JSON, the page's source
    virtual const char* architecture() const = 0;  // "bert" or "gpt2"
    virtual bool causal() const = 0;
    virtual int64_t layers() const = 0;
    virtual int64_t heads() const = 0;
    const std::vector<std::string>& tokens() const { return tokens_; }
    const std::vector<int32_t>& ids() const { return ids_; }
    int64_t size() const { return static_cast<int64_t>(ids_.size()); }

    // The report's first lines: "attn model VERB: ..." and the tokens.
    virtual std::string header(std::string_view verb) const = 0;
    // Memory of `attention` before the weights load (app/memory.hpp; the decoder checks none).
    virtual void check_attention_memory(bool dump, bool svg) const = 0;
    // The forward pass of the trained weights (loaded on first use) and of random ones (N(0, 0.02^2)).
    virtual HeadsPass run(bool values) const = 0;
    virtual HeadsPass run_random(uint64_t seed) const = 0;
    // The token positions of the n-th occurrence of `word` in the text (errors name `opt`).
    virtual std::vector<int64_t> find(std::string_view opt, const std::string& word, int n) const = 0;

    // `attention`: where each layer's (or head's) weight goes, as a table and as a JSON field;
    // the words under the heatmaps, the SVG's title, the dump's config and the page.
    virtual void print_where_weight_goes(const TextOut& text, const HeadsPass& p) const = 0;
    virtual void add_where_weight_goes(nlohmann::json& j, const HeadsPass& p) const = 0;
    virtual const char* heatmap_caption() const = 0;
    virtual std::string svg_title() const = 0;
    virtual nlohmann::json dump_config(const std::string& text) const = 0;
    virtual AttentionPage page(const HeadsPass& p, const std::string& text) const = 0;

    // `entropy`: the text above the table (what the figures mean and the two models' columns), what
    // follows the table (the decoder's rows against their bound), the closing words, the JSON.
    virtual void entropy_intro(const TextOut& text, uint64_t seed) const = 0;
    virtual void entropy_rows(const TextOut& text, const HeadsPass& trained) const = 0;
    virtual const char* entropy_closing() const = 0;
    virtual void add_entropy_json(nlohmann::ordered_json& j, const HeadsPass& trained) const = 0;
    // The decoder's documents name their folder (any GPT-2 folder); the encoder's entropy and probe
    // documents name none (as first written).
    virtual void add_source(nlohmann::ordered_json& j) const = 0;
    // Writes the document: the encoder's entropy keeps its keys sorted (as first written).
    virtual void write_entropy_json(const JsonOut& out, const nlohmann::ordered_json& j) const = 0;

    // `probe`: the line under the candidates, and the decoder's note on the causal mask.
    virtual std::string probe_weight_line(const std::string& first) const = 0;
    virtual void add_probe_note(nlohmann::ordered_json& j) const = 0;

protected:
    std::vector<std::string> tokens_;
    std::vector<int32_t> ids_;
};

// The model of --model (default: the encoder) with --text read by its tokenizer; nothing heavy is
// loaded yet. `truncate`: the encoder cuts a text past its maximum (with a note) instead of refusing.
std::unique_ptr<ModelText> open_model_text(const std::string& model, const std::string& text, bool truncate);

}  // namespace attn::cli
