// app/html_page.hpp: the --html FILE option that `view`, `forward` and `model
// attention` share: an interactive, self-contained page of their attention
// weights (attn/viz/html.hpp), written whole or not at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attn/core/mask.hpp"
#include "attn/core/tensor.hpp"
#include "attn/io/dump.hpp"
#include "attn/viz/html.hpp"
#include "options.hpp"

namespace attn::cli {

struct HtmlOpts {
    std::string file;         // --html FILE ("" = no page)
    std::string lang = "en";  // --lang en | zh: the page's UI language
};

// Binds --html FILE and --lang on `sub`.
void add_html_options(CLI::App& sub, HtmlOpts& o);

// The page of an attn-dump: "weights" [B, H, Tq, Tk] (attn forward --dump) or
// "attention" [L, B, H, T, T] (attn model attention --dump), batch row `batch`;
// its tokens (config "tokens"), its mask ("mask" [B|1, Tq, Tk] or [B|1, H, Tq, Tk]),
// its masked scores ("scores_masked"), the norms of "V" [B, H_kv, Tk, Dv] for
// the norm-based view, and the shape of every tensor. Throws InputError naming
// `source` when the dump holds no weights of those shapes.
AttentionPage page_from_dump(const Dump& d, const std::string& source, int64_t batch);

// The same page with every batch row of "weights" [B, H, Tq, Tk] (a selector on the page picks
// one), when the rows share their tokens; otherwise, or with "attention", row 0's page.
AttentionPage page_from_dump_rows(const Dump& d, const std::string& source);

// The page of a model's forward pass, batch row 0: one (B, H, T, T) weight tensor
// per layer, optionally the per-head values (B, H, T, Dk) per layer (norm view);
// each head's note comes from the head analysis (sinks, near-duplicate heads).
AttentionPage page_from_model(const std::vector<Tensor>& attentions, const std::vector<Tensor>& values,
                              const std::vector<std::string>& tokens, const Mask& mask);

// Throws InputError unless o.file is empty or a file that can be written ("-" is refused).
void check_html(const HtmlOpts& o);

// Writes the page to o.file (require_writable first, then write_file_atomic)
// and prints "wrote FILE (...)" through `text` unless `quiet`.
void write_html_page(const HtmlOpts& o, AttentionPage page, const TextOut& text, bool quiet = false);

}  // namespace attn::cli
